/*
 * The fast paths of the point-to-point calls: Send, Recv, send, recv, Isend,
 * Irecv and their kin in their common case, under the fast path's contract
 * (rma/fastpath.py): an int rank and tag in range, a message message_get takes
 * (a C-contiguous buffer of a plain format, or [buf, count, datatype] and its
 * kin with a predefined datatype) or pickled bytes, a payload that fits the ring.  Anything
 * else misses (False) with nothing touched, and the Python path (MPI.Comm's
 * methods, comm/comm.py) does the call or raises its error.
 * p2p/transport.py hands these functions to comm/comm.py.
 */
#include "p2p.h"

#define MISSING (-99)

static CommCore *
fast_comm(PyObject *state)
{
    CommCore *c = (CommCore *)state;
    if (!g_fast_enabled || g_current == NULL || !PyObject_TypeCheck(state, &CommCoreType) ||
            c->freed || c->ranks == NULL || c->world_size != g_current->n)
        return NULL;
    return c;
}

/* The value of an int-like (an int, a numpy integer: what operator.index takes)
 * or, with floats, of a float with an integral value (comm.py's _rank_number:
 * mpi4py takes ranks computed as nprocs / 2); 0, or -1 (no error set) for
 * anything else, which the Python path then judges. */
static int
int_value(PyObject *obj, int floats, long *value)
{
    PyObject *index;
    if (PyLong_CheckExact(obj)) {
        *value = PyLong_AsLong(obj);
    } else if (floats && PyFloat_CheckExact(obj)) {
        double d = PyFloat_AS_DOUBLE(obj);
        if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != (double)(long)d)
            return -1;
        *value = (long)d;
        return 0;
    } else if (PyIndex_Check(obj) && (index = PyNumber_Index(obj)) != NULL) {
        *value = PyLong_AsLong(index);
        Py_DECREF(index);
    } else {
        PyErr_Clear();
        return -1;
    }
    if (*value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* An int in low..high, or the wildcard; else MISSING. */
static int32_t
fast_int(PyObject *obj, int floats, long low, long high, int any, int32_t wildcard)
{
    long v;
    if (int_value(obj, floats, &v) < 0)
        return MISSING;
    if (any && v == wildcard)
        return wildcard;
    return v >= low && v <= high ? (int32_t)v : MISSING;
}

/* A member rank (or ANY_SOURCE with any), else MISSING. */
static inline int32_t
fast_rank(CommCore *c, PyObject *obj, int any)
{
    return fast_int(obj, 1, 0, c->size - 1, any, ANY_SOURCE);
}

/* A tag (or ANY_TAG with any), else MISSING. */
static inline int32_t
fast_tag(PyObject *obj, int any)
{
    return fast_int(obj, 0, 0, TAG_UB, any, ANY_TAG);
}

/* The communicator, source and tag of a fast receive, and its message into
 * *into (buf None: an object receive, nothing held); 0, or -1 for a miss. */
static int
receive_args(PyObject *state, PyObject *buf, PyObject *source_obj, PyObject *tag_obj,
             CommCore **c, int32_t *source, int32_t *tag, Operand *into)
{
    if (!(*c = fast_comm(state)) || (*source = fast_rank(*c, source_obj, 1)) == MISSING ||
            (*tag = fast_tag(tag_obj, 1)) == MISSING)
        return -1;
    return buf == Py_None ? 0 : message_get(buf, 1, 1, into);
}

/* A fast send's record into the ring, when nothing waits before it and it fits:
 * whether it went in. */
static int
fast_push(Transport *t, int32_t world, int32_t flags, int32_t context, int32_t tag,
          const char *data, Py_ssize_t len)
{
    int pushed;
    if (len > t->inline_max)
        return 0;
    transport_lock();
    pushed = t->queues[world].head == NULL &&
        push(t, world, flags, context * SUBCONTEXTS + P2P, tag, len, data, len);
    transport_unlock(t);
    return pushed;
}

/* p2p_send(state, buf, dest, tag, flags) -> bool: the message is in the ring */
static PyObject *
n_p2p_send(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    Transport *t = g_current;
    int32_t dest, tag, world;
    long flags;
    Operand o;
    int pushed;
    const char *data;
    Py_ssize_t len;
    if (check_nargs("p2p_send", nargs, 5) < 0)
        return NULL;
    if (!(c = fast_comm(args[0])) || (dest = fast_rank(c, args[2], 0)) == MISSING ||
            (tag = fast_tag(args[3], 0)) == MISSING || (flags = plain_int(args[4])) < 0)
        Py_RETURN_FALSE;
    world = c->ranks[dest];
    if (PyBytes_CheckExact(args[1])) {
        data = PyBytes_AS_STRING(args[1]);
        len = PyBytes_GET_SIZE(args[1]);
        return PyBool_FromLong(fast_push(t, world, (int32_t)flags, c->context, tag, data,
                                         len));
    }
    if (message_get(args[1], 0, 1, &o) < 0)
        Py_RETURN_FALSE;
    pushed = fast_push(t, world, (int32_t)flags, c->context, tag, o.view.buf, o.view.len);
    operand_release(&o);
    return PyBool_FromLong(pushed);
}

/* p2p_sendobj(state, obj, dest, tag) -> True (sent), the pickled bytes (missed
 * after pickling: the Python path sends them), or MISS (missed before) */
static PyObject *
n_p2p_sendobj(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    Transport *t = g_current;
    int32_t dest, tag, world;
    char quick[QUICK_PICKLE_MAX];
    const char *pickled;
    Py_ssize_t len;
    PyObject *data = NULL;
    if (check_nargs("p2p_sendobj", nargs, 4) < 0)
        return NULL;
    if (!(c = fast_comm(args[0])) || (dest = fast_rank(c, args[2], 0)) == MISSING ||
            (tag = fast_tag(args[3], 0)) == MISSING) {
        Py_INCREF(g_p2p_miss);
        return g_p2p_miss;
    }
    if ((len = quick_dumps(args[1], quick)) >= 0)
        pickled = quick;
    else {
        data = pickle_dumps(args[1]);
        if (data == NULL || !PyBytes_CheckExact(data))
            return data;
        pickled = PyBytes_AS_STRING(data);
        len = PyBytes_GET_SIZE(data);
    }
    world = c->ranks[dest];
    if (fast_push(t, world, FLAG_PICKLED, c->context, tag, pickled, len)) {
        Py_XDECREF(data);
        Py_RETURN_TRUE;
    }
    return data != NULL ? data : PyBytes_FromStringAndSize(quick, len);
}

static PyObject *g_str_fields;

/* Is `status` None or a Status? Anything else is the Python path's to refuse,
 * before anything is received. */
static inline int
status_arg(PyObject *status)
{
    return status == Py_None ||
        (g_status_type != NULL && PyObject_TypeCheck(status, g_status_type));
}

/* Status._fill(source, tag, count) of a completed receive (status_arg passed),
 * written straight into the Status's five C ints (shmrma/types/status.py: MPICH's
 * MPI_Status layout). */
static int
fill_status(CommCore *c, PyObject *status, Core *core)
{
    PyObject *fields;
    Py_buffer view;
    int32_t *f;
    int rc;
    if (status == Py_None)
        return 0;
    if ((fields = PyObject_GetAttr(status, g_str_fields)) == NULL)
        return -1;
    rc = PyObject_GetBuffer(fields, &view, PyBUF_WRITABLE);
    Py_DECREF(fields);
    if (rc < 0)
        return -1;
    if (view.len < 5 * (Py_ssize_t)sizeof(int32_t)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "a Status holds five C ints");
        return -1;
    }
    f = (int32_t *)view.buf;
    f[0] = (int32_t)(uint32_t)((uint64_t)core->count & 0xFFFFFFFFu);   /* count_lo */
    f[1] = (int32_t)(((uint64_t)core->count >> 32) << 1);  /* count_hi, not cancelled */
    f[2] = c->to_rank[core->source];
    f[3] = core->tag;
    f[4] = 0;                                               /* MPI_SUCCESS */
    PyBuffer_Release(&view);
    return 0;
}

