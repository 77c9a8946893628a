/*
 * csrc/p2p/: point-to-point messages in C (the C side of shmrma/p2p/).
 *
 *   transport.c      the Transport object: this process's point-to-point
 *                    engine, its entry points, and the layout and codes it
 *                    shares with Python (p2p/transport.py)
 *   rings.c          the rings: records from one rank to another, the sends
 *                    queued for room, the staging rings of large payloads,
 *                    direct reads of the sender's memory; both ends
 *                    (p2p/transport.py)
 *   matching.c       MPI matching: the posted receives and the unexpected
 *                    messages; Core, a receive (p2p/transport.py)
 *   communicator.c   CommCore, what the fast paths need of a communicator
 *                    (p2p/communicator.py)
 *   calls.c          the fast paths of the point-to-point calls, Send, Recv
 *                    and their kin (comm/comm.py's, through p2p/transport.py)
 *   request.c        what the requests completed in C share with
 *                    MPI.Request: the Wait/Test helpers (p2p/request.py)
 *
 * This header declares what they share with each other (the Transport, its
 * messages and receives, the layout and codes transport_setup() receives, the
 * calls between the rings and matching) and with the layers above (the
 * requests' helpers, the core of communicators).  The helpers of the hot paths
 * are static inline here, so each file inlines them as when the transport was
 * one file.
 */
#ifndef SHMRMA_P2P_H
#define SHMRMA_P2P_H

#include "../types/types.h"

/* --- requests (request.c) ------------------------------------------------------- */

