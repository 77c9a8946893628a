/*
 * shmrma._native: the module.  Each file of shmrma/csrc/ holds one concept
 * (native.h lists them) and adds its functions, types and constants to the
 * module in its init; this file makes the module and calls them.  The "RMA
 * fast path" section (WinTable, rma_*) serves shmrma/fastpath.py only; the
 * fallback has no counterpart (there every call takes the Python path).
 */
#include "csrc/native.h"

/* A program that polls a flag (Fetch_and_op NO_OP or Get, then Flush, in a loop)
 * never blocks in shmrma, so with more ranks than cores the rank it waits for
 * may not run until the scheduler's time slice ends: a token ring of 3 ranks on
 * 2 cores took 10-13 ms per round.  When job.py finds the ranks outnumber the
 * CPUs it sets g_flush_yield, and every g_flush_yield-th Flush on the fast path
 * yields the CPU, as MPICH's progress engine does after a number of polls.
 * 0 (the default) never yields. */
static long g_flush_yield = 0;
static unsigned long g_flushes = 0;

/* ------------------------------------------------------------------ */
/* RMA fast path                                                        */
/* ------------------------------------------------------------------ */

/*
 * The common case of the communication calls and flushes, done in C; see
 * shmrma/fastpath.py for the contract.  Each rma_* function returns True
 * when it performed the call and False ("miss") when it did not touch
 * anything, and then shmrma/rma.py runs the Python path, which raises
 * whatever error the call deserves.  So every check here only decides
 * "handled or not": on any doubt, miss.

 */


int g_fast_enabled = 1;
long g_proc_null = -1;

/* --- argument checks: each says "usable" (0) or "miss" (-1, no error set) --- */

#define REACH_MISS 0
#define REACH_NULL 1            /* PROC_NULL inside some epoch: a no-op */
#define REACH_TARGET 2

/* May an RMA call reach rank_obj now (R65), or is it PROC_NULL (R38, A38)? */
static int
reach(PyObject *table, PyObject *rank_obj, int kind, WinTable **tp, FastTarget **slot)
{
    WinTable *t = (WinTable *)table;
    long rank;
    if (!g_fast_enabled || Py_TYPE(table) != &WinTableType || !t->open ||
            !PyLong_CheckExact(rank_obj))
        return REACH_MISS;
    rank = PyLong_AsLong(rank_obj);
    if (rank == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return REACH_MISS;
    }
    if (rank == g_proc_null)
        return t->lock_all || t->nlocked || t->fence_open || t->start_open || t->ncounter ?
            REACH_NULL : REACH_MISS;
    if (rank < 0 || rank >= t->n)
        return REACH_MISS;
    if (!(t->lock_all || t->targets[rank].locked || t->fence_open ||
            t->targets[rank].started || (t->targets[rank].counter_kinds & kind)))
        return REACH_MISS;
    if (t->barrier_pending && !barrier_entered(t, rank))
        return REACH_MISS;      /* the Python path waits for the target's entry (A3) */
    *tp = t;
    *slot = &t->targets[rank];
    return REACH_TARGET;
}

/* The call passed every check: it counts as RMA of the current fence epoch. */
static inline void
issued(WinTable *t)
{
    if (t->fence_open)
        t->rma_since_fence = 1;
}

/* A target displacement: an exact int, or None (0) where allowed. */
static int
get_disp(PyObject *obj, int none_allowed, long long *disp)
{
    int overflow;
    if (obj == Py_None && none_allowed) {
        *disp = 0;
        return 0;
    }
    if (!PyLong_CheckExact(obj))
        return -1;
    *disp = PyLong_AsLongLongAndOverflow(obj, &overflow);
    return overflow || (*disp == -1 && PyErr_Occurred()) ? (PyErr_Clear(), -1) : 0;
}

