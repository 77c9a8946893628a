/*
 * The one barrier of a window (shmrma/rma/winbarrier.py) in C: Fence, the
 * amendment's Barrier and Ibarrier, and Wait and Test of Ibarrier's request.
 *
 * Every rank's control block counts the window barriers it entered; the
 * table's barrier_seq is how many this rank entered.  Entering checks the
 * fence's epoch rules, counts this rank in, rings every member's doorbell and
 * opens a fence epoch at once; the barrier completes when every member's count
 * reached this rank's (R168).  A Fence is a barrier that waits (every RMA call
 * is complete when it returns), Ibarrier one that does not.  Counting per rank,
 * rather than in one shared counter, lets a rank be in a later barrier while
 * others still test an earlier one, and tells RMA issued after Ibarrier whether
 * its target entered (A3).  C takes the common case under the fast path's
 * contract; the Python methods take the rest (errors, a status, long waits with
 * the job's abort checks).
 */
#include "rma.h"

static PyTypeObject *g_request_type;            /* winbarrier.BarrierRequest */
static PyObject *g_python_wait, *g_python_test;   /* request.Request.Wait and .Test */
static double g_wait_slice;

typedef struct {
    PyObject_HEAD
    PyObject *table;            /* the window's WinTable */
    PyObject *state;            /* the window's state (the Python path's) */
    uint32_t seq;               /* the barrier: this rank's barrier_seq at its entry */
    char done, null_;
} BarrierCore;

/* Has rank entered the window barrier this rank entered last (Ibarrier, A3)? */
int
barrier_entered(WinTable *t, Py_ssize_t rank)
{
    char *control = t->targets[rank].control;
    uint32_t entered;
    if (control == NULL)
        return 0;
    entered = (uint32_t)__atomic_load_n((int32_t *)(control + g_off_entered), SC);
    return (int32_t)(entered - t->barrier_seq) >= 0;
}

/* Has every member entered this request's barrier?  On the first yes, the
 * members' RMA before the barrier is visible here and RMA no longer waits. */
/* Has every member entered this rank's latest barrier?  The first yes makes
 * the members' RMA before it visible here and lets RMA go without waiting. */
static int
all_entered(WinTable *t)
{
    Py_ssize_t rank;
    for (rank = 0; rank < t->n; rank++)
        if (!barrier_entered(t, rank))
            return 0;
    __atomic_thread_fence(SC);
    t->barrier_pending = 0;
    return 1;
}

static int
poll(BarrierCore *b, WinTable *t)
{
    if (b->done)
        return 1;
    if (t->barrier_seq == b->seq && !all_entered(t))
        return 0;
    b->done = 1;            /* a later barrier of this rank completes this one too */
    return 1;
}

/* The table when this rank may enter a barrier under `assertion` now (the
 * fence's rules, epoch.before_fence), else NULL: nothing changed. */
static WinTable *
may_enter(PyObject *table, PyObject *assertion_obj, long *assertion)
{
    WinTable *t = sync_table(table);
    Py_ssize_t rank;
    if (t == NULL)
        return NULL;
    *assertion = plain_int(assertion_obj);
    if (*assertion < 0 || (*assertion & ~g_all_modes) || t->lock_all || t->nlocked ||
            t->start_open || t->post_group != Py_None || t->ncounter ||
            ((*assertion & g_mode_noprecede) && t->fence_open && t->rma_since_fence))
        return NULL;
    for (rank = 0; rank < t->n; rank++)
        if (t->targets[rank].control == NULL || t->targets[rank].doorbell == NULL)
            return NULL;
    return t;
}

/* Count this rank into its next barrier (winbarrier.enter's counterpart). */
static void
enter(WinTable *t, long assertion)
{
    Py_ssize_t rank;
    __atomic_thread_fence(SC);      /* RMA issued before it is visible before the entry */
    t->barrier_seq++;
    t->barrier_pending = 1;
    cell_bump((int32_t *)(t->targets[t->me].control + g_off_entered));
    for (rank = 0; rank < t->n; rank++)     /* members waiting on their doorbell re-check */
        if (rank != t->me)
            cell_bump(t->targets[rank].doorbell);
    t->fence_open = !(assertion & g_mode_nosucceed);
    t->rma_since_fence = 0;
}