/* The receive of a fast call into `into`'s bytes (NULL: an object receive),
 * which the core takes over, matched or posted, and waited for during one
 * slice: NULL with an exception (nothing left posted), else the core. */
static Core *
fast_receive(CommCore *c, PyObject *target, Operand *into, int32_t source, int32_t tag,
             int wait)
{
    Transport *t = g_current;
    int32_t context = c->context * SUBCONTEXTS + P2P, bell, seen;
    int32_t world = source == ANY_SOURCE ? ANY_SOURCE : c->ranks[source];
    int64_t deadline;
    Msg *m;
    int rc;
    Core *core = into ? new_core_into(context, world, tag, target, into)
                      : new_core(context, world, tag, Py_None);
    if (core == NULL)
        return NULL;
    transport_lock();
    if ((rc = progress(t, &bell)) < 0)
        goto done;
    if ((m = find(t, context, world, tag, 1)) != NULL) {
        rc = complete(t, core, m->peer, m->flags, m->context, m->tag, m->nbytes, m->data,
                      m->len);
        PyMem_Free(m);
        goto done;
    }
    post(t, core);
    deadline = now_ns() + (int64_t)(P2P_WAIT_SLICE * 1e9);
    while (wait && !core->done) {
        int64_t left = deadline - now_ns();
        if (left <= 0)
            break;
        if ((rc = wait_changed(t->doorbell, bell, left * 1e-9, &seen)) < 0 ||
                (rc = progress(t, &bell)) < 0) {
            if (core->posted) {
                unpost(t, core);
                Py_DECREF(core);
            }
            break;
        }
    }
done:
    transport_unlock(t);
    if (rc < 0) {
        Py_DECREF(core);
        return NULL;
    }
    return core;
}