/* nbytes of window memory at displacement disp, or NULL when not all in range. */
static char *
window_bytes(const FastTarget *slot, long long disp, Py_ssize_t nbytes)
{
    long long offset;
    if (slot->base == NULL || disp < 0 || nbytes <= 0)
        return NULL;
    if (__builtin_mul_overflow(disp, (long long)slot->unit, &offset))
        return NULL;
    if (offset > slot->size || nbytes > slot->size - offset)
        return NULL;
    return slot->base + offset;
}

/* --- the accumulate lock (rma.AccumulateLock) --- */

/* Spins of a contended acquire before missing: long enough for a holder in
 * C (well under a microsecond), short enough not to wait on a holder in
 * Python, which the Python path waits for with the job's abort checks. */
#define ACC_LOCK_SPIN 256

static int
acc_lock(int32_t *cell)
{
    int i;
    for (i = 0; i < ACC_LOCK_SPIN; i++) {
        int32_t expected = 0;
        if (__atomic_load_n(cell, SC) == 0 &&
                __atomic_compare_exchange_n(cell, &expected, 1, 0, SC, SC))
            return 0;
        cpu_relax();
    }
    return -1;
}

static void
acc_unlock(int32_t *cell)
{
    __atomic_store_n(cell, 0, SC);
    wake_if_sleepers(cell);
}

/* --- the calls --- */

#define MISS Py_RETURN_FALSE
#define DONE Py_RETURN_TRUE

/* Put (get = 0) or Get: (table, origin, rank, target). */
static PyObject *
transfer(PyObject *const *args, int get)
{
    WinTable *t;
    FastTarget *slot;
    Operand origin;
    long long disp;
    char *there;
    int reached = reach(args[0], args[2], get ? KIND_GET : KIND_PUT, &t, &slot);
    if (reached != REACH_TARGET) {
        if (reached == REACH_NULL) DONE;
        MISS;
    }
    if (get_disp(args[3], 1, &disp) < 0 || operand_get(args[1], get, &origin) < 0)
        MISS;
    there = window_bytes(slot, disp, origin.view.len);
    if (there == NULL) {
        operand_release(&origin);
        MISS;
    }
    if (get)
        memmove(origin.view.buf, there, (size_t)origin.view.len);
    else
        memmove(there, origin.view.buf, (size_t)origin.view.len);
    issued(t);
    operand_release(&origin);
    DONE;
}

static PyObject *
n_rma_put(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("rma_put", nargs, 4) < 0) return NULL;
    return transfer(args, 0);
}

static PyObject *
n_rma_get(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("rma_get", nargs, 4) < 0) return NULL;
    return transfer(args, 1);
}

/* The three accumulating calls that share combine(). */
enum { CALL_ACCUMULATE, CALL_GET_ACCUMULATE, CALL_FETCH_AND_OP };

/* May origin be combined into the window bytes at `there` (result: NULL for
 * Accumulate) on the fast path?  Buffers overlapping the target, or each
 * other when the op moves data (R48), are left to the Python path. */
static int
combinable(int call, int op, const Operand *origin, const Operand *result,
           const char *there)
{
    Py_ssize_t n = origin->view.len;
    if (op < 0 || there == NULL || overlap(origin->view.buf, n, there, n))
        return 0;
    if (call == CALL_FETCH_AND_OP && origin->count != 1)
        return 0;
    if (result == NULL)
        return 1;
    return result->code == origin->code && result->view.len == n &&
        !overlap(result->view.buf, n, there, n) &&
        (op == OP_NO_OP || !overlap(origin->view.buf, n, result->view.buf, n));
}

/* Accumulate, Get_accumulate or Fetch_and_op: origin combined into the
 * target under its accumulate lock, the old values to result (NULL for
 * Accumulate).  Fetch_and_op takes one element and an int displacement. */
