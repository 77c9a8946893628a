/*
 * The requests of the proposal's synchronization counters (shmrma/rma/counters.py)
 * in C: Start, Wait and Test of Sync_ops_init and Sync_object_init requests,
 * with the automatic restart.
 *
 * counters._SyncRequest derives from SyncCore, whose fields are the request's
 * state (Python reads and writes the same fields).  C takes the common case
 * under the fast path's contract: it completes the call, or it touches nothing
 * and hands the call to the Python methods (_start, and Request.Wait/Test),
 * which raise the error the call deserves or sleep with the job's abort checks.
 *
 * A Sync_ops request opens a counter epoch to its target in the window's table
 * while active (A14); completing it fences (the covered RMA first, A15),
 * decrements the target's counter once and rings its owner's doorbell.  A
 * Sync_object request adds its count to the counter at every Start (early
 * signals stay banked, A16) and completes when the counter is back to 0.
 */
#include "rma.h"

/* The offset of the generation word in a counter's line (counters.py). */
static Py_ssize_t g_off_generation = -1;
static double g_wait_slice;
static PyObject *g_python_wait, *g_python_test;   /* request.Request.Wait and .Test */

typedef struct {
    PyObject_HEAD
    int kind;                   /* SYNC_OPS or SYNC_OBJECT; 0: not bound, C declines */
    unsigned long long counter; /* the counter's wait cell */
    int generation;             /* the handle's (Sync_ops: checked at every signal) */
    unsigned long long doorbell;    /* Sync_ops: the counter owner's doorbell */
    int count;                  /* Sync_object: added at every Start */
    int target, mode;           /* Sync_ops: window rank and MODE_WIN_* bits */
    char restart, active, completed, done, null_;
    /* for --trace's arrows (observe/links.py): Sync_ops, its last signal took the
     * counter to 0 (it ended a wait); Sync_object, the count it last added left
     * the counter above 0 (its round waits for a signal), and whether the round
     * it last completed did */
    char zeroed, armed_positive, waited_round;
    PyObject *table;            /* the window's WinTable */
} SyncCore;

#define CELL(address) ((int32_t *)(uintptr_t)(address))

/* The window's table when C may run the request's calls, else NULL. */
static WinTable *
live_table(SyncCore *s)
{
    WinTable *t = (WinTable *)s->table;
    if (!g_fast_enabled || g_off_generation < 0 || s->kind == 0 || s->null_ || t == NULL ||
            Py_TYPE(t) != &WinTableType || !t->open)
        return NULL;
    if (s->kind == SYNC_OPS && (s->target < 0 || s->target >= t->n))
        return NULL;
    return t;
}

static void
deactivate(SyncCore *s, WinTable *t)
{
    s->active = 0;
    t->sync_active--;
    if (s->kind == SYNC_OPS)
        counter_epoch_change(t, s->target, s->mode, -1);
}

/* Sync_object: add the count (arm); 0 when that left the counter negative
 * (more early signals than the count), after taking it back. */
static int
arm(SyncCore *s)
{
    int32_t before = __atomic_fetch_add(CELL(s->counter), s->count, SC);
    if ((int64_t)before + s->count < 0) {
        __atomic_fetch_add(CELL(s->counter), -s->count, SC);
        return 0;
    }
    s->done = 0;
    s->armed_positive = (int64_t)before + s->count > 0;
    return 1;
}

static PyObject *
sync_start(SyncCore *s, PyObject *unused)
{
    WinTable *t = live_table(s);
    if (t == NULL || s->active)
        return PyObject_CallMethod((PyObject *)s, "_start", NULL);
    if (s->kind == SYNC_OPS) {
        /* A14: no Start epoch; a fence epoch may end only when it holds no RMA */
        if (t->start_open || (t->fence_open && t->rma_since_fence))
            return PyObject_CallMethod((PyObject *)s, "_start", NULL);
        t->fence_open = 0;
        counter_epoch_change(t, s->target, s->mode, 1);
    } else if (!arm(s)) {
        return PyObject_CallMethod((PyObject *)s, "_start", NULL);
    }
    s->active = 1;
    s->completed = 0;
    t->sync_active++;
    Py_RETURN_NONE;
}

/* The table when C may complete an active request here: no status asked for. */
static WinTable *
completable(SyncCore *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return s->active && no_status(args, nargs, kwnames) ? live_table(s) : NULL;
}

