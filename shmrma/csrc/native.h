/*
 * shmrma._native: what its C files share.
 *
 * The extension is one module built from several files, one per concept, each
 * named after the Python module it serves (the layout of Open MPI's osc/sm):
 *
 *   shmrma/_native.c   the module: makes it and calls every file's init
 *   atomic.c       atomics, wait cells, the wait policy, argument parsing
 *   request.c      the Wait/Test helpers of the requests completed in C
 *   buffers.c      buffer operands and vector messages
 *   op.c           the predefined ops' element-wise kernels (RMA_OPS)
 *   handle.c       the C bases of handle classes and buffer constants
 *   table.c        the window table and the synchronization objects
 *   rma.c          the communication calls and flushes (the RMA fast path)
 *   passive.c      Lock, Unlock, Lock_all, Unlock_all
 *   active.c       Start, Complete, Post, Wait, Test
 *   winbarrier.c   the window barrier: Fence, Barrier, Ibarrier
 *   counters.c     the requests of the synchronization counters
 *   transport.c    point-to-point messages
 *   collectives.c  collectives on shared memory
 *   nbc.c          nonblocking collectives
 *   pickles.c      the pickles of objects in messages
 *
 * This header declares first the structures they share (the window table and
 * its targets, the synchronization objects of the control blocks, the core of
 * communicators), then the primitives they all use: seq_cst atomics on shared
 * words, the futex wake-up, the one wait policy, argument parsing, buffer
 * operands, the element-wise reduction kernels and the window table's calls.
 * A helper of a hot path that several files share is static inline here, so
 * the compiler inlines it in each file as it did when they were one.
 */
#ifndef SHMRMA_NATIVE_H
#define SHMRMA_NATIVE_H

#define _GNU_SOURCE 1   /* as pyconfig.h: 3.9, 3.10 define it unguarded */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SC __ATOMIC_SEQ_CST

/* --- the window table (table.c) ------------------------------------------------- */

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
    int32_t *doorbell;          /* the rank's doorbell (job.py); NULL: not set */
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
    int32_t *holds;             /* this rank's row of the hold matrix (control.py) */
    uint32_t completes_due;     /* Completes our Posts so far await (mod 2**32) */
    PyObject *post_group;       /* the open Post's origins (a tuple), or None */
    PyObject *groups;           /* group handle -> window ranks (window.window_ranks) */
    int ncounter;               /* targets with an active Sync_ops request (counter epochs) */
    int sync_active;            /* started, uncompleted synchronization requests */
    uint32_t barrier_seq;       /* window barriers (Ibarrier) this rank entered */
    int barrier_pending;        /* some member may not have entered barrier_seq yet */
} WinTable;

extern PyTypeObject WinTableType;

/* The assertions of the synchronization calls (shmrma/assertions.py). */
#define MODE_NOCHECK 1024
#define MODE_NOPRECEDE 8192
#define MODE_NOSUCCEED 16384
#define ALL_MODES (1024 | 2048 | 4096 | 8192 | 16384)

/* --- the synchronization objects (shmrma/control.py; table.c) ------------------- */

/* Lock, Unlock, Lock_all, Unlock_all (passive.c), Fence (winbarrier.c), Start,
 * Complete, Post, Wait and Test (active.c) run in C in their common case: the
 * arguments plain ints, no assertion beyond what the call takes here, the epoch
 * rules satisfied, and whatever they wait for already there or arriving within
 * a short spin.  They use the words shmrma/control.py lays out and the same
 * ticket lock, barrier and counts as the Python paths (passive.py, active.py),
 * so the two mix freely.  A miss (False) changes nothing; the Python path then
 * does the call, waiting with the job's abort and dead-peer checks, or raises
 * its error.  Lock and Lock_all may instead return the ticket they drew when it
 * is not admitted yet, and Fence the barrier generation it arrived at: the
 * Python path then waits for that and finishes the call. */

#define WORD(control, off) ((int32_t *)((control) + (off)))

/* The offsets of the words of a rank's control block, given by rma_sync_setup():
 * the lock's ticket, read and write counts, the Completes its Posts received,
 * whether it is exposed (a Post epoch is open) and the window barriers it entered. */