static PyObject *
combine(int call, PyObject *table, PyObject *origin_obj, PyObject *result_obj,
        PyObject *rank_obj, PyObject *target_obj, PyObject *op_obj)
{
    WinTable *t;
    FastTarget *slot;
    Operand origin, result, *fetched = NULL;
    long long disp;
    char *there;
    int op, ok, reached = reach(table, rank_obj, KIND_ACCUMULATE, &t, &slot);
    if (reached != REACH_TARGET) {
        if (reached == REACH_NULL) DONE;
        MISS;
    }
    if (get_disp(target_obj, call != CALL_FETCH_AND_OP, &disp) < 0 ||
            operand_get(origin_obj, call == CALL_GET_ACCUMULATE, &origin) < 0)
        MISS;
    if (result_obj != NULL) {
        if (operand_get(result_obj, 1, &result) < 0) {
            operand_release(&origin);
            MISS;
        }
        fetched = &result;
    }
    op = op_code(op_obj, origin.etype, fetched != NULL);
    there = window_bytes(slot, disp, origin.view.len);
    ok = combinable(call, op, &origin, fetched, there) && acc_lock(slot->acc_lock) == 0;
    if (ok) {
        combine_all(origin.etype, op, origin.view.buf, there,
                    fetched != NULL ? fetched->view.buf : NULL, origin.view.len);
        acc_unlock(slot->acc_lock);
        issued(t);
    }
    if (fetched != NULL)
        operand_release(fetched);
    operand_release(&origin);
    if (ok) DONE;
    MISS;
}

static PyObject *
n_rma_accumulate(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("rma_accumulate", nargs, 5) < 0) return NULL;
    return combine(CALL_ACCUMULATE, args[0], args[1], NULL, args[2], args[3], args[4]);
}

static PyObject *
n_rma_get_accumulate(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("rma_get_accumulate", nargs, 6) < 0) return NULL;
    return combine(CALL_GET_ACCUMULATE, args[0], args[1], args[2], args[3], args[4],
                   args[5]);
}

static PyObject *
n_rma_fetch_and_op(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("rma_fetch_and_op", nargs, 6) < 0) return NULL;
    return combine(CALL_FETCH_AND_OP, args[0], args[1], args[2], args[3], args[4],
                   args[5]);
}

/* Compare_and_swap on one integer: (table, origin, compare, result, rank, disp).
 * In the Python path's order: result gets the old value, then the compare
 * buffer is read, then the origin stored if they were equal. */
static PyObject *
n_rma_compare_and_swap(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    FastTarget *slot;
    Operand ops[3];             /* origin, compare, result */
    long long disp;
    char *there, old[8];
    int i, ok, reached;
    if (check_nargs("rma_compare_and_swap", nargs, 6) < 0) return NULL;
    reached = reach(args[0], args[4], KIND_ACCUMULATE, &t, &slot);
    if (reached != REACH_TARGET) {
        if (reached == REACH_NULL) DONE;
        MISS;
    }
    if (get_disp(args[5], 0, &disp) < 0)
        MISS;
    for (i = 0; i < 3; i++) {
        if (operand_get(args[1 + i], i == 2, &ops[i]) < 0) {
            while (i-- > 0)
                operand_release(&ops[i]);
            MISS;
        }
    }
    there = window_bytes(slot, disp, ops[0].view.len);
    ok = there != NULL && IS_INT(ops[0].etype) && ops[0].count == 1 &&
        ops[1].code == ops[0].code && ops[2].code == ops[0].code &&
        ops[1].count == 1 && ops[2].count == 1 &&
        !overlap(ops[2].view.buf, ops[2].view.len, there, ops[0].view.len) &&
        acc_lock(slot->acc_lock) == 0;
    if (ok) {
        size_t n = (size_t)ops[0].view.len;
        memcpy(old, there, n);
        memcpy(ops[2].view.buf, old, n);
        if (memcmp(old, ops[1].view.buf, n) == 0)
            memmove(there, ops[0].view.buf, n);
        acc_unlock(slot->acc_lock);
        issued(t);
    }
    for (i = 0; i < 3; i++)
        operand_release(&ops[i]);
    if (ok) DONE;
    MISS;
}

/* Flush, Flush_local (a rank) and Flush_all, Flush_local_all, Sync (None):
 * a memory fence, when a passive-target epoch covers the rank (R106). */
