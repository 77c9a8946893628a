/*
 * The channel of the nonblocking collectives in C: a communicator's channel as
 * the C path sees it, on shmrma/coll/channel.py's protocol (read its docstring
 * first), and the finishing of its steps in order, which the operations
 * started in C (coll/nonblocking.c) and in Python share.
 *
 * ChannelCore holds what the channel's protocol keeps per communicator (the
 * area, the members' doorbells, the steps started, deposited and finished
 * here, the operations outstanding in step order); nbcarea.Channel derives
 * from it and runs the general case in Python on the same state.
 */
#include "coll.h"

/* What the channel reads of the area's layout and of the Python helpers;
 * nbc_setup() sets them with the rest (coll/nonblocking.c). */
Py_ssize_t LINE, OFF_GATED;
PyObject *g_active;                 /* nbcarea._active */

/* --- the area --------------------------------------------------------------- */

static inline int64_t *
finished_at(ChannelCore *c, int rank)
{
    return (int64_t *)(c->base + LINE * (1 + rank));
}

long long
slowest(ChannelCore *c)
{
    long long least = c->finished;
    int r;
    for (r = 0; r < c->n; r++)
        if (r != c->me) {
            long long f = __atomic_load_n(finished_at(c, r), SC);
            if (f < least)
                least = f;
        }
    return least;
}

/* --- finishing steps (nbcarea.Channel._finish_steps) -------------------------- */

static int
op_done(PyObject *op)
{
    PyObject *v;
    int read, deposited;
    if (PyObject_TypeCheck(op, &NbcOpType))
        return ((NbcOp *)op)->read && ((NbcOp *)op)->deposited;
    if ((v = PyObject_GetAttrString(op, "read")) == NULL)
        return -1;
    read = PyObject_IsTrue(v);
    Py_DECREF(v);
    if ((v = PyObject_GetAttrString(op, "deposited")) == NULL)
        return -1;
    deposited = PyObject_IsTrue(v);
    Py_DECREF(v);
    return read > 0 && deposited > 0;
}

static long long
op_step(PyObject *op)
{
    PyObject *v;
    long long step;
    if (PyObject_TypeCheck(op, &NbcOpType))
        return ((NbcOp *)op)->step;
    if ((v = PyObject_GetAttrString(op, "step")) == NULL)
        return -1;
    step = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return step;
}

static void
ring_all_others(ChannelCore *c)
{
    int r;
    for (r = 0; r < c->n; r++)
        if (r != c->me)
            cell_bump(c->doorbells[r]);
}

/* Pop the done operations at the head, in step order, and publish the count. */
int
finish_steps(ChannelCore *c)
{
    long long before = c->finished;
    while (PyList_GET_SIZE(c->operations) > 0) {
        PyObject *head = PyList_GET_ITEM(c->operations, 0);
        int done = op_done(head);
        long long step;
        if (done < 0)
            return -1;
        if (!done)
            break;
        if ((step = op_step(head)) < 0 && PyErr_Occurred())
            return -1;
        c->finished = step;
        if (PyList_SetSlice(c->operations, 0, 1, NULL) < 0)
            return -1;
    }
    if (c->finished != before && c->n > 1) {
        __atomic_store_n(finished_at(c, c->me), (int64_t)c->finished, SC);
        if (__atomic_load_n((int32_t *)(c->base + OFF_GATED), SC))
            ring_all_others(c);
    }
    if (PyList_GET_SIZE(c->operations) == 0) {
        if (PySet_Discard(g_active, (PyObject *)c) < 0)
            return -1;
        if (c->freed) {
            PyObject *r = PyObject_CallMethod((PyObject *)c, "_close_if_done", NULL);
            if (r == NULL)
                return -1;
            Py_DECREF(r);
        }
    }
    return 0;
}

/* --- ChannelCore -------------------------------------------------------------- */

static PyObject *
channel_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    ChannelCore *c = (ChannelCore *)type->tp_alloc(type, 0);
    if (c != NULL && (c->operations = PyList_New(0)) == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static void
channel_dealloc(ChannelCore *c)
{
    PyObject_GC_UnTrack(c);
    Py_CLEAR(c->operations);
    PyMem_Free(c->doorbells);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int
channel_traverse(ChannelCore *c, visitproc visit, void *arg)
{
    Py_VISIT(c->operations);
    return 0;
}

static int
channel_clear(ChannelCore *c)
{
    Py_CLEAR(c->operations);
    return 0;
}

/* _bind(address, doorbells): the area (0 when unmapped) and each member's doorbell */
static PyObject *
channel_bind(ChannelCore *c, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq;
    Py_ssize_t i, n;
    int32_t **bells;
    uint64_t address;
    if (check_nargs("_bind", nargs, 2) < 0 || get_u64(args[0], &address) < 0)
        return NULL;
    if ((seq = PySequence_Fast(args[1], "_bind(): doorbells must be a sequence")) == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    if ((bells = PyMem_Calloc((size_t)(n ? n : 1), sizeof(*bells))) == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (i = 0; i < n; i++) {
        uint64_t bell;
        if (get_u64(PySequence_Fast_GET_ITEM(seq, i), &bell) < 0) {
            PyMem_Free(bells);
            Py_DECREF(seq);
            return NULL;
        }
        bells[i] = (int32_t *)(uintptr_t)bell;
    }
    Py_DECREF(seq);
    PyMem_Free(c->doorbells);
    c->doorbells = bells;
    c->base = (char *)(uintptr_t)address;
    Py_RETURN_NONE;
}

static PyObject *
channel_finish_steps(ChannelCore *c, PyObject *unused)
{
    int rc;
    mpi_lock();
    rc = finish_steps(c);
    mpi_unlock();
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef channel_methods[] = {
    {"_bind", (PyCFunction)(void (*)(void))channel_bind, METH_FASTCALL,
     "_bind(address, doorbells): the channel area and each member's doorbell address."},
    {"_finish_steps", (PyCFunction)channel_finish_steps, METH_NOARGS,
     "Pop the done operations at the head in step order, publish the count finished."},
    {NULL}
};

static PyMemberDef channel_members[] = {
    {"n", T_INT, offsetof(ChannelCore, n), 0, "members"},
    {"me", T_INT, offsetof(ChannelCore, me), 0, "this member's rank"},
    {"started", T_LONGLONG, offsetof(ChannelCore, started), 0, "steps started here"},
    {"deposited", T_LONGLONG, offsetof(ChannelCore, deposited), 0, "steps deposited here"},
    {"finished", T_LONGLONG, offsetof(ChannelCore, finished), 0,
     "steps finished here, in order"},
    {"gated", T_INT, offsetof(ChannelCore, gated), 0,
     "this member counts itself among those waiting for a slot"},
    {"freed", T_INT, offsetof(ChannelCore, freed), 0, "the communicator was freed"},
    {"operations", T_OBJECT_EX, offsetof(ChannelCore, operations), 0,
     "operations outstanding here, in step order"},
    {NULL}
};

PyTypeObject ChannelCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.ChannelCore",
    .tp_basicsize = sizeof(ChannelCore),
    .tp_dealloc = (destructor)channel_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A communicator's nonblocking-collective channel as C sees it "
              "(nbcarea.Channel derives from it).",
    .tp_traverse = (traverseproc)channel_traverse,
    .tp_clear = (inquiry)channel_clear,
    .tp_methods = channel_methods,
    .tp_members = channel_members,
    .tp_new = channel_new,
};

int
channel_init(PyObject *module)
{
    return add_type(module, &ChannelCoreType, "ChannelCore");
}