/* Signal the target's counter (Sync_ops); 0 when the counter was freed (the
 * Python path raises ERR_ARG), nothing done. */
static int
signal_target(SyncCore *s, WinTable *t)
{
    int32_t *counter = CELL(s->counter);
    __atomic_thread_fence(SC);      /* the covered RMA reach the target first (A15) */
    if (__atomic_load_n((int32_t *)((char *)counter + g_off_generation), SC) != s->generation)
        return 0;
    /* Only the owner's Sync_object request sleeps on the counter, and it completes
     * at 0 or below: a decrement that leaves the counter positive cannot end its
     * wait, so it wakes no one (a sleeper woken by each of a count of 2 signals
     * would be scheduled once for nothing).  The doorbell still rings at every
     * signal, for waits on several requests at once. */
    int32_t before = __atomic_fetch_add(counter, -1, SC);
    if (before <= 1)
        wake_if_sleepers(counter);
    s->zeroed = before == 1;
    cell_bump(CELL(s->doorbell));
    if (!s->restart)
        deactivate(s, t);
    s->completed = 1;
    return 1;
}

/* Sync_object: the counter reached 0; complete, re-arming a restart request. */
static PyObject *
finish_object(SyncCore *s, WinTable *t)
{
    __atomic_thread_fence(SC);      /* the signalling origins' data is visible here (R158) */
    s->done = 1;
    s->waited_round = s->armed_positive;
    if (!s->restart) {
        deactivate(s, t);
    } else if (!arm(s)) {
        /* more early signals than the count: the Python path deactivates and
         * raises ERR_WIN_COUNTER, the counter as it is */
        PyObject *result = PyObject_CallMethod((PyObject *)s, "_complete", NULL);
        if (result == NULL)
            return NULL;
        Py_DECREF(result);
    }
    s->completed = 1;
    Py_RETURN_TRUE;
}

/* Sync_object: done, or the counter back to 0 (early signals: below)? */
static int
counter_reached(void *s)
{
    SyncCore *r = (SyncCore *)s;
    return r->done || __atomic_load_n(CELL(r->counter), SC) <= 0;
}

static PyObject *
sync_wait(SyncCore *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    WinTable *t = completable(s, args, nargs, kwnames);
    int rc;
    if (t == NULL)
        return request_python_path(g_python_wait, (PyObject *)s, args, nargs, kwnames);
    if (s->kind == SYNC_OPS) {
        if (!signal_target(s, t))
            return request_python_path(g_python_wait, (PyObject *)s, args, nargs, kwnames);
        Py_RETURN_TRUE;
    }
    /* the one wait policy, on the counter's own cell */
    rc = wait_bell(CELL(s->counter), counter_reached, s, g_wait_slice);
    if (rc < 0)
        return NULL;
    if (rc == 0)        /* a long wait: Python goes on with the abort checks */
        return request_python_path(g_python_wait, (PyObject *)s, args, nargs, kwnames);
    return finish_object(s, t);
}

static PyObject *
sync_test(SyncCore *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    WinTable *t = completable(s, args, nargs, kwnames);
    if (t == NULL)
        return request_python_path(g_python_test, (PyObject *)s, args, nargs, kwnames);
    if (s->kind == SYNC_OPS) {
        if (!signal_target(s, t))
            return request_python_path(g_python_test, (PyObject *)s, args, nargs, kwnames);
        Py_RETURN_TRUE;
    }
    if (!counter_reached(s))
        /* not yet: the Python path makes progress on messages and says False */
        return request_python_path(g_python_test, (PyObject *)s, args, nargs, kwnames);
    return finish_object(s, t);
}