/* A request's Wait or Test in C takes no status: does the call pass none? */
int no_status(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
/* method(self, *args, **kwnames): the Python path of a request's Wait or Test
 * (at most the status argument). */
PyObject *request_python_path(PyObject *method, PyObject *self, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);

/* --- the transport (transport.c, rings.c, matching.c) --------------------------- */

/* The layout and codes shared with Python, set once by transport_setup()
 * (transport.c) from their one Python definition (core/job.py,
 * p2p/transport.py, core/constants.py). */
extern HIDDEN Py_ssize_t CHANNEL_HEADER, OFF_HEAD, OFF_TAIL, OFF_BLOCKED;
extern HIDDEN int32_t FLAG_PICKLED, FLAG_IN_SEGMENT, FLAG_SYNC, SYNC_SHIFT, PAD_FLAG;
extern HIDDEN int32_t FLAG_STAGED, FLAG_STAGING, FLAG_DIRECT;
extern HIDDEN Py_ssize_t STAGING_HEADER;
extern HIDDEN int32_t SUBCONTEXTS, SYNC_ACK, ANY_SOURCE, ANY_TAG, ERR_TRUNCATE;
extern HIDDEN int32_t P2P, TAG_UB;
extern HIDDEN double P2P_WAIT_SLICE;    /* how long a fast path waits before Python's checks */
extern HIDDEN PyObject *g_p2p_miss;     /* what p2p_sendobj and p2p_recvobj answer when they miss */
extern HIDDEN PyTypeObject *g_status_type;  /* types/status.py's Status: those fill_status fills */

/* A record's header in a ring. */
typedef struct {
    uint32_t length;            /* bytes of the record, header and padding included */
    int32_t flags;
    int32_t context;
    int32_t tag;
    uint64_t nbytes;            /* bytes of the message */
} Record;

/* A message held here: arrived and unexpected, or a send queued for room. */
typedef struct Msg {
    struct Msg *next;
    int32_t peer;               /* the source of an arrived message, the destination of a send */
    int32_t flags, context, tag;
    int64_t nbytes;
    Py_ssize_t len;             /* bytes in data: the payload, or a segment's name */
    int staged;                 /* a send whose payload waits for room in the staging ring */
    int64_t pushed;             /* the bytes of it in the staging ring so far */
    int direct;                 /* a send the receiver reads from this process: 1 its
                                 * record waits for room, 2 it waits for the reader */
    uint64_t read_at;           /* the staging head that says the receiver read it */
    Py_buffer view;             /* that payload when it is held rather than copied */
    int held;
    char data[];
} Msg;

/* A staged message whose chunks are still arriving, and where they go. */
typedef struct {
    struct Core *core;          /* the posted receive it matched (a reference), or */
    Msg *msg;                   /* the unexpected message it will be */
    char *into;                 /* where its bytes go (NULL: dropped, truncated) */
    int64_t received;
} Partial;

/* A pair's staging ring, which the sender creates at its first large message to
 * the receiver: a header (the receiver's head) and `size` bytes. */
typedef struct {
    char *base;                 /* NULL: none yet */
    uint64_t size;
    uint64_t tail;              /* the sender's: bytes produced */
    uint64_t head;              /* the sender's: the receiver's head as last read */
} Staging;

/* Messages in arrival or sending order. */
typedef struct {
    Msg *head, *tail;
} Queue;

/* A receive (p2p/transport.py's Core is its Python twin). */
typedef struct Core {
    PyObject_HEAD
    struct Core *prev, *next;   /* the posted list */
    int posted;
    int32_t context, want_source, want_tag;
    PyObject *target;           /* the buffer, or None for an object receive */
    Operand into;               /* its bytes, the message's (types.h) */
    int has_view;
    int done;
    int32_t source, tag, flags, error;
    int64_t count;
    PyObject *payload;          /* an object receive's bytes */
} Core;

/* An unexpected message handed to Python (p2p/transport.py's Arrived is its
 * Python twin). */
typedef struct {
    PyObject_HEAD
    Msg *msg;                   /* owned; NULL once delivered */
} Arrived;

/* This process's point-to-point transport: its ends of the rings and its
 * matching state. */
typedef struct {
    PyObject_HEAD
    char *base;                 /* the world segment */
    int me, n;
    Py_ssize_t channels, channel_bytes, ring_bytes, inline_max;
    Py_ssize_t ranks, rank_block, doorbell_offset;
    const int64_t *taken;       /* the world's count of process slots taken: only
                                 * those can have sent (core/job.py OFF_NEXT_RANK) */
    int32_t *doorbell;
    uint32_t seen_bell;
    int seen_valid;
    Queue *unexpected;          /* per source */
    Queue *queues;              /* per destination */
    uint64_t *tickets, *pushed; /* per destination */
    uint32_t *heads;            /* per destination: its head as last read (it only grows) */
    Py_ssize_t queued;
    Core *posted_head, *posted_tail;
    PyObject *stage, *fetch, *discard;
    Staging *staging_out;       /* per destination */
    Staging *staging_in;        /* per source */
    Partial *partial;           /* per source */
    uint64_t staging_bytes;     /* the capacity of a staging ring */
    uint64_t chunk_bytes;       /* the most a chunk of a staged message holds */
    Py_ssize_t direct_min;      /* the smallest held send a receiver reads directly */
    int read_peers;             /* this rank may read its senders' memory (SHMRMA_VM_READV) */
    PyObject *new_staging, *attach_staging;
    uint64_t events, events_rung;   /* receives completed, queued sends pushed; rung */
} Transport;

extern HIDDEN PyTypeObject CoreType;

/* The transport of this process: the last one made (one per rank). */
extern HIDDEN Transport *g_current;

/* An entry point's hold of the MPI lock: transport_unlock() rings this rank's
 * doorbell when the call completed something since the last ring, so that
 * another thread waiting on the doorbell for it looks again. */
static inline void
transport_lock(void)
{
    mpi_lock();
}

static inline void
transport_unlock(Transport *t)
{
    if (t->events != t->events_rung) {
        t->events_rung = t->events;
        wake_threads(t->doorbell);
    }
    mpi_unlock();
}

static inline int32_t *
doorbell_of(Transport *t, int rank)
{
    return (int32_t *)(t->base + t->ranks + rank * t->rank_block + t->doorbell_offset);
}

static inline Msg *
new_msg(int32_t peer, int32_t flags, int32_t context, int32_t tag, int64_t nbytes,
        const char *data, Py_ssize_t len)
{
    Msg *m = PyMem_Malloc(sizeof(Msg) + (size_t)len);
    if (m == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    m->next = NULL;
    m->peer = peer;
    m->flags = flags;
    m->context = context;
    m->tag = tag;
    m->nbytes = nbytes;
    m->len = len;
    m->staged = m->held = m->direct = 0;
    m->pushed = 0;
    m->read_at = 0;
    memcpy(m->data, data, (size_t)len);
    return m;
}

static inline void
free_msg(Msg *m)
{
    if (m->held)
        PyBuffer_Release(&m->view);
    PyMem_Free(m);
}

/* A large copy lets the GIL go. */
static inline void
copy_large(char *into, const char *from, size_t n)
{
    if (n >= 64 * 1024) {
        Py_BEGIN_ALLOW_THREADS
        memcpy(into, from, n);
        Py_END_ALLOW_THREADS
    }
    else
        memcpy(into, from, n);
}

static inline void
append(Queue *q, Msg *m)
{
    m->next = NULL;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
}

static inline Msg *
pop(Queue *q)
{
    Msg *m = q->head;
    if (m) {
        q->head = m->next;
        if (q->head == NULL)
            q->tail = NULL;
    }
    return m;
}

/* Take c off the posted receives, or (post) append it there. */
static inline void
unpost(Transport *t, Core *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        t->posted_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        t->posted_tail = c->prev;
    c->prev = c->next = NULL;
    c->posted = 0;
}

static inline void
post(Transport *t, Core *c)
{
    Py_INCREF(c);
    c->prev = t->posted_tail;
    c->next = NULL;
    if (t->posted_tail)
        t->posted_tail->next = c;
    else
        t->posted_head = c;
    t->posted_tail = c;
    c->posted = 1;
}

/* The rings (rings.c).  The callers hold the MPI lock. */

/* Write one record into dest's ring; 0 when there is no room. */
HIDDEN int push(Transport *t, int dest, int32_t flags, int32_t context, int32_t tag,
                int64_t nbytes, const char *data, Py_ssize_t len);
/* A record to dest, in the ring or queued behind earlier ones: 0 when it went
 * into the ring, else its ticket; -1 with an exception on failure. */
HIDDEN int64_t send_record(Transport *t, int dest, int32_t flags, int32_t context,
                           int32_t tag, int64_t nbytes, const char *data, Py_ssize_t len);
/* Push dest's queued sends while there is room. */
HIDDEN void flush_queue(Transport *t, int dest);
/* Make dest's staging ring and announce it: 0, 1 when /dev/shm has no room for
 * it, -1 with an exception. */
HIDDEN int open_staging(Transport *t, int dest);
/* A large payload to dest through the staging ring: 0 when it went in, else
 * its ticket (the payload held when `hold`, else copied); -1 on failure. */
HIDDEN int64_t send_staged(Transport *t, int dest, int32_t flags, int32_t context,
                           int32_t tag, PyObject *data, Py_buffer *view, int hold);
/* Take every record source has put into this rank's ring. */
HIDDEN int drain(Transport *t, int source);
/* Drain the rings when the doorbell rang since last time, push queued sends;
 * the doorbell value read first into *bell_out (wait on it for anything newer). */
HIDDEN int progress(Transport *t, int32_t *bell_out);

/* Matching (matching.c).  The callers hold the MPI lock. */

/* Complete c with a message whose payload (or segment name) is data[:len],
 * acknowledging a synchronous send.  -1 with an exception on failure. */
HIDDEN int complete(Transport *t, Core *c, int32_t source, int32_t flags, int32_t context,
                    int32_t tag, int64_t nbytes, const char *data, Py_ssize_t len);
/* A record that arrived from source: to the first posted receive it matches,
 * else to the unexpected messages. */
HIDDEN int arrived(Transport *t, int32_t source, int32_t flags, int32_t context, int32_t tag,
                   int64_t nbytes, const char *data, Py_ssize_t len);
/* The first chunk of a staged message: to the first posted receive it
 * matches, else to an unexpected message made to hold it all. */
HIDDEN int start_staged(Transport *t, int source, Record *r, Partial *p);
/* `length` more bytes of source's partial message are in. */
HIDDEN int received_part(Transport *t, int source, int64_t length, int64_t nbytes);
/* The first unexpected message matching, per source in arrival order; with
 * remove, taken out of its queue. */
HIDDEN Msg *find(Transport *t, int32_t context, int32_t source, int32_t tag, int remove);
/* A receive of (context, source, tag) into target (None: an object receive). */
HIDDEN Core *new_core(int32_t context, int32_t source, int32_t tag, PyObject *target);
/* The same with the target's bytes message_get found, which the core takes over. */
HIDDEN Core *new_core_into(int32_t context, int32_t source, int32_t tag, PyObject *target,
                           Operand *into);

/* Channel src -> dst, in core/job.py's channel_index order (by shells: the
 * first k slots' channels first), which a test holds the two to. */
static inline char *
channel(Transport *t, int src, int dst)
{
    Py_ssize_t shell = src > dst ? src : dst;
    Py_ssize_t index = shell * shell + (src == shell ? dst : shell + 1 + src);
    return t->base + t->channels + index * t->channel_bytes;
}

/* --- communicators (communicator.c) --------------------------------------------- */

/* A collective area as this rank maps it (coll/area.py); base NULL: not yet. */
typedef struct {
    char *base;
    Py_ssize_t slot;            /* data bytes of each slot */
    uint32_t seq;               /* steps taken on it so far (mod 2**32) */
    uint32_t target;            /* the area's counter once every arrival of step seq is in */
    uint32_t clear;             /* every member finished reading the steps up to this one */
} AreaCore;

/* What the fast paths need of a communicator: its context, members and
 * collective areas.  p2p/communicator.py's CommState derives from it. */
typedef struct {
    PyObject_HEAD
    int32_t context;            /* the communicator's context (sub-contexts derive) */
    int32_t size, world_size;
    int32_t world_rank;         /* this process's */
    int32_t *ranks;             /* world rank of each member; NULL until bound */
    int32_t *to_rank;           /* member rank of each world rank, or -1 */
    int freed;
    AreaCore areas[2];          /* the small and the large collective area */
} CommCore;

extern PyTypeObject CommCoreType;

/* --- this folder's parts of the module ---------------------------------------- */

/* Ready `type` and add it to the module as `name` (transport.c). */
HIDDEN int add_type(PyObject *module, PyTypeObject *type, const char *name);

int communicator_init(PyObject *module);
int matching_init(PyObject *module);
int transport_init(PyObject *module);
int p2p_calls_init(PyObject *module);

#endif
