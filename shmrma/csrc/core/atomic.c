/*
 * The native atomic layer (shmrma/core/atomic.py).
 *
 * Sequentially consistent atomic operations on 4- and 8-byte words given by
 * their address (a Python int), futex-based wait cells shared between
 * processes, and a GIL-releasing memcpy.  shmrma/core/_fallback.py implements the
 * same functions with the `atomics` package; shmrma/core/atomic.py picks one.
 *
 * Every function takes positional arguments only (METH_FASTCALL) and parses
 * them with the cheapest C-API calls, so a call costs roughly what a call to
 * a builtin costs (~0.1 us).
 *
 * Wait cell: 8 bytes at an 8-byte-aligned address,
 *     int32  value     at addr
 *     uint32 sleepers  at addr + 4
 * A waiter increments `sleepers` (seq_cst) before it re-reads `value` and
 * sleeps with FUTEX_WAIT; a writer updates `value` (seq_cst) before it reads
 * `sleepers` and calls FUTEX_WAKE when it is non-zero.  In the single total
 * order of seq_cst operations either the writer sees the increment (and
 * wakes) or the waiter sees the new value (and FUTEX_WAIT returns EAGAIN), so
 * no wake-up is lost.  The futex is the shared (non-private) variant because
 * the cell lives in memory mapped by several processes.
 */
#include "core.h"

#include <pthread.h>


/* ------------------------------------------------------------------ */
/* wait tuning                                                          */
/* ------------------------------------------------------------------ */

/* The one wait policy of every blocking call (docs/settings.md, "How ranks
 * wait"):
 *
 *   spin   for g_spin microseconds, re-reading the word (a reply from a rank
 *          running on another core arrives within a few: an 8-byte message
 *          round trip is under 1 us, a reply through Python a few us);
 *   yield  the CPU g_yields times (with more ranks than CPUs, the rank we wait
 *          for is often runnable on our core: each yield lets it run);
 *   sleep  on the futex, in slices, until a writer's wake-up.  A writer issues
 *          the wake-up only when the cell counts a sleeper.
 *
 * The values are core/settings.py's (its defaults, or SHMRMA_SPIN and
 * SHMRMA_YIELDS), which core/atomic.py hands over with set_wait_params() when
 * it picks this module, before any wait; core/job.py spins less when ranks
 * outnumber CPUs, where spinning only delays the rank waited for (mpi4py's
 * CI on an oversubscribing MPI went from minutes to over an hour).  A wait
 * longer than a slice (the callers check the job between slices) spins and
 * yields at its start only: its later slices sleep at once (wait_changed). */
long g_spin = 0;
long g_yields = 0;

/* ------------------------------------------------------------------ */
/* argument parsing                                                     */
/* ------------------------------------------------------------------ */

int
check_nargs(const char *fname, Py_ssize_t nargs, Py_ssize_t want)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd argument%s (%zd given)",
                 fname, want, want == 1 ? "" : "s", nargs);
    return -1;
}

/* Address argument: a Python int, non-zero, multiple of `align`. */
void *
get_addr(PyObject *obj, uintptr_t align, const char *fname)
{
    void *p = PyLong_AsVoidPtr(obj);
    if (p == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s(): address 0 (NULL) is not valid", fname);
        return NULL;
    }
    if (((uintptr_t)p & (align - 1)) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): address %p is not %d-byte aligned", fname,
                     p, (int)align);
        return NULL;
    }
    return p;
}