static PyObject *
n_rma_flush(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    long rank;
    if (check_nargs("rma_flush", nargs, 2) < 0) return NULL;
    t = (WinTable *)args[0];
    if (!g_fast_enabled || Py_TYPE(args[0]) != &WinTableType || !t->open)
        MISS;
    if (args[1] == Py_None) {
        if (!(t->lock_all || t->nlocked))
            MISS;
    }
    else {
        if (!PyLong_CheckExact(args[1]))
            MISS;
        rank = PyLong_AsLong(args[1]);
        if (rank == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            MISS;
        }
        if (rank != g_proc_null &&
                (rank < 0 || rank >= t->n || !(t->lock_all || t->targets[rank].locked)))
            MISS;
    }
    __atomic_thread_fence(SC);
    if (g_flush_yield && ++g_flushes % (unsigned long)g_flush_yield == 0)
        sched_yield();
    DONE;
}

static PyObject *
n_set_flush_yield(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    long every;
    if (check_nargs("set_flush_yield", nargs, 1) < 0) return NULL;
    every = PyLong_AsLong(args[0]);
    if (every == -1 && PyErr_Occurred()) return NULL;
    if (every < 0) {
        PyErr_SetString(PyExc_ValueError, "set_flush_yield(): expecting a count >= 0");
        return NULL;
    }
    g_flush_yield = every;
    Py_RETURN_NONE;
}

/* rma_setup(proc_null, ops): PROC_NULL's value and the Op objects named by RMA_OPS. */
static PyObject *
n_rma_setup(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int i;
    if (check_nargs("rma_setup", nargs, 2) < 0) return NULL;
    g_proc_null = PyLong_AsLong(args[0]);
    if (g_proc_null == -1 && PyErr_Occurred()) return NULL;
    if (!PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) != N_OPS) {
        PyErr_Format(PyExc_ValueError, "rma_setup(): expecting a tuple of %d ops", N_OPS);
        return NULL;
    }
    for (i = 0; i < N_OPS; i++) {
        PyObject *op = PyTuple_GET_ITEM(args[1], i);
        Py_INCREF(op);
        Py_XSETREF(g_ops[i], op);
    }
    Py_RETURN_NONE;
}

/* rma_enable(flag) -> previous flag: with False every rma_* call misses. */
static PyObject *
n_rma_enable(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int previous = g_fast_enabled, flag;
    if (check_nargs("rma_enable", nargs, 1) < 0) return NULL;
    if ((flag = PyObject_IsTrue(args[0])) < 0) return NULL;
    g_fast_enabled = flag;
    return PyBool_FromLong(previous);
}

/* ------------------------------------------------------------------ */
/* Synchronization fast path                                           */
/* ------------------------------------------------------------------ */

/* Lock, Unlock, Lock_all, Unlock_all, Fence, Start, Complete, Post, Wait and
 * Test in their common case: the arguments plain ints, no assertion beyond
 * what the call takes here, the epoch rules satisfied, and whatever they wait
 * for already there or arriving within a short spin.  They use the words
 * shmrma/control.py lays out and the same ticket lock, barrier and counts as
 * the Python paths (passive.py, active.py), so the two mix freely.  A miss
 * (False) changes nothing; the Python path then does the call, waiting with
 * the job's abort and dead-peer checks, or raises its error.  Lock and
 * Lock_all may instead return the ticket they drew when it is not admitted
 * yet, and Fence the barrier generation it arrived at: the Python path then
 * waits for that and finishes the call. */

#define LOCK_EXCLUSIVE 234
#define LOCK_SHARED 235

/* Spins of a wait before it is handed to Python (which spins again, yields
 * and sleeps, with its checks): long enough for a peer that is running, a
 * few microseconds. */


#define WORD(control, off) ((int32_t *)((control) + (off)))

/* Spin (the wait policy's first phase) until *cell == want (equal) or while
 * it holds it (!equal); 0 when the wait ended, -1 when the spin ran out. */