/* all_entered() for wait_bell */
static int
poll_table(void *t)
{
    return all_entered((WinTable *)t);
}

/* win_barrier(table, assertion) -> True (passed), False (miss), or the
 * barrier entered and still awaited after a wait slice (the Python path waits
 * on, with the job's abort checks): Fence and the amendment's Barrier. */
static PyObject *
n_win_barrier(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    long assertion, i;
    int rc;
    if (check_nargs("win_barrier", nargs, 2) < 0)
        return NULL;
    if (!(t = may_enter(args[0], args[1], &assertion)))
        Py_RETURN_FALSE;
    enter(t, assertion);
    /* the wait policy's spin, on the counts themselves (a running peer enters
     * within it; no doorbell read in between), then its wait on the doorbell */
    for (i = 0; i < g_spin; i++) {
        if (all_entered(t))
            Py_RETURN_TRUE;
        cpu_relax();
    }
    rc = wait_bell(t->targets[t->me].doorbell, poll_table, t, g_wait_slice);
    if (rc < 0)
        return NULL;
    if (rc == 0)
        return PyLong_FromUnsignedLong(t->barrier_seq);
    Py_RETURN_TRUE;
}

/* win_ibarrier(table, assertion, state) -> a BarrierRequest, or False (miss). */
static PyObject *
n_win_ibarrier(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    BarrierCore *b;
    long assertion;
    if (check_nargs("win_ibarrier", nargs, 3) < 0)
        return NULL;
    if (g_request_type == NULL || !(t = may_enter(args[0], args[1], &assertion)))
        Py_RETURN_FALSE;
    b = (BarrierCore *)g_request_type->tp_alloc(g_request_type, 0);
    if (b == NULL)
        return NULL;
    enter(t, assertion);
    Py_INCREF(args[0]);
    Py_INCREF(args[2]);
    b->table = args[0];
    b->state = args[2];
    b->seq = t->barrier_seq;
    return (PyObject *)b;
}

/* The table when C may complete the request here: live, no status asked for. */
static WinTable *
completable(BarrierCore *b, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (b->null_ || !no_status(args, nargs, kwnames))
        return NULL;
    return sync_table(b->table);
}

/* poll() for wait_bell */
static int
poll_request(void *b)
{
    return poll((BarrierCore *)b, (WinTable *)((BarrierCore *)b)->table);
}

static PyObject *
bar_wait(BarrierCore *b, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    WinTable *t = completable(b, args, nargs, kwnames);
    int rc;
    if (t == NULL)
        return request_python_path(g_python_wait, (PyObject *)b, args, nargs, kwnames);
    rc = wait_bell(t->targets[t->me].doorbell, poll_request, b, g_wait_slice);
    if (rc < 0)
        return NULL;
    if (rc == 0)        /* a long wait: Python waits on, with the job's abort checks */
        return request_python_path(g_python_wait, (PyObject *)b, args, nargs, kwnames);
    b->null_ = 1;
    Py_RETURN_TRUE;
}

static PyObject *
bar_test(BarrierCore *b, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    WinTable *t = completable(b, args, nargs, kwnames);
    if (t == NULL || !poll(b, t))   /* not yet: Python makes progress on messages */
        return request_python_path(g_python_test, (PyObject *)b, args, nargs, kwnames);
    b->null_ = 1;
    Py_RETURN_TRUE;
}

