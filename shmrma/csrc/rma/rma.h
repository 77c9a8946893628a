/*
 * csrc/rma/: one-sided communication in C (the C side of shmrma/rma/).
 *
 *   fastpath.c     the window table (WinTable: what the fast paths know of one
 *                  window at this rank) and the synchronization objects its
 *                  targets point at (rma/fastpath.py's Table)
 *   calls.c        the communication calls and flushes: Put, Get, Accumulate,
 *                  Get_accumulate, Fetch_and_op, Compare_and_swap, Flush
 *                  (rma/calls.py)
 *   passive.c      Lock, Unlock, Lock_all, Unlock_all (rma/passive.py)
 *   active.c       Start, Complete, Post, Wait, Test (rma/active.py)
 *   winbarrier.c   the window barrier: Fence, Barrier, Ibarrier and its
 *                  request (rma/winbarrier.py)
 *   counters.c     the requests of the synchronization counters: Sync_ops and
 *                  Sync_object (rma/counters.py)
 *
 * Each takes the common case of its calls under the fast path's contract
 * (rma/fastpath.py): it does the call, or touches nothing and answers False
 * (a miss), and the Python path does the call or raises its error.  This
 * header declares what they share: the window table and its targets, the
 * words of the control blocks, and the table's calls.
 */
#ifndef SHMRMA_RMA_H
#define SHMRMA_RMA_H

#include "../coll/coll.h"

/* --- the window table (fastpath.c) ---------------------------------------------- */

/* The kinds of RMA call, as the proposal's MODE_WIN_PUT/GET/ACCUMULATE bits. */
enum { KIND_PUT = 1, KIND_GET = 2, KIND_ACCUMULATE = 4 };

/* What a Lock epoch to a target holds (FastTarget.locked). */
enum { HELD_NONE, HELD_NOCHECK, HELD_SHARED, HELD_EXCLUSIVE };

typedef struct {
    char *base;                 /* NULL: not mapped here, every call misses */
    Py_ssize_t size;
    Py_ssize_t unit;            /* disp_unit */
    int32_t *acc_lock;          /* wait cell: 0 free, 1 held */
    int locked;                 /* HELD_*: the Lock epoch open to this rank */
    int started;                /* the open Start epoch's group holds this rank */
    char *control;              /* the rank's control block; NULL: not set */
    int32_t *doorbell;          /* the rank's doorbell (core/job.py); NULL: not set */
    uint32_t posts_used;        /* Posts of this rank that our Starts matched */
    int counter_kinds;          /* KIND_* an active Sync_ops request to the rank covers */
    int counter_modes[3];       /* active Sync_ops requests to the rank, per KIND_* bit */
} FastTarget;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    FastTarget *targets;
    int open;                   /* 0 once the window is freed */
    int fence_open;
    int rma_since_fence;
    int lock_all;
    int nlocked;
    int start_open;             /* a Start epoch is open, maybe with an empty group */
    Py_ssize_t me;              /* this rank in the window; -1: sync not set up */
    char *posts;                /* the post matrix: n x n wait cells, origin-major */
    int32_t *holds;             /* this rank's row of the hold matrix (rma/control.py) */
    uint32_t completes_due;     /* Completes our Posts so far await (mod 2**32) */
    PyObject *post_group;       /* the open Post's origins (a tuple), or None */
    PyObject *groups;           /* group handle -> window ranks (rma/window.py's window_ranks) */
    int ncounter;               /* targets with an active Sync_ops request (counter epochs) */
    int sync_active;            /* started, uncompleted synchronization requests */
    uint32_t barrier_seq;       /* window barriers (Ibarrier) this rank entered */
    int barrier_pending;        /* some member may not have entered barrier_seq yet */
} WinTable;

extern PyTypeObject WinTableType;