static void
sync_dealloc(SyncCore *s)
{
    PyObject_GC_UnTrack(s);
    Py_CLEAR(s->table);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int
sync_traverse(SyncCore *s, visitproc visit, void *arg)
{
    Py_VISIT(s->table);
    return 0;
}

static int
sync_clear(SyncCore *s)
{
    Py_CLEAR(s->table);
    return 0;
}

static PyMemberDef sync_members[] = {
    {"_kind", T_INT, offsetof(SyncCore, kind), 0, "1 Sync_ops, 2 Sync_object, 0 unbound"},
    {"_counter", T_ULONGLONG, offsetof(SyncCore, counter), 0, "the counter's address"},
    {"_generation", T_INT, offsetof(SyncCore, generation), 0, "the handle's generation"},
    {"_doorbell", T_ULONGLONG, offsetof(SyncCore, doorbell), 0,
     "Sync_ops: the owner's doorbell address"},
    {"_count", T_INT, offsetof(SyncCore, count), 0, "Sync_object: the count"},
    {"_target", T_INT, offsetof(SyncCore, target), 0, "Sync_ops: the target's window rank"},
    {"_mode", T_INT, offsetof(SyncCore, mode), 0, "Sync_ops: MODE_WIN_* bits"},
    {"_restart", T_BOOL, offsetof(SyncCore, restart), 0, "re-arms itself (R163)"},
    {"_active", T_BOOL, offsetof(SyncCore, active), 0, "started, not completed"},
    {"_completed", T_BOOL, offsetof(SyncCore, completed), 0,
     "completed since its last Start (A23: Free allowed)"},
    {"_done", T_BOOL, offsetof(SyncCore, done), 0, "Sync_object: the counter reached 0"},
    {"_null", T_BOOL, offsetof(SyncCore, null_), 0, "freed"},
    {"_zeroed", T_BOOL, offsetof(SyncCore, zeroed), 0,
     "Sync_ops: its last signal took the counter to 0"},
    {"_armed_positive", T_BOOL, offsetof(SyncCore, armed_positive), 0,
     "Sync_object: its round waits for a signal"},
    {"_waited_round", T_BOOL, offsetof(SyncCore, waited_round), 0,
     "Sync_object: the round it last completed waited for a signal"},
    {"_table", T_OBJECT, offsetof(SyncCore, table), 0, "the window's WinTable"},
    {NULL}
};

static PyMethodDef sync_methods[] = {
    {"Start", (PyCFunction)sync_start, METH_NOARGS, "Start(): as Prequest.Start."},
    {"Wait", (PyCFunction)(void (*)(void))sync_wait, METH_FASTCALL | METH_KEYWORDS,
     "Wait(status=None): as Request.Wait."},
    {"Test", (PyCFunction)(void (*)(void))sync_test, METH_FASTCALL | METH_KEYWORDS,
     "Test(status=None) -> bool: as Request.Test."},
    {NULL}
};

static PyTypeObject SyncCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.SyncCore",
    .tp_basicsize = sizeof(SyncCore),
    .tp_dealloc = (destructor)sync_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The state of a synchronization request, and its Start, Wait and Test in C "
              "(counters._SyncRequest derives from it).",
    .tp_traverse = (traverseproc)sync_traverse,
    .tp_clear = (inquiry)sync_clear,
    .tp_methods = sync_methods,
    .tp_members = sync_members,
    .tp_new = PyType_GenericNew,
};

/* counters_setup(off_generation, wait_slice, python_wait, python_test) */
static PyObject *
n_counters_setup(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t off;
    double slice;
    if (check_nargs("counters_setup", nargs, 4) < 0)
        return NULL;
    if ((off = PyLong_AsSsize_t(args[0])) < 0 || (slice = PyFloat_AsDouble(args[1])) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "counters_setup: negative offset or slice");
        return NULL;
    }
    g_off_generation = off;
    g_wait_slice = slice;
    Py_INCREF(args[2]);
    Py_INCREF(args[3]);
    Py_XSETREF(g_python_wait, args[2]);
    Py_XSETREF(g_python_test, args[3]);
    Py_RETURN_NONE;
}

static PyMethodDef counters_functions[] = {
    {"counters_setup", (PyCFunction)(void (*)(void))n_counters_setup, METH_FASTCALL,
     "counters_setup(off_generation, wait_slice, python_wait, python_test): what the "
     "synchronization requests need of counters.py, job.py and request.py."},
    {NULL}
};

int
counters_init(PyObject *module)
{
    if (PyType_Ready(&SyncCoreType) < 0)
        return -1;
    Py_INCREF(&SyncCoreType);
    if (PyModule_AddObject(module, "SyncCore", (PyObject *)&SyncCoreType) < 0) {
        Py_DECREF(&SyncCoreType);
        return -1;
    }
    if (PyModule_AddIntConstant(module, "SYNC_OPS", SYNC_OPS) < 0 ||
            PyModule_AddIntConstant(module, "SYNC_OBJECT", SYNC_OBJECT) < 0)
        return -1;
    return PyModule_AddFunctions(module, counters_functions);
}