static void
bar_dealloc(BarrierCore *b)
{
    PyObject_GC_UnTrack(b);
    Py_CLEAR(b->table);
    Py_CLEAR(b->state);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static int
bar_traverse(BarrierCore *b, visitproc visit, void *arg)
{
    Py_VISIT(b->table);
    Py_VISIT(b->state);
    return 0;
}

static int
bar_clear(BarrierCore *b)
{
    Py_CLEAR(b->table);
    Py_CLEAR(b->state);
    return 0;
}

static PyMemberDef bar_members[] = {
    {"_table", T_OBJECT, offsetof(BarrierCore, table), 0, "the window's WinTable"},
    {"_state", T_OBJECT, offsetof(BarrierCore, state), 0, "the window's state"},
    {"_seq", T_UINT, offsetof(BarrierCore, seq), 0, "the barrier it waits for"},
    {"_done", T_BOOL, offsetof(BarrierCore, done), 0, "every member entered"},
    {"_null", T_BOOL, offsetof(BarrierCore, null_), 0, "completed and reported"},
    {NULL}
};

static PyMethodDef bar_methods[] = {
    {"Wait", (PyCFunction)(void (*)(void))bar_wait, METH_FASTCALL | METH_KEYWORDS,
     "Wait(status=None): as Request.Wait."},
    {"Test", (PyCFunction)(void (*)(void))bar_test, METH_FASTCALL | METH_KEYWORDS,
     "Test(status=None) -> bool: as Request.Test."},
    {NULL}
};

static PyTypeObject BarrierCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.BarrierCore",
    .tp_basicsize = sizeof(BarrierCore),
    .tp_dealloc = (destructor)bar_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The request of a window barrier, its Wait and Test in C "
              "(winbarrier.BarrierRequest derives from it).",
    .tp_traverse = (traverseproc)bar_traverse,
    .tp_clear = (inquiry)bar_clear,
    .tp_methods = bar_methods,
    .tp_members = bar_members,
    .tp_new = PyType_GenericNew,
};

/* winbarrier_setup(request_type, wait_slice, python_wait, python_test) */
static PyObject *
n_winbarrier_setup(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    double slice;
    if (check_nargs("winbarrier_setup", nargs, 4) < 0)
        return NULL;
    if (!PyType_Check(args[0]) || !PyType_IsSubtype((PyTypeObject *)args[0], &BarrierCoreType)) {
        PyErr_SetString(PyExc_TypeError, "winbarrier_setup: a BarrierCore subclass first");
        return NULL;
    }
    if ((slice = PyFloat_AsDouble(args[1])) < 0 && PyErr_Occurred())
        return NULL;
    g_wait_slice = slice;
    Py_INCREF(args[0]);
    Py_INCREF(args[2]);
    Py_INCREF(args[3]);
    Py_XSETREF(g_request_type, (PyTypeObject *)args[0]);
    Py_XSETREF(g_python_wait, args[2]);
    Py_XSETREF(g_python_test, args[3]);
    Py_RETURN_NONE;
}

static PyMethodDef winbarrier_functions[] = {
    {"win_barrier", (PyCFunction)(void (*)(void))n_win_barrier, METH_FASTCALL,
     "win_barrier(table, assertion) -> True, False (the Python path runs), or the "
     "barrier entered and still awaited: Fence and Barrier."},
    {"win_ibarrier", (PyCFunction)(void (*)(void))n_win_ibarrier, METH_FASTCALL,
     "win_ibarrier(table, assertion, state) -> a BarrierRequest, or False (the Python "
     "path runs)."},
    {"winbarrier_setup", (PyCFunction)(void (*)(void))n_winbarrier_setup, METH_FASTCALL,
     "winbarrier_setup(request_type, wait_slice, python_wait, python_test)."},
    {NULL}
};

int
winbarrier_init(PyObject *module)
{
    if (PyType_Ready(&BarrierCoreType) < 0)
        return -1;
    Py_INCREF(&BarrierCoreType);
    if (PyModule_AddObject(module, "BarrierCore", (PyObject *)&BarrierCoreType) < 0) {
        Py_DECREF(&BarrierCoreType);
        return -1;
    }
    return PyModule_AddFunctions(module, winbarrier_functions);
}