/* Integer argument taken modulo 2**64 (accepts signed and unsigned). */
int
get_u64(PyObject *obj, uint64_t *out)
{
    unsigned long long v = PyLong_AsUnsignedLongLongMask(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* An exact int argument, or -1 (the arguments taken here are all >= 0). */
long
plain_int(PyObject *obj)
{
    long v;
    if (!PyLong_CheckExact(obj))
        return -1;
    v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        PyErr_Clear();
    return v;
}

/* The fast paths' switch (core.h): rma_enable() turns them all off and on. */
int g_fast_enabled = 1;

#define I32(u) ((int32_t)(uint32_t)(u))

/* ------------------------------------------------------------------ */
/* plain atomics                                                        */
/* ------------------------------------------------------------------ */

/* Each word operation is defined once and instantiated for 4- and 8-byte
 * words.  Values are taken modulo 2**BITS and returned signed; additions are
 * done on the unsigned type so wrapping is explicit. */
#define WORD_OPERATIONS(BITS, UTYPE, STYPE, TO_PY)                              \
static PyObject *                                                               \
n_load##BITS(PyObject *m, PyObject *const *args, Py_ssize_t nargs)             \
{                                                                               \
    UTYPE *p;                                                                   \
    if (check_nargs("load" #BITS, nargs, 1) < 0) return NULL;                  \
    if (!(p = get_addr(args[0], sizeof(UTYPE), "load" #BITS))) return NULL;    \
    return TO_PY((STYPE)__atomic_load_n(p, SC));                               \
}                                                                               \
                                                                                \
static UTYPE *                                                                  \
word_and_value##BITS(PyObject *const *args, Py_ssize_t nargs, const char *name, \
                     UTYPE *value)                                              \
{                                                                               \
    UTYPE *p;                                                                   \
    uint64_t v;                                                                 \
    if (check_nargs(name, nargs, 2) < 0) return NULL;                          \
    if (!(p = get_addr(args[0], sizeof(UTYPE), name))) return NULL;            \
    if (get_u64(args[1], &v) < 0) return NULL;                                 \
    *value = (UTYPE)v;                                                          \
    return p;                                                                   \
}                                                                               \
                                                                                \
static PyObject *                                                               \
n_store##BITS(PyObject *m, PyObject *const *args, Py_ssize_t nargs)            \
{                                                                               \
    UTYPE v, *p = word_and_value##BITS(args, nargs, "store" #BITS, &v);        \
    if (!p) return NULL;                                                        \
    __atomic_store_n(p, v, SC);                                                 \
    Py_RETURN_NONE;                                                             \
}                                                                               \
                                                                                \
static PyObject *                                                               \
n_fetch_add##BITS(PyObject *m, PyObject *const *args, Py_ssize_t nargs)        \
{                                                                               \
    UTYPE v, *p = word_and_value##BITS(args, nargs, "fetch_add" #BITS, &v);    \
    if (!p) return NULL;                                                        \
    return TO_PY((STYPE)__atomic_fetch_add(p, v, SC));                         \
}                                                                               \
                                                                                \
static PyObject *                                                               \
n_exchange##BITS(PyObject *m, PyObject *const *args, Py_ssize_t nargs)         \
{                                                                               \
    UTYPE v, *p = word_and_value##BITS(args, nargs, "exchange" #BITS, &v);     \
    if (!p) return NULL;                                                        \
    return TO_PY((STYPE)__atomic_exchange_n(p, v, SC));                        \
}                                                                               \
                                                                                \
static PyObject *                                                               \
n_cas##BITS(PyObject *m, PyObject *const *args, Py_ssize_t nargs)              \
{                                                                               \
    UTYPE *p, expected;                                                         \
    uint64_t e, d;                                                              \
    if (check_nargs("cas" #BITS, nargs, 3) < 0) return NULL;                   \
    if (!(p = get_addr(args[0], sizeof(UTYPE), "cas" #BITS))) return NULL;     \
    if (get_u64(args[1], &e) < 0 || get_u64(args[2], &d) < 0) return NULL;     \
    expected = (UTYPE)e;                                                        \
    /* on failure `expected` receives the current value; on success the old */ \
    __atomic_compare_exchange_n(p, &expected, (UTYPE)d, 0, SC, SC);            \
    return TO_PY((STYPE)expected);                                              \
}

WORD_OPERATIONS(32, uint32_t, int32_t, PyLong_FromLong)
WORD_OPERATIONS(64, uint64_t, int64_t, PyLong_FromLongLong)

static PyObject *
n_fence(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("fence", nargs, 0) < 0) return NULL;
    __atomic_thread_fence(SC);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* wait cells                                                           */
/* ------------------------------------------------------------------ */

#define WAIT_DONE 0
#define WAIT_CHECK 1

/* Longest single futex sleep.  A signal that lands after the spin started
 * but before FUTEX_WAIT is entered does not interrupt the sleep, so the wait
 * surfaces at least this often to run Python signal handlers (Ctrl-C,
 * pytest-timeout's SIGALRM). */
#define SLEEP_SLICE_NS 200000000LL

/* Runs without the GIL.  deadline < 0 means no deadline.  Stores the
 * current value in *out; returns WAIT_CHECK when a signal interrupted the
 * futex sleep or a sleep slice ended (the caller then runs Python signal
 * handlers and calls again with spin = yields = 0). */
int
cell_wait_nogil(int32_t *cell, int32_t old, int64_t deadline, long spin,
                long yields, int32_t *out)
{
    uint32_t *sleepers = (uint32_t *)(cell + 1);
    int32_t v;
    long i;

    if (spin > 0) {
        int64_t spin_end = now_ns() + spin * 1000;
        if (deadline >= 0 && deadline < spin_end)
            spin_end = deadline;
        for (i = 1;; i++) {
            v = __atomic_load_n(cell, SC);
            if (v != old) goto done;
            cpu_relax();
            if ((i & 31) == 0 && now_ns() >= spin_end)
                break;
        }
    }
    for (i = 0; i < yields; i++) {
        v = __atomic_load_n(cell, SC);
        if (v != old) goto done;
        if (deadline >= 0 && now_ns() >= deadline) goto done;
        sched_yield();
    }
    for (;;) {
        struct timespec ts;
        int64_t rem = SLEEP_SLICE_NS;
        long r;
        int err;

        __atomic_fetch_add(sleepers, 1, SC);
        v = __atomic_load_n(cell, SC);
        if (v != old) {
            __atomic_fetch_sub(sleepers, 1, SC);
            goto done;
        }
        if (deadline >= 0) {
            rem = deadline - now_ns();
            if (rem <= 0) {
                __atomic_fetch_sub(sleepers, 1, SC);
                goto done;
            }
            if (rem > SLEEP_SLICE_NS)
                rem = SLEEP_SLICE_NS;
        }
        ts.tv_sec = (time_t)(rem / 1000000000LL);
        ts.tv_nsec = (long)(rem % 1000000000LL);
        r = futex(cell, FUTEX_WAIT, (uint32_t)old, &ts);
        err = errno;
        __atomic_fetch_sub(sleepers, 1, SC);
        v = __atomic_load_n(cell, SC);
        if (v != old) goto done;
        if (r == -1 && (err == EINTR || err == ETIMEDOUT)) {
            /* a signal, or the end of a slice (or of the whole timeout:
             * the caller's next round returns at its deadline check) */
            *out = v;
            return WAIT_CHECK;
        }
        /* woken spuriously, or EAGAIN after an ABA change: go on */
    }
done:
    *out = v;
    return WAIT_DONE;
}

/* Wait (GIL released, signals handled) until *cell != old or timeout
 * seconds pass; stores the last value read in *out.  -1 with an exception
 * set when a signal handler raised. */
/* The wait this thread left unsatisfied last (a slice of a longer wait ended):
 * when the next one is on the same cell and value soon after, it is that wait
 * going on, which spun and yielded already, so it sleeps at once. */
static __thread int32_t *t_left_cell;
static __thread int32_t t_left_old;
static __thread int64_t t_left_at;
#define GOING_ON_NS 1000000LL

void
wait_left(int32_t *cell, int32_t value)
{
    t_left_cell = cell;
    t_left_old = value;
    t_left_at = now_ns();
}

/* ------------------------------------------------------------------ */
/* the rank's MPI lock (core/core.h says what it guards)               */
/* ------------------------------------------------------------------ */

/* Read and written with the GIL held only, but for g_lock_word, the futex word
 * a thread that found the lock taken sleeps on (without the GIL): the holder
 * bumps it when it gives the lock back to sleepers. */
static __thread char t_thread;          /* its address tells the threads apart */
static char *g_lock_owner;              /* the holder's &t_thread; NULL: free */
static long g_lock_depth;
static long g_lock_sleepers;
static uint32_t g_lock_word;
static char *g_lock_first;              /* the first thread that took it */
static int g_lock_shared;               /* a second one did */

void
mpi_lock(void)
{
    char *me = &t_thread;
    while (g_lock_owner != NULL && g_lock_owner != me) {
        uint32_t seen = __atomic_load_n(&g_lock_word, SC);
        g_lock_sleepers++;
        Py_BEGIN_ALLOW_THREADS
        syscall(SYS_futex, &g_lock_word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
        Py_END_ALLOW_THREADS
        g_lock_sleepers--;
    }
    if (me != g_lock_first && !g_lock_shared) {
        if (g_lock_first == NULL)
            g_lock_first = me;
        else
            g_lock_shared = 1;
    }
    g_lock_owner = me;
    g_lock_depth++;
}

void
mpi_unlock(void)
{
    if (--g_lock_depth > 0)
        return;
    g_lock_owner = NULL;
    if (g_lock_sleepers) {
        __atomic_fetch_add(&g_lock_word, 1u, SC);
        syscall(SYS_futex, &g_lock_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
}

/* A forked child has only the thread that forked: the lock is its if that
 * thread held it, else free, and nobody sleeps on it. */
static void
mpi_lock_after_fork(void)
{
    if (g_lock_owner != &t_thread) {
        g_lock_owner = NULL;
        g_lock_depth = 0;
    }
    g_lock_sleepers = 0;
}

int
mpi_lock_shared(void)
{
    return g_lock_shared;
}

/* Give the lock up, however deep this thread holds it (a wait): the depth to
 * take it back with, 0 when it did not hold it. */
static long
mpi_lock_give_up(void)
{
    long depth;
    if (g_lock_owner != &t_thread)
        return 0;
    depth = g_lock_depth;
    g_lock_depth = 1;
    mpi_unlock();
    return depth;
}

static void
mpi_lock_take_back(long depth)
{
    if (depth == 0)
        return;
    mpi_lock();
    g_lock_depth = depth;
}

/* The lock for Python's steps on the rank's MPI state: ``with mpi_lock:``. */
typedef struct {
    PyObject_HEAD
} MPILock;

static PyObject *
mpilock_enter(PyObject *self, PyObject *unused)
{
    mpi_lock();
    Py_INCREF(self);
    return self;
}

static PyObject *
mpilock_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    mpi_unlock();
    Py_RETURN_NONE;
}

static PyMethodDef mpilock_methods[] = {
    {"__enter__", (PyCFunction)mpilock_enter, METH_NOARGS, "take the rank's MPI lock"},
    {"__exit__", (PyCFunction)(void (*)(void))mpilock_exit, METH_FASTCALL,
     "give it back"},
    {NULL}
};

static PyTypeObject MPILockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.MPILock",
    .tp_basicsize = sizeof(MPILock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The rank's MPI lock (core/core.h), for Python's steps on its MPI state: "
              "recursive; every wait gives it up while it waits.",
    .tp_methods = mpilock_methods,
};

static PyObject *
n_mpi_lock_shared(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(g_lock_shared);
}

static int g_take_turns;

int
taking_turns(void)
{
    if (!g_take_turns) {
        PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
        PyThreadState *first = PyInterpreterState_ThreadHead(interp);
        g_take_turns = first != NULL && PyThreadState_Next(first) != NULL;
    }
    return g_take_turns;
}

static PyObject *
n_taking_turns(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(taking_turns());
}

static PyObject *
n_take_turns(PyObject *m, PyObject *unused)
{
    g_take_turns = 1;
    Py_RETURN_NONE;
}

/* Is a wait for *cell != old the one this thread left a moment ago, going on? */
static int
goes_on(int32_t *cell, int32_t old)
{
    return cell == t_left_cell && old == t_left_old && now_ns() - t_left_at < GOING_ON_NS;
}

int g_observe_waits;
__thread int64_t t_wait_began, t_waited_ns;

int
wait_changed(int32_t *cell, int32_t old, double timeout, int32_t *out)
{
    long spin = g_spin, yields = g_yields, held;
    int64_t deadline, began;
    int32_t v = __atomic_load_n(cell, SC);
    int r;

    if (v != old || timeout <= 0.0) {
        *out = v;
        return 0;
    }
    began = g_observe_waits ? now_ns() : 0;
    if (goes_on(cell, old))
        spin = yields = 0;
    /* > ~31 years (or inf) means: no deadline */
    deadline = timeout >= 1e9 ? -1 : now_ns() + (int64_t)(timeout * 1e9);
    held = mpi_lock_give_up();      /* a wait blocks only its own thread */
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        r = cell_wait_nogil(cell, old, deadline, spin, yields, &v);
        Py_END_ALLOW_THREADS
        if (r != WAIT_CHECK)
            break;
        if (PyErr_CheckSignals() < 0) {
            mpi_lock_take_back(held);
            return -1;
        }
        spin = yields = 0;      /* already spun: go straight back to sleep */
    }
    mpi_lock_take_back(held);
    if (began)
        wait_ended(began);
    wait_left(v == old ? cell : NULL, old);
    *out = v;
    return 0;
}

int
wait_bell(int32_t *bell, int (*poll)(void *), void *arg, double slice)
{
    int64_t deadline = now_ns() + (int64_t)(slice * 1e9);
    for (;;) {
        int32_t seen, rung = __atomic_load_n(bell, SC);
        int64_t left;
        int rc = poll(arg);
        if (rc != 0)
            return rc;
        if ((left = deadline - now_ns()) <= 0)
            return 0;
        if (wait_changed(bell, rung, left * 1e-9, &seen) < 0)
            return -1;
    }
}

int
get_timeout(PyObject *obj, const char *fname, double *out)
{
    double timeout = PyFloat_AsDouble(obj);
    if (timeout == -1.0 && PyErr_Occurred()) return -1;
    if (isnan(timeout)) {
        PyErr_Format(PyExc_ValueError, "%s(): timeout is NaN", fname);
        return -1;
    }
    *out = timeout;
    return 0;
}

static PyObject *
n_cell_wait(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t *cell, v;
    uint64_t o;
    double timeout;

    if (check_nargs("cell_wait", nargs, 3) < 0) return NULL;
    if (!(cell = get_addr(args[0], 8, "cell_wait"))) return NULL;
    if (get_u64(args[1], &o) < 0) return NULL;
    if (get_timeout(args[2], "cell_wait", &timeout) < 0) return NULL;
    if (wait_changed(cell, I32(o), timeout, &v) < 0) return NULL;
    return PyLong_FromLong(v);
}

static PyObject *
n_wait_goes_on(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t *cell;
    uint64_t o;

    if (check_nargs("wait_goes_on", nargs, 2) < 0) return NULL;
    if (!(cell = get_addr(args[0], 8, "wait_goes_on"))) return NULL;
    if (get_u64(args[1], &o) < 0) return NULL;
    return PyBool_FromLong(goes_on(cell, I32(o)));
}

/* Arrive at a counting barrier: the last of `size` arrivals resets the
 * counter and bumps the generation cell; the others wait for that bump.
 * Returns None once released, or the generation still awaited when the
 * timeout passed (the caller goes on waiting with its own checks). */
static PyObject *
n_barrier_arrive(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t *count, *cell, generation, v;
    uint64_t size;
    double timeout;

    if (check_nargs("barrier_arrive", nargs, 4) < 0) return NULL;
    if (!(count = get_addr(args[0], 4, "barrier_arrive"))) return NULL;
    if (!(cell = get_addr(args[1], 8, "barrier_arrive"))) return NULL;
    if (get_u64(args[2], &size) < 0) return NULL;
    if (get_timeout(args[3], "barrier_arrive", &timeout) < 0) return NULL;

    generation = __atomic_load_n(cell, SC);
    if ((uint64_t)__atomic_fetch_add(count, 1, SC) + 1 >= size) {
        __atomic_store_n(count, 0, SC);
        __atomic_fetch_add((uint32_t *)cell, 1u, SC);
        wake_if_sleepers(cell);
        Py_RETURN_NONE;
    }
    if (wait_changed(cell, generation, timeout, &v) < 0) return NULL;
    if (v != generation)
        Py_RETURN_NONE;
    return PyLong_FromLong(generation);
}

static PyObject *
n_cell_add(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t *cell;
    uint32_t old;
    uint64_t d;
    if (check_nargs("cell_add", nargs, 2) < 0) return NULL;
    if (!(cell = get_addr(args[0], 8, "cell_add"))) return NULL;
    if (get_u64(args[1], &d) < 0) return NULL;
    old = __atomic_fetch_add((uint32_t *)cell, (uint32_t)d, SC);
    wake_if_sleepers(cell);
    return PyLong_FromLong(I32(old));
}

static PyObject *
n_cell_store(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t *cell;
    uint64_t v;
    if (check_nargs("cell_store", nargs, 2) < 0) return NULL;
    if (!(cell = get_addr(args[0], 8, "cell_store"))) return NULL;
    if (get_u64(args[1], &v) < 0) return NULL;
    __atomic_store_n(cell, I32(v), SC);
    wake_if_sleepers(cell);
    Py_RETURN_NONE;
}

static PyObject *
n_cell_wake(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t *cell;
    if (check_nargs("cell_wake", nargs, 1) < 0) return NULL;
    if (!(cell = get_addr(args[0], 8, "cell_wake"))) return NULL;
    futex(cell, FUTEX_WAKE, INT_MAX, NULL);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* memcpy                                                               */
/* ------------------------------------------------------------------ */

#define MEMCPY_NOGIL_MIN (64 * 1024)

static PyObject *
n_memcpy(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    void *dst, *src;
    Py_ssize_t n;
    if (check_nargs("memcpy", nargs, 3) < 0) return NULL;
    n = PyLong_AsSsize_t(args[2]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) {
        PyErr_Format(PyExc_ValueError, "memcpy(): negative byte count %zd", n);
        return NULL;
    }
    if (n == 0)
        Py_RETURN_NONE;
    if (!(dst = get_addr(args[0], 1, "memcpy"))) return NULL;
    if (!(src = get_addr(args[1], 1, "memcpy"))) return NULL;
    if (n >= MEMCPY_NOGIL_MIN) {
        Py_BEGIN_ALLOW_THREADS
        memmove(dst, src, (size_t)n);
        Py_END_ALLOW_THREADS
    }
    else {
        memmove(dst, src, (size_t)n);
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ */
/* cross-process copies (windows over private memory)                  */
/* ------------------------------------------------------------------ */

/* Copy n bytes between this process's local_addr and another process's
 * remote_addr with process_vm_writev (write=1) or process_vm_readv; loops
 * over partial transfers; OSError on failure (EPERM when the system
 * forbids it, EFAULT when the remote range is not mapped). */
static PyObject *
vm_copy(PyObject *const *args, Py_ssize_t nargs, int write, const char *fname)
{
    long pid;
    void *remote, *local;
    Py_ssize_t n, done = 0;
    int err = 0;
    if (check_nargs(fname, nargs, 4) < 0) return NULL;
    pid = PyLong_AsLong(args[0]);
    if (pid == -1 && PyErr_Occurred()) return NULL;
    n = PyLong_AsSsize_t(args[3]);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n <= 0)
        Py_RETURN_NONE;
    if (!(remote = get_addr(args[1], 1, fname))) return NULL;
    if (!(local = get_addr(args[2], 1, fname))) return NULL;
    Py_BEGIN_ALLOW_THREADS
    while (done < n) {
        struct iovec here = {(char *)local + done, (size_t)(n - done)};
        struct iovec there = {(char *)remote + done, (size_t)(n - done)};
        ssize_t moved = write ? process_vm_writev((pid_t)pid, &here, 1, &there, 1, 0)
                              : process_vm_readv((pid_t)pid, &here, 1, &there, 1, 0);
        if (moved <= 0) {
            err = moved < 0 ? errno : EFAULT;
            break;
        }
        done += moved;
    }
    Py_END_ALLOW_THREADS
    if (err) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *
n_vm_write(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return vm_copy(args, nargs, 1, "vm_write");
}

static PyObject *
n_vm_read(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return vm_copy(args, nargs, 0, "vm_read");
}

/* ------------------------------------------------------------------ */
/* tuning accessors                                                     */
/* ------------------------------------------------------------------ */

static PyObject *
n_observe_waits(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int on;
    if (check_nargs("observe_waits", nargs, 1) < 0) return NULL;
    if ((on = PyObject_IsTrue(args[0])) < 0) return NULL;
    g_observe_waits = on;
    Py_RETURN_NONE;
}

static PyObject *
n_waited(PyObject *m, PyObject *unused)
{
    PyObject *result;
    if (!t_waited_ns)
        Py_RETURN_NONE;
    result = Py_BuildValue("(LL)", (long long)t_wait_began, (long long)t_waited_ns);
    t_wait_began = t_waited_ns = 0;
    return result;
}

static PyObject *
n_get_wait_params(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("get_wait_params", nargs, 0) < 0) return NULL;
    return Py_BuildValue("(ll)", g_spin, g_yields);
}

static PyObject *
n_set_wait_params(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    long s, y;
    if (check_nargs("set_wait_params", nargs, 2) < 0) return NULL;
    s = PyLong_AsLong(args[0]);
    if (s == -1 && PyErr_Occurred()) return NULL;
    y = PyLong_AsLong(args[1]);
    if (y == -1 && PyErr_Occurred()) return NULL;
    if (s < 0 || y < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "set_wait_params(): spin and yields must be >= 0");
        return NULL;
    }
    g_spin = s;
    g_yields = y;
    Py_RETURN_NONE;
}

static PyMethodDef atomic_functions[] = {
    {"mpi_lock_shared", (PyCFunction)n_mpi_lock_shared, METH_NOARGS,
     "mpi_lock_shared() -> bool: a second thread has taken the rank's MPI lock."},
    {"taking_turns", (PyCFunction)n_taking_turns, METH_NOARGS,
     "taking_turns() -> bool: the process runs (or ran) a second Python thread, or "
     "take_turns() was called."},
    {"take_turns", (PyCFunction)n_take_turns, METH_NOARGS,
     "take_turns(): from now on taking_turns() is True."},
    FC(load32, "load32(addr) -> int: seq_cst load of the int32 at addr."),
    FC(load64, "load64(addr) -> int: seq_cst load of the int64 at addr."),
    FC(store32, "store32(addr, v): seq_cst store of v mod 2**32."),
    FC(store64, "store64(addr, v): seq_cst store of v mod 2**64."),
    FC(fetch_add32, "fetch_add32(addr, v) -> old (signed, wraps)."),
    FC(fetch_add64, "fetch_add64(addr, v) -> old (signed, wraps)."),
    FC(exchange32, "exchange32(addr, v) -> old."),
    FC(exchange64, "exchange64(addr, v) -> old."),
    FC(cas32, "cas32(addr, expected, desired) -> old; swapped iff old == expected mod 2**32."),
    FC(cas64, "cas64(addr, expected, desired) -> old; swapped iff old == expected mod 2**64."),
    FC(fence, "fence(): full (seq_cst) memory barrier."),
    FC(cell_wait, "cell_wait(addr, old, timeout) -> value: wait (GIL released) until the "
                  "cell's value != old or timeout seconds have passed."),
    FC(wait_goes_on, "wait_goes_on(addr, old) -> bool: a cell_wait(addr, old) now would "
       "be the wait this thread left a moment ago going on, which sleeps without "
       "spinning again."),
    FC(cell_add, "cell_add(addr, delta) -> old: fetch_add on the cell, wake sleepers."),
    FC(cell_store, "cell_store(addr, v): store into the cell, wake sleepers."),
    FC(cell_wake, "cell_wake(addr): wake every process sleeping on the cell."),
    FC(barrier_arrive, "barrier_arrive(count_addr, cell_addr, size, timeout) -> None once "
                       "the barrier opened, else the generation still awaited."),
    FC(memcpy, "memcpy(dst_addr, src_addr, nbytes): copy (overlap allowed); "
               "releases the GIL from 64 KiB."),
    FC(vm_write, "vm_write(pid, remote_addr, local_addr, nbytes): copy local bytes into "
                 "another process (process_vm_writev)."),
    FC(vm_read, "vm_read(pid, remote_addr, local_addr, nbytes): copy another process's bytes "
                "here (process_vm_readv)."),
    FC(observe_waits, "observe_waits(on): count the time each thread waits (--trace, "
                      "--profile), which waited() hands over."),
    {"waited", (PyCFunction)n_waited, METH_NOARGS,
     "waited() -> (first wait's start, total ns) this thread waited since the last "
     "call (monotonic clock), or None."},
    FC(get_wait_params, "get_wait_params() -> (spin microseconds, yields) of the wait "
                        "policy."),
    FC(set_wait_params, "set_wait_params(spin, yields): the wait policy's spin "
                        "(microseconds) and sched_yield count."),
    {NULL, NULL, 0, NULL}
};

int
atomic_init(PyObject *module)
{
    if (pthread_atfork(NULL, NULL, mpi_lock_after_fork) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
        return -1;
    }
    if (PyModule_AddIntConstant(module, "MEMCPY_NOGIL_MIN", MEMCPY_NOGIL_MIN) < 0 ||
            PyType_Ready(&MPILockType) < 0 ||
            PyModule_AddObject(module, "mpi_lock", PyType_GenericNew(&MPILockType, NULL,
                                                                     NULL)) < 0)
        return -1;
    return PyModule_AddFunctions(module, atomic_functions);
}