extern Py_ssize_t g_off_entered;
/* Hidden: the synchronization calls read these as one PC-relative load each, as
 * they did when the offsets were static in _native.c (not through the GOT). */
extern __attribute__((visibility("hidden"))) Py_ssize_t g_off_ticket, g_off_read,
    g_off_write, g_off_completes, g_off_exposed;

/* --- communicators (transport.c) ------------------------------------------------ */

/* A collective area as this rank maps it (collarea.py); base NULL: not yet. */
typedef struct {
    char *base;
    Py_ssize_t slot;            /* data bytes of each slot */
    uint32_t seq;               /* steps taken on it so far (mod 2**32) */
    uint32_t target;            /* the area's counter once every arrival of step seq is in */
    uint32_t clear;             /* every member finished reading the steps up to this one */
} AreaCore;

/* What the fast paths need of a communicator: its context, members and
 * collective areas.  comm.CommState derives from it. */
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

/* --- CPU and futex --------------------------------------------------------- */

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static inline long
futex(void *uaddr, int op, uint32_t val, const struct timespec *ts)
{
    /* FUTEX_WAIT / FUTEX_WAKE without FUTEX_PRIVATE_FLAG: the word is shared
     * between processes. */
    return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* A wait cell is 8 bytes: the int32 value, then the uint32 count of sleepers.
 * A writer that changed the value wakes them only when there are any, so a
 * waiter that is still spinning costs it no system call. */
static inline void
wake_if_sleepers(int32_t *cell)
{
    uint32_t *sleepers = (uint32_t *)(cell + 1);
    if (__atomic_load_n(sleepers, SC) != 0)
        futex(cell, FUTEX_WAKE, INT_MAX, NULL);
}

static inline void
cell_bump(int32_t *cell)
{
    __atomic_fetch_add((uint32_t *)cell, 1u, SC);
    wake_if_sleepers(cell);
}

static inline int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* --- the rank's MPI lock (atomic.c) ------------------------------------------
 * MPI-3.1 §12.4: with THREAD_MULTIPLE, calls made at once by several threads
 * behave as if made one after the other, and a blocking call blocks only its
 * own thread.  Every step on this process's MPI state that may let the GIL go
 * midway (a large copy, a read of another process's memory, a Python
 * callback) or that is a Python function of several steps holds this lock; a
 * wait never does: wait_changed, the one wait, gives it up while it waits and
 * takes it back after.  It is recursive, taken and given back with the GIL
 * held (which guards its fields), so taking it free costs a few plain loads
 * and stores; a thread that finds another holding it (a holder that let the
 * GIL go) sleeps without the GIL until it is given back. */
void mpi_lock(void);
void mpi_unlock(void);
/* Has a second thread ever taken the lock?  From then on a step that completes
 * what another thread may wait for rings this rank's doorbell (wake_threads). */
int mpi_lock_shared(void);

/* Whether the object collectives take turns on mpi4py's communicator lock
 * (collective.py's in_turn): once the process runs a second Python thread, or
 * Python said so (take_turns); sticky.  Their C paths miss then, so the Python
 * path runs them holding it. */
int taking_turns(void);

/* Wake this rank's threads waiting on its doorbell, when there may be any. */
static inline void
wake_threads(int32_t *doorbell)
{
    if (mpi_lock_shared())
        cell_bump(doorbell);
}

/* --- the wait policy (atomic.c) --------------------------------------------- */

extern long g_spin, g_yields;
#define SYNC_SPIN_NS (g_spin * 1000)   /* the wait policy's spin, in nanoseconds */

/* Wait (GIL released, signals handled) until *cell != old or timeout seconds
 * pass: spin g_spin microseconds, yield g_yields times, then sleep on the futex
 * (a wait going on, see wait_left, sleeps at once).
 * Stores the last value read in *out; -1 with an exception when a signal
 * handler raised. */
int wait_changed(int32_t *cell, int32_t old, double timeout, int32_t *out);

/* Wait on a doorbell (a wait cell every event that may complete a request of
 * this rank rings) until poll(arg) says done (> 0) or fails (< 0), for at most
 * `slice` seconds: poll's result, 0 when the slice passed (the Python path
 * then waits on with the job's abort checks), -1 on a signal's exception. */
int wait_bell(int32_t *bell, int (*poll)(void *), void *arg, double slice);

/* A wait on *cell that left it holding `value` unsatisfied: the next
 * wait_changed on that cell and value soon after is this wait going on, and
 * sleeps at once instead of spinning and yielding again. */
void wait_left(int32_t *cell, int32_t value);

/* Spin (the wait policy's first phase) until *cell == want (equal) or while
 * it holds it (!equal); 0 when the wait ended, -1 when the spin ran out.  The
 * synchronization calls wait so before they hand the wait to Python, which
 * yields and sleeps with its checks (wait_left: it does not spin again). */
static inline int
spin_on(int32_t *cell, int32_t value, int equal)
{
    int64_t end = now_ns() + SYNC_SPIN_NS;
    long i;
    for (i = 1;; i++) {
        int32_t seen = __atomic_load_n(cell, SC);
        if ((seen == value) == equal)
            return 0;
        cpu_relax();
        if ((i & 31) == 0 && now_ns() >= end) {
            wait_left(cell, seen);
            return -1;
        }
    }
}

/* --- arguments (atomic.c) ----------------------------------------------------- */

/* The entry of the method table for the METH_FASTCALL function n_<name>. */
#define FC(name, doc) {#name, (PyCFunction)(void (*)(void))n_##name, METH_FASTCALL, doc}

int check_nargs(const char *fname, Py_ssize_t nargs, Py_ssize_t want);
void *get_addr(PyObject *obj, uintptr_t align, const char *fname);
int get_u64(PyObject *obj, uint64_t *out);
int get_timeout(PyObject *obj, const char *fname, double *out);
long plain_int(PyObject *obj);          /* an exact int >= 0, else -1 */

/* --- requests (request.c) ------------------------------------------------------- */

/* A request's Wait or Test in C takes no status: does the call pass none? */
int no_status(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
/* method(self, *args, **kwnames): the Python path of a request's Wait or Test
 * (at most the status argument). */
PyObject *request_python_path(PyObject *method, PyObject *self, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);

/* --- buffer operands (buffers.c) and reduction kernels (op.c) ------------------ */

static inline int
overlap(const void *a, Py_ssize_t na, const void *b, Py_ssize_t nb)
{
    return (const char *)a < (const char *)b + nb && (const char *)b < (const char *)a + na;
}

/* The ops the kernels know, in the order rma_setup() receives them. */
enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_BAND, OP_BOR, OP_BXOR,
       OP_LAND, OP_LOR, OP_LXOR, OP_REPLACE, OP_NO_OP, N_OPS };
extern PyObject *g_ops[N_OPS];

/* Element types.  E_RAW is any other known format: copied, never combined. */
enum { E_RAW, E_I8, E_U8, E_I16, E_U16, E_I32, E_I64, E_U32, E_U64, E_F32, E_F64 };

#define IS_INT(e) ((e) >= E_I8 && (e) <= E_U64)
#define IS_FLOAT(e) ((e) == E_F32 || (e) == E_F64)

/* A buffer argument and its element type. */
typedef struct {
    Py_buffer view;
    char code;                  /* the format's typecode; 0 for exactly "B" (MPI BYTE) */
    int etype;
    Py_ssize_t count;
} Operand;

/* A C-contiguous buffer with a known format whose item size agrees; -1 (no
 * error set) otherwise. */
int operand_get(PyObject *obj, int writable, Operand *o);
void operand_release(Operand *o);

/* A rank's part of a buffer, in bytes. */
typedef struct {
    Py_ssize_t at, len;
} Span;

/* The predefined datatypes a vector message may name: a sequence of
 * (datatype, extent > 0) (nonblocking._vector_datatypes).  -1 with an error set. */
int set_vector_datatypes(PyObject *pairs);
/* A vector message's counts (or, `displs`, its displacements) into each span's
 * len (at), in items: an int for every rank (the displacements' stride) or a
 * list or tuple of an int per rank, each >= 0.  -1 (no error set): a miss. */
int per_rank(PyObject *obj, int n, Span *spans, int displs);
/* A vector collective's message (buffers.vector_message) in the forms C takes
 * (see buffers.c): the buffer into *op, each of the n ranks' parts into spans.
 * -1 (no error set): a miss, nothing held. */
int vector_get(PyObject *msg, int writable, int n, Operand *op, Span *spans);

/* A call's send and receive buffers, each there or not. */
typedef struct {
    Operand send, recv;
    int has_send, has_recv;
} Pair;

static inline void
pair_release(Pair *p)
{
    if (p->has_send)
        operand_release(&p->send);
    if (p->has_recv)
        operand_release(&p->recv);
    p->has_send = p->has_recv = 0;
}

/* Do the two buffers share bytes? */
static inline int
pair_overlaps(Pair *p)
{
    return overlap(p->send.view.buf, p->send.view.len, p->recv.view.buf, p->recv.view.len);
}

/* target[i] = incoming[i] op target[i] over nbytes, the old target bytes to
 * result first when not NULL. */
void combine_all(int etype, int op, const char *incoming, char *target, char *result,
                 Py_ssize_t nbytes);
/* into = fold op part over nbytes: a reduction folding one rank's part into the
 * fold of the ranks before it (op.apply(fold, part)'s order, bit for bit); into
 * may be fold itself. */
void fold_all(int etype, int op, const char *fold, const char *part, char *into,
              Py_ssize_t nbytes);
/* The op's index when it is a registered predefined op defined on etype for
 * this kind of call, -1 otherwise. */
int op_code(PyObject *op, int etype, int fetches);

/* --- the window table's calls (table.c) ----------------------------------------- */

/* The table when sync calls may run on it here, else NULL. */
WinTable *sync_table(PyObject *table);
/* Open (delta 1) or close (-1) a counter epoch of `mode` (KIND_* bits) to rank. */
void counter_epoch_change(WinTable *t, Py_ssize_t rank, int mode, int delta);
/* Has rank entered the window barrier this rank entered last (Ibarrier, A3)?
 * (winbarrier.c) */
int barrier_entered(WinTable *t, Py_ssize_t rank);

/* May a new access epoch open (R66; a fence epoch with RMA must be fenced)? */
static inline int
access_may_open(WinTable *t)
{
    return !t->lock_all && !t->start_open && !(t->fence_open && t->rma_since_fence);
}

/* --- the fast paths (rma.c) ----------------------------------------------------- */

extern int g_fast_enabled;              /* rma_enable(): False makes fast paths miss */
extern long g_proc_null;                /* PROC_NULL's value (rma_setup) */

/* A fast path's answers: the call is done, or missed (nothing touched: the
 * Python path runs). */
#define MISS Py_RETURN_FALSE
#define DONE Py_RETURN_TRUE

/* --- pickles of objects in messages (pickles.c) ---------------------------------- */

#define QUICK_PICKLE_MAX 288    /* the longest pickle quick_dumps writes */

/* obj's pickle into out[:QUICK_PICKLE_MAX] when obj is of a kind written here
 * (int32, float, bool, None, str and bytes up to 255 bytes): its length, else
 * -1 with no error set. */
Py_ssize_t quick_dumps(PyObject *obj, char *out);
/* The object pickled in data[:len] when it is a pickle quick_dumps writes;
 * NULL with no error set otherwise (pickle.loads then reads it). */
PyObject *quick_loads(const char *data, Py_ssize_t len);
/* pickle.dumps(obj, protocol) and pickle.loads(data), quick where they can be */
PyObject *pickle_dumps(PyObject *obj);
PyObject *pickle_loads(PyObject *data);

/* --- the other files' parts of the module ---------------------------------------- */

int atomic_init(PyObject *module);
int buffers_init(PyObject *module);
int op_init(PyObject *module);
int handle_init(PyObject *module);
int table_init(PyObject *module);
int rma_init(PyObject *module);
int passive_init(PyObject *module);
int active_init(PyObject *module);
int transport_init(PyObject *module);
int collectives_init(PyObject *module);
int pickles_init(PyObject *module);
int nbc_init(PyObject *module);
int counters_init(PyObject *module);
int winbarrier_init(PyObject *module);

#endif