static int
spin_on(int32_t *cell, int32_t value, int equal)
{
    int64_t end = now_ns() + SYNC_SPIN_NS;
    long i;
    for (i = 1;; i++) {
        if ((__atomic_load_n(cell, SC) == value) == equal)
            return 0;
        cpu_relax();
        if ((i & 31) == 0 && now_ns() >= end)
            return -1;
    }
}

static int
spin_until(int32_t *cell, int32_t want)
{
    return spin_on(cell, want, 1);
}

static int
spin_while(int32_t *cell, int32_t old)
{
    return spin_on(cell, old, 0);
}

int
no_status(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) &&
        (nargs == 0 || args[0] == Py_None);
}

PyObject *
request_python_path(PyObject *method, PyObject *self, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *call[3];
    Py_ssize_t i, total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (total > 1) {
        PyErr_SetString(PyExc_TypeError, "Wait()/Test() take at most one argument (status)");
        return NULL;
    }
    call[0] = NULL;
    call[1] = self;
    for (i = 0; i < total; i++)
        call[2 + i] = args[i];
    return PyObject_Vectorcall(method, call + 1, (1 + nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET,
                               kwnames);
}

/* May a new access epoch open (R66; a fence epoch with RMA must be fenced)? */
static int
access_may_open(WinTable *t)
{
    return !t->lock_all && !t->start_open && !(t->fence_open && t->rma_since_fence);
}

/* Give back a lock held on the control block (passive.WindowLock.release). */
static void
lock_release(char *control, int held)
{
    if (held == HELD_EXCLUSIVE)
        cell_bump(WORD(control, g_off_read));
    if (held == HELD_EXCLUSIVE || held == HELD_SHARED)
        cell_bump(WORD(control, g_off_write));
}

/* Draw a ticket and spin for admission: HELD_* once admitted, or -1 with the
 * ticket in *ticket (a shared lock then still owes its read bump). */
static int
lock_acquire(char *control, int exclusive, int32_t *ticket)
{
    *ticket = (int32_t)__atomic_fetch_add((uint32_t *)WORD(control, g_off_ticket), 1u, SC);
    if (exclusive)
        return spin_until(WORD(control, g_off_write), *ticket) == 0 ? HELD_EXCLUSIVE : -1;
    if (spin_until(WORD(control, g_off_read), *ticket) < 0)
        return -1;
    cell_bump(WORD(control, g_off_read));
    return HELD_SHARED;
}

static inline int
exposed(char *control)
{
    return __atomic_load_n(WORD(control, g_off_exposed), SC) != 0;
}

/* rma_lock(table, rank, lock_type, assertion) -> True, False, or a ticket. */
static PyObject *
n_rma_lock(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    FastTarget *slot;
    long rank, type;
    int32_t ticket;
    int held;
    if (check_nargs("rma_lock", nargs, 4) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    rank = plain_int(args[1]);
    type = plain_int(args[2]);
    if (rank < 0 || rank >= t->n || (type != LOCK_EXCLUSIVE && type != LOCK_SHARED) ||
            plain_int(args[3]) != 0 || !access_may_open(t))
        MISS;
    slot = &t->targets[rank];
    if (slot->locked || slot->control == NULL)
        MISS;
    t->fence_open = 0;
    held = lock_acquire(slot->control, type == LOCK_EXCLUSIVE, &ticket);
    if (held < 0)
        return PyLong_FromLong(ticket);
    if (exposed(slot->control)) {       /* R102: the Python path raises */
        lock_release(slot->control, held);
        MISS;
    }
    slot->locked = held;
    t->nlocked++;
    __atomic_store_n(&t->holds[rank], held, __ATOMIC_RELAXED);    /* for timeout reports */
    DONE;
}

/* rma_unlock(table, rank) -> bool */
static PyObject *
n_rma_unlock(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    FastTarget *slot;
    long rank;
    if (check_nargs("rma_unlock", nargs, 2) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    rank = plain_int(args[1]);
    if (rank < 0 || rank >= t->n)
        MISS;
    slot = &t->targets[rank];
    if (!slot->locked || slot->control == NULL)
        MISS;
    __atomic_thread_fence(SC);          /* the epoch's RMA before the release (R96) */
    __atomic_store_n(&t->holds[rank], 0, __ATOMIC_RELAXED);
    lock_release(slot->control, slot->locked);
    slot->locked = HELD_NONE;
    t->nlocked--;
    DONE;
}

/* rma_lock_all(table, assertion) -> True, False, or (rank, ticket): ranks
 * below `rank` are held, `rank` drew `ticket` and is not admitted yet. */
static PyObject *
n_rma_lock_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    Py_ssize_t r, i;
    int32_t ticket;
    if (check_nargs("rma_lock_all", nargs, 2) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    if (plain_int(args[1]) != 0 || !access_may_open(t) || t->nlocked)
        MISS;
    for (r = 0; r < t->n; r++)
        if (t->targets[r].control == NULL)
            MISS;
    t->fence_open = 0;
    for (r = 0; r < t->n; r++) {
        char *control = t->targets[r].control;
        if (lock_acquire(control, 0, &ticket) < 0)
            return Py_BuildValue("(ni)", r, (int)ticket);
        if (exposed(control)) {         /* R102: give all back; Python raises */
            for (i = 0; i <= r; i++) {
                __atomic_store_n(&t->holds[i], 0, __ATOMIC_RELAXED);
                lock_release(t->targets[i].control, HELD_SHARED);
            }
            MISS;
        }
        __atomic_store_n(&t->holds[r], HELD_SHARED, __ATOMIC_RELAXED);
    }
    t->lock_all = 1;
    DONE;
}

/* rma_unlock_all(table) -> bool.  lock_all is 1 with the shared locks held,
 * 2 under MODE_NOCHECK. */
static PyObject *
n_rma_unlock_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    Py_ssize_t r;
    if (check_nargs("rma_unlock_all", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || !t->lock_all)
        MISS;
    __atomic_thread_fence(SC);
    if (t->lock_all == 1)
        for (r = 0; r < t->n; r++) {
            __atomic_store_n(&t->holds[r], 0, __ATOMIC_RELAXED);
            lock_release(t->targets[r].control, HELD_SHARED);
        }
    t->lock_all = 0;
    DONE;
}

static inline int32_t *
post_cell(WinTable *t, Py_ssize_t origin, Py_ssize_t target)
{
    return (int32_t *)(t->posts + (origin * t->n + target) * 8);
}

static PyObject *g_str_handle, *g_str_freed;

/* The window ranks of a Group whose live handle window.window_ranks has seen
 * (borrowed from the table's cache), or NULL without an error set. */
static PyObject *
cached_group(WinTable *t, PyObject *group)
{
    PyObject *handle, *freed, *ranks = NULL;
    handle = PyObject_GetAttr(group, g_str_handle);
    if (handle == NULL) {
        PyErr_Clear();
        return NULL;
    }
    freed = PyObject_GetAttr(handle, g_str_freed);
    if (freed == Py_False)
        ranks = PyDict_GetItemWithError(t->groups, handle);
    if (ranks == NULL)
        PyErr_Clear();
    Py_XDECREF(freed);
    Py_DECREF(handle);
    return ranks;
}

/* Window ranks of a Start or Post group (a tuple made by window_ranks). */
static int
group_ranks(WinTable *t, PyObject *ranks)
{
    Py_ssize_t i;
    if (ranks == NULL || !PyTuple_CheckExact(ranks))
        return -1;
    for (i = 0; i < PyTuple_GET_SIZE(ranks); i++) {
        long r = plain_int(PyTuple_GET_ITEM(ranks, i));
        if (r < 0 || r >= t->n || t->targets[r].control == NULL)
            return -1;
    }
    return 0;
}

/* rma_start(table, group, assertion) -> bool: every Post arrived (or NOCHECK),
 * each counted as matched, the epoch open. */
static PyObject *
n_rma_start(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    PyObject *ranks;
    Py_ssize_t i, k;
    long assertion;
    if (check_nargs("rma_start", nargs, 3) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    ranks = cached_group(t, args[1]);
    assertion = plain_int(args[2]);
    if ((assertion != 0 && assertion != MODE_NOCHECK) || !access_may_open(t) ||
            t->nlocked || t->ncounter || group_ranks(t, ranks) < 0)
        MISS;
    k = PyTuple_GET_SIZE(ranks);
    if (!(assertion & MODE_NOCHECK))
        for (i = 0; i < k; i++) {
            Py_ssize_t r = PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, i));
            if (spin_while(post_cell(t, t->me, r), (int32_t)t->targets[r].posts_used) < 0)
                MISS;           /* nothing taken yet: the Python path waits */
        }
    t->fence_open = 0;
    for (i = 0; i < k; i++) {
        FastTarget *slot = &t->targets[PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, i))];
        slot->posts_used++;
        slot->started = 1;
    }
    __atomic_thread_fence(SC);
    t->start_open = 1;
    DONE;
}

