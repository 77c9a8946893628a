/*
 * csrc/core/: what every other part of shmrma._native stands on (the C side
 * of shmrma/core/).
 *
 *   atomic.c   seq_cst atomics on shared words, wait cells and their futex,
 *              the one wait policy, the rank's MPI lock, a GIL-releasing
 *              memcpy, cross-process copies and the argument parsing every
 *              fast path uses (core/atomic.py; core/_fallback.py is the pure
 *              Python twin of its atomic layer)
 *   handle.c   the C bases of Python classes: HandleBase under the handle
 *              classes (core/handle.py), BufferExporter under MPI.Win
 *              (rma/window.py), EmptyBufferInt under the buffer constants
 *              (core/constants.py)
 *
 * This header declares what the rest of the extension takes from them: the
 * CPU's pause and the futex, wait cells, the clock, the rank's MPI lock, the
 * wait policy, argument parsing and the fast paths' switch.  A helper of a hot
 * path is static inline here, so the compiler inlines it in every file.
 */
#ifndef SHMRMA_CORE_H
#define SHMRMA_CORE_H

#define _GNU_SOURCE 1   /* as pyconfig.h: 3.9, 3.10 define it unguarded */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* Python 3.9 (setup.cfg's oldest) lacks these newer C-API calls. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *object)
{
    Py_INCREF(object);
    return object;
}
static inline PyObject *Py_XNewRef(PyObject *object)
{
    Py_XINCREF(object);
    return object;
}
#endif

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

/* A symbol one file defines and others of the extension use, and nothing
 * outside it: the others reach it as they reach a static one (a variable in
 * one PC-relative load, a function in a direct call), not through the GOT or
 * the PLT.  The files of a split concept share their state so. */
#define HIDDEN __attribute__((visibility("hidden")))

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
 * (coll/blocking.py's in_turn): once the process runs a second Python thread,
 * or Python said so (take_turns); sticky.  Their C paths miss then, so the
 * Python path runs them holding it. */
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

/* The time this thread spent waiting, for --trace and --profile (observe/):
 * counted only while g_observe_waits is set; the recorder takes and clears the
 * sum and the start of the first wait after each call (n_waited). */
extern int g_observe_waits;
extern __thread int64_t t_wait_began, t_waited_ns;

static inline void
wait_ended(int64_t began)
{
    if (!t_wait_began)
        t_wait_began = began;
    t_waited_ns += now_ns() - began;
}

/* Spin (the wait policy's first phase) until *cell == want (equal) or while
 * it holds it (!equal); 0 when the wait ended, -1 when the spin ran out.  The
 * synchronization calls wait so before they hand the wait to Python, which
 * yields and sleeps with its checks (wait_left: it does not spin again). */
static inline int
spin_on(int32_t *cell, int32_t value, int equal)
{
    int64_t began = now_ns(), end = began + SYNC_SPIN_NS;
    long i;
    for (i = 1;; i++) {
        int32_t seen = __atomic_load_n(cell, SC);
        if ((seen == value) == equal) {
            if (g_observe_waits && i > 1)
                wait_ended(began);
            return 0;
        }
        cpu_relax();
        if ((i & 31) == 0 && now_ns() >= end) {
            if (g_observe_waits)
                wait_ended(began);
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

/* --- the fast paths' switch (atomic.c) ---------------------------------------- */

/* Every fast path (the point-to-point calls, the collectives, RMA and its
 * synchronization) misses while it is 0: rma_enable() (rma/calls.c) sets it
 * for rma/fastpath.py's enable(). */
extern int g_fast_enabled;

/* --- this folder's parts of the module ---------------------------------------- */

int atomic_init(PyObject *module);
int handle_init(PyObject *module);

#endif