/* p2p_recv(state, buf, source, tag, status) -> True (received, status
 * filled), False (missed), or the Core still to complete in Python (not yet
 * arrived after a slice, or an error to raise) */
static PyObject *
n_p2p_recv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    int32_t source, tag;
    Core *core;
    Operand into;
    if (check_nargs("p2p_recv", nargs, 5) < 0)
        return NULL;
    if (args[1] == Py_None || !status_arg(args[4]) ||
            receive_args(args[0], args[1], args[2], args[3], &c, &source, &tag, &into) < 0)
        Py_RETURN_FALSE;
    if ((core = fast_receive(c, args[1], &into, source, tag, 1)) == NULL)
        return NULL;
    if (core->done && !core->error) {
        int rc = fill_status(c, args[4], core);
        Py_DECREF(core);
        if (rc < 0)
            return NULL;
        Py_RETURN_TRUE;
    }
    return (PyObject *)core;
}

/* p2p_recvobj(state, source, tag, status) -> the object, MISS (missed), or the
 * Core still to complete in Python */
static PyObject *
n_p2p_recvobj(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    int32_t source, tag;
    Core *core;
    PyObject *obj;
    if (check_nargs("p2p_recvobj", nargs, 4) < 0)
        return NULL;
    if (!status_arg(args[3]) ||
            receive_args(args[0], Py_None, args[1], args[2], &c, &source, &tag, NULL) < 0) {
        Py_INCREF(g_p2p_miss);
        return g_p2p_miss;
    }
    if ((core = fast_receive(c, Py_None, NULL, source, tag, 1)) == NULL)
        return NULL;
    if (!core->done)
        return (PyObject *)core;
    if (fill_status(c, args[3], core) < 0) {
        Py_DECREF(core);
        return NULL;
    }
    /* an empty message is None, as mpi4py loads it */
    if (core->count)
        obj = pickle_loads(core->payload);
    else {
        obj = Py_None;
        Py_INCREF(obj);
    }
    Py_DECREF(core);
    return obj;
}

/* p2p_irecv(state, buf, source, tag) -> the Core (matched or posted), or False */
static PyObject *
n_p2p_irecv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    int32_t source, tag;
    Operand into;
    if (check_nargs("p2p_irecv", nargs, 4) < 0)
        return NULL;
    if (receive_args(args[0], args[1], args[2], args[3], &c, &source, &tag, &into) < 0)
        Py_RETURN_FALSE;
    return (PyObject *)fast_receive(c, args[1], args[1] == Py_None ? NULL : &into, source,
                                    tag, 0);
}

static PyMethodDef calls_functions[] = {
    {"p2p_send", (PyCFunction)(void (*)(void))n_p2p_send, METH_FASTCALL,
     "p2p_send(state, buf, dest, tag, flags) -> bool: sent, or missed (nothing done)."},
    {"p2p_recv", (PyCFunction)(void (*)(void))n_p2p_recv, METH_FASTCALL,
     "p2p_recv(state, buf, source, tag, status) -> True, False (missed), or the Core "
     "to complete in Python."},
    {"p2p_recvobj", (PyCFunction)(void (*)(void))n_p2p_recvobj, METH_FASTCALL,
     "p2p_recvobj(state, source, tag, status) -> the object, MISS, or the Core."},
    {"p2p_sendobj", (PyCFunction)(void (*)(void))n_p2p_sendobj, METH_FASTCALL,
     "p2p_sendobj(state, obj, dest, tag) -> True (sent), the pickled bytes (the Python "
     "path sends them), or MISS."},
    {"p2p_irecv", (PyCFunction)(void (*)(void))n_p2p_irecv, METH_FASTCALL,
     "p2p_irecv(state, buf or None, source, tag) -> the Core, or False (missed)."},
    {NULL}
};

int
p2p_calls_init(PyObject *module)
{
    g_str_fields = PyUnicode_InternFromString("_fields");
    if (!g_str_fields)
        return -1;
    return PyModule_AddFunctions(module, calls_functions);
}