/* rma_complete(table) -> bool */
static PyObject *
n_rma_complete(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    Py_ssize_t r;
    if (check_nargs("rma_complete", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || !t->start_open)
        MISS;
    __atomic_thread_fence(SC);
    for (r = 0; r < t->n; r++)
        if (t->targets[r].started) {
            t->targets[r].started = 0;
            cell_bump(WORD(t->targets[r].control, g_off_completes));
        }
    t->start_open = 0;
    DONE;
}

/* rma_post(table, group, assertion) -> bool */
static PyObject *
n_rma_post(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    PyObject *ranks;
    Py_ssize_t i;
    long assertion;
    char *mine;
    if (check_nargs("rma_post", nargs, 3) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    ranks = cached_group(t, args[1]);
    assertion = plain_int(args[2]);
    if (assertion < 0 || (assertion & ~ALL_MODES) || t->post_group != Py_None ||
            (t->fence_open && t->rma_since_fence) || group_ranks(t, ranks) < 0)
        MISS;
    mine = t->targets[t->me].control;
    __atomic_store_n(WORD(mine, g_off_exposed), 1, SC);
    if (__atomic_load_n(WORD(mine, g_off_ticket), SC) !=
            __atomic_load_n(WORD(mine, g_off_write), SC)) {
        __atomic_store_n(WORD(mine, g_off_exposed), 0, SC);
        MISS;                   /* locked (R102): the Python path raises */
    }
    t->fence_open = 0;
    t->completes_due += (uint32_t)PyTuple_GET_SIZE(ranks);
    Py_INCREF(ranks);
    Py_SETREF(t->post_group, ranks);
    __atomic_thread_fence(SC);
    for (i = 0; i < PyTuple_GET_SIZE(ranks); i++)
        cell_bump(post_cell(t, PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, i)), t->me));
    DONE;
}

