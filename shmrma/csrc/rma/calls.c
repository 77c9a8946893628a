/*
 * The RMA fast path: the common case of the communication calls and flushes
 * (shmrma/rma/calls.py) done in C; see shmrma/rma/fastpath.py for the contract.  Each
 * rma_* function returns True when it performed the call and False ("miss")
 * when it did not touch anything, and then shmrma/rma/calls.py runs the Python path,
 * which raises whatever error the call deserves.  So every check here only
 * decides "handled or not": on any doubt, miss.
 */
#include "rma.h"

long g_proc_null = -1;

/* A program that polls a flag (Fetch_and_op NO_OP or Get, then Flush, in a loop)
 * never blocks in shmrma, so with more ranks than cores the rank it waits for
 * may not run until the scheduler's time slice ends: a token ring of 3 ranks on
 * 2 cores took 10-13 ms per round.  When job.py finds the ranks outnumber the
 * CPUs it sets g_flush_yield, and every g_flush_yield-th Flush on the fast path
 * yields the CPU, as MPICH's progress engine does after a number of polls.
 * 0 (the default) never yields. */
static long g_flush_yield = 0;
static unsigned long g_flushes = 0;

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

/* Both inline: the accumulating calls take the lock without a call (GCC's
 * heuristics inlined them in the larger unit all the C once was, not here). */

/* Spins of a contended acquire before missing: long enough for a holder in
 * C (well under a microsecond), short enough not to wait on a holder in
 * Python, which the Python path waits for with the job's abort checks. */
#define ACC_LOCK_SPIN 256

static inline int
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

static inline void
acc_unlock(int32_t *cell)
{
    __atomic_store_n(cell, 0, SC);
    wake_if_sleepers(cell);
}

/* --- the calls --- */

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
    if (get_disp(args[3], 1, &disp) < 0 || message_get(args[1], get, 1, &origin) < 0)
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
    return result->datatype == origin->datatype && result->view.len == n &&
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
            message_get(origin_obj, call == CALL_GET_ACCUMULATE, 1, &origin) < 0)
        MISS;
    if (result_obj != NULL) {
        if (message_get(result_obj, 1, 1, &result) < 0) {
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
        if (message_get(args[1 + i], i == 2, 1, &ops[i]) < 0) {
            while (i-- > 0)
                operand_release(&ops[i]);
            MISS;
        }
    }
    there = window_bytes(slot, disp, ops[0].view.len);
    ok = there != NULL && IS_INT(ops[0].etype) && ops[0].count == 1 &&
        ops[1].datatype == ops[0].datatype && ops[2].datatype == ops[0].datatype &&
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

static PyMethodDef rma_functions[] = {
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
    FC(rma_enable, "rma_enable(flag) -> previous: False makes every rma_* call miss."),
    {NULL, NULL, 0, NULL}
};

int
rma_calls_init(PyObject *module)
{
    return PyModule_AddFunctions(module, rma_functions);
}
