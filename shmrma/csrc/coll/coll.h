/*
 * csrc/coll/: collectives in C (the C side of shmrma/coll/).
 *
 *   area.c          the protocol of the communicator's collective areas, and
 *                   on it Bcast and the objects' collectives on pickles
 *                   (coll/area.py's protocol, for coll/blocking.py)
 *   reductions.c    Allreduce, Reduce, Scan, Exscan, Reduce_scatter_block on
 *                   the collective areas: the chunks folded in rank order,
 *                   sliced at many ranks (for coll/blocking.py)
 *   parts.c         Gather, Allgather, Scatter, Alltoall and their vector
 *                   forms on the collective areas: the parts and their
 *                   tables (for coll/blocking.py)
 *   channel.c       the communicator's channel of the nonblocking
 *                   collectives, ChannelCore, and the finishing of its steps
 *                   (coll/channel.py's protocol)
 *   nonblocking.c   the nonblocking collectives started in C on the channel:
 *                   NbcOp, its start, its reads, its Wait and Test
 *                   (coll/nonblocking.py)
 *
 * They stand on the communicators' core (p2p/p2p.h).  This header declares
 * what the files of the collective areas share (the areas' layout and their
 * steps, area.c's) and what the two of the channel share (ChannelCore and
 * NbcOp, the finishing of steps).
 */
#ifndef SHMRMA_COLL_H
#define SHMRMA_COLL_H

#include "../p2p/p2p.h"

/* --- the collective areas (area.c, reductions.c, parts.c) ----------------------- */

/* The layout, set by collectives_setup() (area.c). */
extern HIDDEN Py_ssize_t AREA_HEADER, AREA_SLOT_HEADER, READ_LINE;
extern HIDDEN int SLICED_ABOVE;         /* from more ranks on, large folds are sliced */
extern HIDDEN PyObject *g_area_in_place;    /* MPI.IN_PLACE */

/* A member's slot header, which it writes at every step it deposits. */
typedef struct {
    int32_t error;              /* the member's error class, 0 when it takes part */
    int32_t ready;              /* the step whose header and data these are (written last) */
    int64_t length;             /* bytes it brings */
    int64_t unit;               /* its element size (reductions) */
} SlotHeader;

/* A communicator's two areas: `which` in the calls below. */
enum { SMALL, LARGE };

/* A member's block of the area: its read line, then its two slots. */
static inline char *
block_at(CommCore *c, int which, int rank)
{
    AreaCore *a = &c->areas[which];
    return a->base + AREA_HEADER + rank * (READ_LINE + 2 * (AREA_SLOT_HEADER + a->slot));
}

static inline SlotHeader *
slot_at(CommCore *c, int which, int rank, int parity)
{
    return (SlotHeader *)(block_at(c, which, rank) + READ_LINE +
                          parity * (AREA_SLOT_HEADER + c->areas[which].slot));
}

static inline char *
data_at(CommCore *c, int which, int rank, int parity)
{
    return (char *)slot_at(c, which, rank, parity) + AREA_SLOT_HEADER;
}

/* The communicator of a fast collective: its small area mapped here; NULL: a
 * miss. */
HIDDEN CommCore *coll_comm(PyObject *state);
/* Map the large area (collectively) if it is not yet: 0, or -1 with an exception. */
HIDDEN int large_mapped(CommCore *c, PyObject *state);
/* The first half of a step that deposits: the slot's data to write the chunk
 * into, once free, or NULL with an exception set. */
HIDDEN char *begin_step(CommCore *c, PyObject *state, int which);
/* The second half: the header, the arrival and (`from` < 0) the wait for every
 * member's.  The parity of the slots the step used, or -1 with an exception. */
HIDDEN int end_step(CommCore *c, PyObject *state, int which, int64_t length, int64_t unit,
                    int from);
/* One step whose chunk is chunk[:len]; with `from` >= 0, a broadcast's from
 * that member.  The parity, or -1 with an exception set. */
HIDDEN int step(CommCore *c, PyObject *state, int which, int64_t length, int64_t unit,
                const char *chunk, Py_ssize_t len, int from);
/* Does every member's first step agree with this one's (no error, the same
 * length and unit)? */
HIDDEN int agreed(CommCore *c, int parity, int64_t length, int64_t unit);
/* Did every member (only `root`, when >= 0) take part in the first step (no
 * error), each bringing at most a small slot? */
HIDDEN int all_small(CommCore *c, int parity, int root);
/* (parity, lengths, units) of the first step: Python goes on from there. */
HIDDEN PyObject *hand_over(CommCore *c, int parity);

/* --- the channel of the nonblocking collectives (channel.c, nonblocking.c) ------ */

/* What channel.c reads of the area's layout and of the Python helpers;
 * nbc_setup() sets them with the rest (nonblocking.c). */
extern HIDDEN Py_ssize_t LINE, OFF_GATED;
extern HIDDEN PyObject *g_active;       /* nbcarea._active */

/* A communicator's channel as C sees it (nbcarea.Channel derives from it). */
typedef struct {
    PyObject_HEAD
    char *base;                     /* the channel area; NULL until bound */
    int32_t n, me;
    int32_t **doorbells;            /* each member's */
    long long started, deposited, finished;
    int gated, freed;
    PyObject *operations;           /* a list, in step order */
} ChannelCore;

/* A nonblocking collective started in C (nonblocking._FastCollective derives
 * from it). */
typedef struct {
    PyObject_HEAD
    ChannelCore *channel;
    long long step;
    int kind, named, root, op, etype;   /* kind: the fixed-size kind it runs as; named: the call's */
    int deposited, read, null_;
    Pair io;                        /* held until read */
    /* the parts (gathers, scatters, alltoall), held until read: sends[r] is what
     * the send buffer holds for rank r (gathers: all of it), recvs[r] where rank
     * r's part lands in the receive buffer (scatters: all of it, from the root) */
    Span *sends, *recvs;
    int last;                       /* folds: ranks [0, last) are folded */
    Py_ssize_t low, high;           /* folds: the bytes of each vector folded */
    PyObject *error;
} NbcOp;

extern HIDDEN PyTypeObject ChannelCoreType, NbcOpType;

/* The fewest steps a member finished, this one included (channel.c). */
HIDDEN long long slowest(ChannelCore *c);
/* Pop the done operations at the head, in step order, and publish the count
 * (channel.c).  The caller holds the MPI lock. */
HIDDEN int finish_steps(ChannelCore *c);

/* --- this folder's parts of the module ---------------------------------------- */

int area_init(PyObject *module);
int reductions_init(PyObject *module);
int parts_init(PyObject *module);
int channel_init(PyObject *module);
int nonblocking_init(PyObject *module);

#endif