/* Have the Completes the Posts await arrived (counts wrap at 2**32)? */
static inline int
completes_arrived(WinTable *t)
{
    uint32_t count = (uint32_t)__atomic_load_n(
        WORD(t->targets[t->me].control, g_off_completes), SC);
    return (int32_t)(count - t->completes_due) >= 0;
}

static void
end_exposure(WinTable *t)
{
    __atomic_thread_fence(SC);
    __atomic_store_n(WORD(t->targets[t->me].control, g_off_exposed), 0, SC);
    Py_INCREF(Py_None);
    Py_SETREF(t->post_group, Py_None);
}

/* rma_wait(table) -> bool */
static PyObject *
n_rma_wait(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    int64_t end;
    long i;
    if (check_nargs("rma_wait", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || t->post_group == Py_None)
        MISS;
    end = now_ns() + SYNC_SPIN_NS;
    for (i = 1; !completes_arrived(t); i++) {
        cpu_relax();
        if ((i & 31) == 0 && now_ns() >= end)
            MISS;
    }
    end_exposure(t);
    DONE;
}

/* rma_test(table) -> True (closed), False (not yet), None (the Python path) */
static PyObject *
n_rma_test(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    if (check_nargs("rma_test", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || t->post_group == Py_None)
        Py_RETURN_NONE;
    if (!completes_arrived(t))
        Py_RETURN_FALSE;
    end_exposure(t);
    Py_RETURN_TRUE;
}

/* ------------------------------------------------------------------ */
/* module                                                               */
/* ------------------------------------------------------------------ */

static PyMethodDef native_methods[] = {
    FC(rma_put, "rma_put(table, origin, rank, target) -> bool: Put done, or False "
                "(nothing touched: take the Python path)."),
    FC(rma_get, "rma_get(table, origin, rank, target) -> bool: Get done, or False."),
    FC(rma_accumulate, "rma_accumulate(table, origin, rank, target, op) -> bool."),
    FC(rma_get_accumulate, "rma_get_accumulate(table, origin, result, rank, target, op) "
                           "-> bool."),
    FC(rma_fetch_and_op, "rma_fetch_and_op(table, origin, result, rank, disp, op) -> bool."),
    FC(rma_compare_and_swap, "rma_compare_and_swap(table, origin, compare, result, rank, "
                             "disp) -> bool."),
    FC(set_flush_yield, "set_flush_yield(n): yield the CPU every n-th fast-path Flush "
       "(0: never); set when ranks outnumber CPUs."),
    FC(rma_flush, "rma_flush(table, rank or None) -> bool: memory fence done, or False."),
    FC(rma_setup, "rma_setup(proc_null, ops): PROC_NULL and the Op objects named by RMA_OPS."),
    FC(rma_lock, "rma_lock(table, rank, lock_type, assertion) -> True, False or a ticket."),
    FC(rma_unlock, "rma_unlock(table, rank) -> bool."),
    FC(rma_lock_all, "rma_lock_all(table, assertion) -> True, False or (rank, ticket)."),
    FC(rma_unlock_all, "rma_unlock_all(table) -> bool."),
    FC(rma_start, "rma_start(table, group, assertion) -> bool."),
    FC(rma_complete, "rma_complete(table) -> bool."),
    FC(rma_post, "rma_post(table, group, assertion) -> bool."),
    FC(rma_wait, "rma_wait(table) -> bool."),
    FC(rma_test, "rma_test(table) -> True, False, or None for the Python path."),
    FC(rma_enable, "rma_enable(flag) -> previous: False makes every rma_* call miss."),
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "shmrma._native",
    "Native atomic layer of shmrma: seq_cst atomics on raw addresses, "
    "futex wait cells, memcpy; the RMA fast path (see shmrma/fastpath.py).",
    -1,
    native_methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *mod;
    g_str_handle = PyUnicode_InternFromString("_handle");
    g_str_freed = PyUnicode_InternFromString("freed");
    if (g_str_handle == NULL || g_str_freed == NULL)
        return NULL;
    mod = PyModule_Create(&native_module);
    if (mod == NULL)
        return NULL;
    if (atomic_init(mod) < 0 || buffers_init(mod) < 0 || op_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (table_init(mod) < 0 || handle_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (transport_init(mod) < 0 || collectives_init(mod) < 0 || pickles_init(mod) < 0 ||
            nbc_init(mod) < 0 || counters_init(mod) < 0 || winbarrier_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddIntConstant(mod, "LOCK_EXCLUSIVE", LOCK_EXCLUSIVE) < 0 ||
        PyModule_AddIntConstant(mod, "LOCK_SHARED", LOCK_SHARED) < 0 ||
        PyModule_AddIntConstant(mod, "MODE_NOCHECK", MODE_NOCHECK) < 0 ||
        PyModule_AddIntConstant(mod, "MODE_NOPRECEDE", MODE_NOPRECEDE) < 0 ||
        PyModule_AddIntConstant(mod, "MODE_NOSUCCEED", MODE_NOSUCCEED) < 0 ||
        PyModule_AddIntConstant(mod, "ALL_MODES", ALL_MODES) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