/* The lock types and the assertions of the synchronization calls: their values
 * are rma/passive.py's and rma/assertions.py's, which rma_sync_constants() hands
 * over when rma/fastpath.py sets the fast path up (defined once, in Python).
 * Until then every value is 0, which no call's lock type or assertion passes:
 * each call takes the Python path. */
extern HIDDEN long g_lock_exclusive, g_lock_shared;
extern HIDDEN long g_mode_nocheck, g_mode_noprecede, g_mode_nosucceed;
extern HIDDEN long g_all_modes;         /* every MODE_* bit: others are ERR_ASSERT */

/* --- the synchronization objects (rma/control.py; fastpath.c) ------------------- */

/* Lock, Unlock, Lock_all, Unlock_all (rma/passive.c), Fence (rma/winbarrier.c),
 * Start, Complete, Post, Wait and Test (rma/active.c) run in C in their common
 * case: the arguments plain ints, no assertion beyond what the call takes here,
 * the epoch rules satisfied, and whatever they wait for already there or
 * arriving within a short spin.  They use the words rma/control.py lays out and
 * the same ticket lock, barrier and counts as the Python paths (rma/passive.py,
 * rma/active.py), so the two mix freely.  A miss (False) changes nothing; the
 * Python path then does the call, waiting with the job's abort and dead-peer
 * checks, or raises its error.  Lock and Lock_all may instead return the
 * ticket they drew when it is not admitted yet, and Fence the barrier
 * generation it arrived at: the Python path then waits for that and finishes
 * the call. */

#define WORD(control, off) ((int32_t *)((control) + (off)))

/* The offsets of the words of a rank's control block, given by rma_sync_setup():
 * the lock's ticket, read and write counts, the Completes its Posts received,
 * whether it is exposed (a Post epoch is open) and the window barriers it entered. */
extern Py_ssize_t g_off_entered;
/* Hidden: the synchronization calls read these as one PC-relative load each, as
 * they would if the offsets were static in their file (not through the GOT). */
extern HIDDEN Py_ssize_t g_off_ticket, g_off_read, g_off_write, g_off_completes,
    g_off_exposed;

/* --- the window table's calls (fastpath.c, winbarrier.c) ------------------------ */

/* The table when sync calls may run on it here, else NULL. */
WinTable *sync_table(PyObject *table);
/* Open (delta 1) or close (-1) a counter epoch of `mode` (KIND_* bits) to rank. */
void counter_epoch_change(WinTable *t, Py_ssize_t rank, int mode, int delta);
/* Has rank entered the window barrier this rank entered last?  RMA issued
 * after an Ibarrier and before its completion reaches a target only once the
 * target entered that barrier too (until then the Python path waits).
 * (winbarrier.c) */
int barrier_entered(WinTable *t, Py_ssize_t rank);

/* May a new access epoch open?  A rank's access epochs on one window must not
 * overlap (MPI-3.1 §11.5): none opens while Lock_all or a Start epoch is open,
 * nor in a fence epoch that issued RMA since its Fence. */
static inline int
access_may_open(WinTable *t)
{
    return !t->lock_all && !t->start_open && !(t->fence_open && t->rma_since_fence);
}

/* --- the fast paths (calls.c) --------------------------------------------------- */

extern long g_proc_null;                /* PROC_NULL's value (rma_setup) */

/* A fast path's answers: the call is done, or missed (nothing touched: the
 * Python path runs). */
#define MISS Py_RETURN_FALSE
#define DONE Py_RETURN_TRUE

/* --- this folder's parts of the module ---------------------------------------- */

int fastpath_init(PyObject *module);
int rma_calls_init(PyObject *module);
int passive_init(PyObject *module);
int active_init(PyObject *module);
int winbarrier_init(PyObject *module);
int counters_init(PyObject *module);

/* The kinds of the counters' requests (counters.c; their _kind, which
 * observe/observed.c reads too). */
enum { SYNC_OPS = 1, SYNC_OBJECT = 2 };

#endif
