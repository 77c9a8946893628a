/*
 * The point-to-point transport of this process in C: the Transport object, its
 * entry points and the codes and layout it shares with Python
 * (transport_setup).  p2p/transport.py's Mailbox is its Python twin and the
 * fallback engine (read its docstring first); the rings (p2p/rings.c) and
 * matching (p2p/matching.c) are its parts.
 *
 * The Transport owns this process's matching state: the messages that arrived
 * before a receive wanted them, the receives posted before their message
 * arrived, and the sends that wait for room in a full ring.  Every entry point
 * holds the rank's MPI lock (core/core.h) while it touches that state, so
 * calls from several threads happen one after the other: large copies, reads
 * of another process's memory and the Python callbacks let the GIL go midway,
 * but not the lock.  The waits give it up.  What one thread completes that
 * another may wait for (a receive it posted, a send it queued) rings this
 * rank's doorbell when the lock is shared (transport_unlock).
 */
#include "p2p.h"

/* The layout and codes shared with Python (p2p/p2p.h), set once by
 * transport_setup() from their one Python definition (core/job.py,
 * p2p/transport.py, core/constants.py). */
Py_ssize_t CHANNEL_HEADER, OFF_HEAD, OFF_TAIL, OFF_BLOCKED;
int32_t FLAG_PICKLED, FLAG_IN_SEGMENT, FLAG_SYNC, SYNC_SHIFT, PAD_FLAG;
int32_t FLAG_STAGED, FLAG_STAGING, FLAG_DIRECT;
Py_ssize_t STAGING_HEADER;
int32_t SUBCONTEXTS, SYNC_ACK, ANY_SOURCE, ANY_TAG, ERR_TRUNCATE;
int32_t P2P, TAG_UB;
double P2P_WAIT_SLICE;
PyObject *g_p2p_miss;
PyTypeObject *g_status_type;
static int g_setup_done = 0;

static PyTypeObject ArrivedType, TransportType;

Transport *g_current = NULL;

/* ------------------------------------------------------------------ */
/* Arrived                                                              */
/* ------------------------------------------------------------------ */

static PyObject *
new_arrived(Msg *m)
{
    Arrived *a = PyObject_New(Arrived, &ArrivedType);
    if (a == NULL) {
        PyMem_Free(m);
        return NULL;
    }
    a->msg = m;
    return (PyObject *)a;
}

static void
arrived_dealloc(Arrived *a)
{
    PyMem_Free(a->msg);
    PyObject_Free(a);
}

static Msg *
arrived_msg(Arrived *a)
{
    if (a->msg == NULL)
        PyErr_SetString(PyExc_ValueError, "the message was delivered already");
    return a->msg;
}

#define ARRIVED_FIELD(name, expr)                                      \
    static PyObject *                                                  \
    arrived_get_##name(Arrived *a, void *closure)                      \
    {                                                                  \
        Msg *m = arrived_msg(a);                                       \
        return m ? (expr) : NULL;                                      \
    }

ARRIVED_FIELD(source, PyLong_FromLong(m->peer))
ARRIVED_FIELD(context, PyLong_FromLong(m->context))
ARRIVED_FIELD(tag, PyLong_FromLong(m->tag))
ARRIVED_FIELD(flags, PyLong_FromLong(m->flags))
ARRIVED_FIELD(nbytes, PyLong_FromLongLong(m->nbytes))
ARRIVED_FIELD(inline_, PyBytes_FromStringAndSize(m->data, m->len))

static PyGetSetDef arrived_getset[] = {
    {"source", (getter)arrived_get_source, NULL, "the sender's world rank", NULL},
    {"context", (getter)arrived_get_context, NULL, "the sub-context", NULL},
    {"tag", (getter)arrived_get_tag, NULL, "the tag", NULL},
    {"flags", (getter)arrived_get_flags, NULL, "the record's flags", NULL},
    {"nbytes", (getter)arrived_get_nbytes, NULL, "the message's bytes", NULL},
    {"inline", (getter)arrived_get_inline_, NULL,
     "the payload, or the name of the segment holding it", NULL},
    {NULL}
};

static PyTypeObject ArrivedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Arrived",
    .tp_basicsize = sizeof(Arrived),
    .tp_dealloc = (destructor)arrived_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A message that arrived before a receive wanted it (mailbox.Arrived's "
              "counterpart).",
    .tp_getset = arrived_getset,
};

/* ------------------------------------------------------------------ */
/* Transport                                                            */
/* ------------------------------------------------------------------ */

static PyObject *
transport_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"base", "me", "nranks", "channels", "channel_bytes",
                             "ring_bytes", "ranks", "rank_block", "doorbell_offset",
                             "stage", "fetch", "discard", "staging_bytes", "chunk_bytes",
                             "new_staging", "attach_staging", "direct_min", "read_peers", "taken_offset",
                             NULL};
    Transport *t;
    PyObject *base_obj, *stage, *fetch, *discard, *new_staging, *attach_staging;
    void *base;
    int me, n;
    Py_ssize_t channels, channel_bytes, ring_bytes, ranks, rank_block, doorbell_offset;
    unsigned long long staging_bytes, chunk_bytes;
    Py_ssize_t direct_min, taken_offset;
    int read_peers;
    if (!g_setup_done) {
        PyErr_SetString(PyExc_RuntimeError, "Transport(): call transport_setup() first");
        return NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oiinnnnnn$OOOKKOOnpn:Transport", kwlist,
                                     &base_obj, &me, &n, &channels, &channel_bytes,
                                     &ring_bytes, &ranks, &rank_block, &doorbell_offset,
                                     &stage, &fetch, &discard, &staging_bytes, &chunk_bytes,
                                     &new_staging, &attach_staging, &direct_min,
                                     &read_peers, &taken_offset))
        return NULL;
    if (!(base = get_addr(base_obj, 64, "Transport")))
        return NULL;
    if (n < 1 || me < 0 || me >= n || ring_bytes < 1024 || (ring_bytes & (ring_bytes - 1))) {
        PyErr_SetString(PyExc_ValueError, "Transport(): bad rank, size or ring");
        return NULL;
    }
    t = (Transport *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->base = base;
    t->me = me;
    t->n = n;
    t->channels = channels;
    t->channel_bytes = channel_bytes;
    t->ring_bytes = ring_bytes;
    t->inline_max = ring_bytes / 4;
    t->direct_min = direct_min;
    t->read_peers = read_peers;
    t->ranks = ranks;
    t->rank_block = rank_block;
    t->doorbell_offset = doorbell_offset;
    t->doorbell = doorbell_of(t, me);
    t->taken = (const int64_t *)((char *)base + taken_offset);
    t->unexpected = PyMem_Calloc((size_t)n, sizeof(Queue));
    t->queues = PyMem_Calloc((size_t)n, sizeof(Queue));
    t->tickets = PyMem_Calloc((size_t)n, sizeof(uint64_t));
    t->pushed = PyMem_Calloc((size_t)n, sizeof(uint64_t));
    t->heads = PyMem_Calloc((size_t)n, sizeof(uint32_t));
    t->staging_out = PyMem_Calloc((size_t)n, sizeof(Staging));
    t->staging_in = PyMem_Calloc((size_t)n, sizeof(Staging));
    t->partial = PyMem_Calloc((size_t)n, sizeof(Partial));
    if (!t->unexpected || !t->queues || !t->tickets || !t->pushed || !t->heads ||
            !t->staging_out || !t->staging_in || !t->partial) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    Py_INCREF(stage);
    Py_INCREF(fetch);
    Py_INCREF(discard);
    t->stage = stage;
    t->fetch = fetch;
    t->discard = discard;
    Py_INCREF(new_staging);
    Py_INCREF(attach_staging);
    t->new_staging = new_staging;
    t->attach_staging = attach_staging;
    t->staging_bytes = staging_bytes;
    t->chunk_bytes = chunk_bytes;
    g_current = t;
    return (PyObject *)t;
}

static void
free_queue(Queue *q)
{
    Msg *m;
    while ((m = pop(q)) != NULL)
        free_msg(m);
}

static void
transport_dealloc(Transport *t)
{
    int i;
    if (g_current == t)
        g_current = NULL;
    while (t->posted_head) {
        Core *c = t->posted_head;
        unpost(t, c);
        Py_DECREF(c);
    }
    for (i = 0; t->unexpected && i < t->n; i++)
        free_queue(&t->unexpected[i]);
    for (i = 0; t->queues && i < t->n; i++)
        free_queue(&t->queues[i]);
    PyMem_Free(t->unexpected);
    PyMem_Free(t->queues);
    PyMem_Free(t->tickets);
    PyMem_Free(t->pushed);
    PyMem_Free(t->heads);
    PyMem_Free(t->staging_out);
    PyMem_Free(t->staging_in);
    for (i = 0; t->partial && i < t->n; i++) {
        Py_XDECREF(t->partial[i].core);
        PyMem_Free(t->partial[i].msg);
    }
    PyMem_Free(t->partial);
    Py_XDECREF(t->new_staging);
    Py_XDECREF(t->attach_staging);
    Py_XDECREF(t->stage);
    Py_XDECREF(t->fetch);
    Py_XDECREF(t->discard);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* An int argument that must be a rank of the world. */
static int
world_rank(Transport *t, PyObject *obj, int any, int32_t *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if ((v < 0 || v >= t->n) && !(any && v == ANY_SOURCE)) {
        PyErr_Format(PyExc_ValueError, "world rank %ld outside 0..%d", v, t->n - 1);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static int
int32_arg(PyObject *obj, int32_t *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int32_t)v;
    return 0;
}

/* A large message to this rank itself: delivered here at once (to a posted
 * receive, else kept as an unexpected message), once everything sent to self
 * before it is in the matching engine, so it overtakes nothing. */
static int64_t
send_to_self(Transport *t, int32_t flags, int32_t context, int32_t tag, Py_buffer *view)
{
    while (1) {
        if (drain(t, t->me) < 0)
            return -1;
        if (t->queues[t->me].head == NULL)
            break;
        flush_queue(t, t->me);      /* the ring is empty: earlier sends go into it */
    }
    return arrived(t, t->me, flags, context, tag, view->len, view->buf, view->len) < 0 ? -1 : 0;
}

/* What send() answers for a send_record/send_staged result. */
static PyObject *
ticket_of(int64_t ticket)
{
    if (ticket < 0)
        return NULL;
    if (ticket == 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(ticket);
}

/* A message of view's bytes (data's) to dest, the lock held: 0 when it went in,
 * else its ticket; -1 with an exception on failure. */
static int64_t
send_payload(Transport *t, int32_t dest, int32_t context, int32_t tag, int32_t flags,
             PyObject *data, Py_buffer *view, int hold)
{
    PyObject *name;
    int64_t ticket;
    if (view->len > t->inline_max && dest == t->me)
        return send_to_self(t, flags, context, tag, view);
    if (view->len > t->inline_max && t->staging_out[dest].base == NULL &&
            open_staging(t, dest) < 0)
        return -1;
    if (view->len > t->inline_max && t->staging_out[dest].base != NULL)
        return send_staged(t, dest, flags, context, tag, data, view, hold);
    if (view->len <= t->inline_max)
        return send_record(t, dest, flags, context, tag, view->len, view->buf, view->len);
    /* no room in /dev/shm for a staging ring: a segment of its own */
    name = PyObject_CallFunctionObjArgs(t->stage, data, NULL);
    if (name == NULL || !PyBytes_Check(name)) {
        if (name && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "stage() must return bytes");
        Py_XDECREF(name);
        return -1;
    }
    ticket = send_record(t, dest, flags | FLAG_IN_SEGMENT, context, tag, view->len,
                         PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name));
    Py_DECREF(name);
    return ticket;
}

/* send(dest, context, tag, data, flags[, hold]) -> None (in the ring) or a
 * ticket.  A payload larger than a quarter of the ring streams through the
 * pair's staging ring in chunks (held, not copied, while it waits for room
 * when `hold`: the caller completes its request only once sent); to this
 * rank itself it is delivered at once; when /dev/shm has no room for a staging
 * ring, it travels in a segment of its own. */
static PyObject *
t_send(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t dest, context, tag, flags;
    Py_buffer view;
    int64_t ticket;
    int hold = 0;
    if (nargs == 6 && (hold = PyObject_IsTrue(args[5])) < 0)
        return NULL;
    if ((nargs != 6 && check_nargs("send", nargs, 5) < 0) ||
            world_rank(t, args[0], 0, &dest) < 0 || int32_arg(args[1], &context) < 0 ||
            int32_arg(args[2], &tag) < 0 || int32_arg(args[4], &flags) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[3], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    transport_lock();
    ticket = send_payload(t, dest, context, tag, flags, args[3], &view, hold);
    transport_unlock(t);
    PyBuffer_Release(&view);
    return ticket_of(ticket);
}

/* sent(dest, ticket) -> bool */
static PyObject *
t_sent(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t dest;
    long long ticket;
    int sent;
    if (check_nargs("sent", nargs, 2) < 0 || world_rank(t, args[0], 0, &dest) < 0)
        return NULL;
    ticket = PyLong_AsLongLong(args[1]);
    if (ticket == -1 && PyErr_Occurred())
        return NULL;
    transport_lock();
    sent = t->pushed[dest] >= (uint64_t)ticket;
    transport_unlock(t);
    return PyBool_FromLong(sent);
}

/* channel_offset(src, dst) -> its offset in the world segment (a test holds it
 * to core/job.py's channel_index) */
static PyObject *
t_channel_offset(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int src, dst;
    if (nargs != 2 || (src = (int)PyLong_AsLong(args[0])) < 0 ||
            (dst = (int)PyLong_AsLong(args[1])) < 0 || src >= t->n || dst >= t->n) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "channel_offset(src, dst): two slots");
        return NULL;
    }
    return PyLong_FromSsize_t(channel(t, src, dst) - t->base);
}

static PyObject *
t_queued_dests(Transport *t, PyObject *unused)
{
    PyObject *result = PyList_New(0), *rank;
    int dest;
    if (result == NULL)
        return NULL;
    transport_lock();
    for (dest = 0; dest < t->n; dest++)
        if (t->queues[dest].head) {
            if ((rank = PyLong_FromLong(dest)) == NULL || PyList_Append(result, rank) < 0) {
                Py_XDECREF(rank);
                Py_CLEAR(result);
                break;
            }
            Py_DECREF(rank);
        }
    transport_unlock(t);
    if (result != NULL)
        Py_SETREF(result, PyList_AsTuple(result));
    return result;
}

static PyObject *
t_progress(Transport *t, PyObject *unused)
{
    int32_t bell;
    int rc;
    transport_lock();
    rc = progress(t, &bell);
    transport_unlock(t);
    return rc < 0 ? NULL : PyLong_FromLong(bell);
}

/* irecv(context, source, tag, target) -> Core, matched now or posted */
static PyObject *
t_irecv(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t context, source, tag;
    Core *c;
    Msg *m;
    int rc;
    if (check_nargs("irecv", nargs, 4) < 0 || int32_arg(args[0], &context) < 0 ||
            world_rank(t, args[1], 1, &source) < 0 || int32_arg(args[2], &tag) < 0)
        return NULL;
    if ((c = new_core(context, source, tag, args[3])) == NULL)
        return NULL;
    transport_lock();
    rc = progress(t, NULL);
    if (rc == 0 && (m = find(t, context, source, tag, 1)) != NULL) {
        rc = complete(t, c, m->peer, m->flags, m->context, m->tag, m->nbytes, m->data,
                      m->len);
        PyMem_Free(m);
    }
    else if (rc == 0)
        post(t, c);
    transport_unlock(t);
    if (rc < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static PyObject *
t_cancel(Transport *t, PyObject *core)
{
    Core *c = (Core *)core;
    int posted;
    if (!PyObject_TypeCheck(core, &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "cancel(): expecting a Core");
        return NULL;
    }
    transport_lock();
    posted = c->posted;
    if (posted)
        unpost(t, c);
    transport_unlock(t);
    if (posted)
        Py_DECREF(c);
    return PyBool_FromLong(posted);
}

/* find(context, source, tag, remove) -> Arrived or None */
static PyObject *
t_find(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t context, source, tag;
    int remove;
    Msg *m;
    if (check_nargs("find", nargs, 4) < 0 || int32_arg(args[0], &context) < 0 ||
            world_rank(t, args[1], 1, &source) < 0 || int32_arg(args[2], &tag) < 0 ||
            (remove = PyObject_IsTrue(args[3])) < 0)
        return NULL;
    transport_lock();
    m = find(t, context, source, tag, remove);
    if (m != NULL && !remove)
        m = new_msg(m->peer, m->flags, m->context, m->tag, m->nbytes, m->data, m->len);
    transport_unlock(t);
    if (m != NULL)
        return new_arrived(m);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* deliver(arrived, target) -> Core completed by the message */
static PyObject *
t_deliver(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    Arrived *a;
    Msg *m;
    Core *c;
    int rc;
    if (check_nargs("deliver", nargs, 2) < 0)
        return NULL;
    if (!PyObject_TypeCheck(args[0], &ArrivedType)) {
        PyErr_SetString(PyExc_TypeError, "deliver(): expecting an Arrived");
        return NULL;
    }
    a = (Arrived *)args[0];
    if ((m = arrived_msg(a)) == NULL)
        return NULL;
    if ((c = new_core(m->context, ANY_SOURCE, ANY_TAG, args[1])) == NULL)
        return NULL;
    a->msg = NULL;
    transport_lock();
    rc = complete(t, c, m->peer, m->flags, m->context, m->tag, m->nbytes, m->data, m->len);
    transport_unlock(t);
    PyMem_Free(m);
    if (rc < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

/* wait_core(core, timeout) -> bool: progress and wait until the core is done */
static PyObject *
t_wait_core(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    Core *c;
    double timeout;
    int64_t deadline;
    int32_t bell, seen;
    int rc;
    if (check_nargs("wait_core", nargs, 2) < 0 ||
            get_timeout(args[1], "wait_core", &timeout) < 0)
        return NULL;
    if (!PyObject_TypeCheck(args[0], &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "wait_core(): expecting a Core");
        return NULL;
    }
    c = (Core *)args[0];
    deadline = now_ns() + (int64_t)(timeout * 1e9);
    transport_lock();
    for (;;) {
        int64_t left;
        if ((rc = progress(t, &bell)) < 0 || c->done)
            break;
        left = deadline - now_ns();
        if (left <= 0)
            break;
        if ((rc = wait_changed(t->doorbell, bell, left * 1e-9, &seen)) < 0)
            break;
    }
    transport_unlock(t);
    return rc < 0 ? NULL : PyBool_FromLong(c->done);
}

static PyObject *
t_leftovers(Transport *t, PyObject *unused)
{
    PyObject *tags = PyList_New(0), *tag, *result;
    Py_ssize_t posted = 0;
    Core *c;
    int s;
    if (tags == NULL)
        return NULL;
    transport_lock();
    for (s = 0; s < t->n && tags; s++) {
        Msg *m;
        for (m = t->unexpected[s].head; m; m = m->next) {
            if ((tag = PyLong_FromLong(m->tag)) == NULL || PyList_Append(tags, tag) < 0) {
                Py_XDECREF(tag);
                Py_CLEAR(tags);
                break;
            }
            Py_DECREF(tag);
        }
    }
    for (c = t->posted_head; c; c = c->next)
        posted++;
    transport_unlock(t);
    if (tags == NULL)
        return NULL;
    result = Py_BuildValue("(On)", tags, posted);
    Py_DECREF(tags);
    return result;
}

static PyObject *
t_get_doorbell(Transport *t, void *closure)
{
    return PyLong_FromVoidPtr(t->doorbell);
}

#define TM(name, flags, doc) {#name, (PyCFunction)(void (*)(void))t_##name, flags, doc}

static PyMethodDef transport_methods[] = {
    TM(send, METH_FASTCALL, "send(dest, context, tag, data, flags[, hold]) -> None once "
       "in the ring, else a ticket for sent() (the data copied, or held with hold)."),
    TM(sent, METH_FASTCALL, "sent(dest, ticket) -> bool: the queued send is in the ring."),
    TM(channel_offset, METH_FASTCALL, "channel_offset(src, dst) -> the channel's offset."),
    TM(queued_dests, METH_NOARGS, "queued_dests() -> the ranks queued sends wait to reach."),
    TM(progress, METH_NOARGS, "progress() -> the doorbell value read before draining."),
    TM(irecv, METH_FASTCALL, "irecv(context, source, tag, target) -> Core."),
    TM(cancel, METH_O, "cancel(core) -> bool: the posted receive was taken back."),
    TM(find, METH_FASTCALL, "find(context, source, tag, remove) -> Arrived or None."),
    TM(deliver, METH_FASTCALL, "deliver(arrived, target) -> Core completed by it."),
    TM(wait_core, METH_FASTCALL, "wait_core(core, timeout) -> bool: progress and wait "
       "until the core is done."),
    TM(leftovers, METH_NOARGS, "leftovers() -> (unexpected messages' tags, posted receives)."),
    {NULL}
};

static PyMemberDef transport_members[] = {
    {"queued", T_PYSSIZET, offsetof(Transport, queued), READONLY,
     "sends waiting for room in a ring"},
    {"inline_max", T_PYSSIZET, offsetof(Transport, inline_max), READONLY,
     "the largest payload that travels in the ring"},
    {"ring_bytes", T_PYSSIZET, offsetof(Transport, ring_bytes), READONLY,
     "the bytes of each ring"},
    {NULL}
};

static PyGetSetDef transport_getset[] = {
    {"doorbell", (getter)t_get_doorbell, NULL, "this rank's doorbell (a wait cell)", NULL},
    {NULL}
};

static PyTypeObject TransportType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Transport",
    .tp_basicsize = sizeof(Transport),
    .tp_dealloc = (destructor)transport_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "This process's point-to-point transport and matching state (see "
              "shmrma/p2p/transport.py for the interface).",
    .tp_methods = transport_methods,
    .tp_members = transport_members,
    .tp_getset = transport_getset,
    .tp_new = transport_new,
};

/* transport_setup(**constants): the layout and codes, from their Python definitions. */
static PyObject *
n_transport_setup(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"channel_header", "off_head", "off_tail", "off_blocked",
                             "flag_pickled", "flag_in_segment", "flag_sync", "sync_shift",
                             "pad_flag", "subcontexts", "sync_ack", "any_source", "any_tag",
                             "err_truncate", "p2p", "tag_ub", "wait_slice",
                             "miss", "flag_staged", "flag_staging", "flag_direct",
                             "staging_header", "status_type", NULL};
    PyObject *miss, *status_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$nnnniiiiiiiiiiiidOiiinO!:transport_setup",
                                     kwlist,
                                     &CHANNEL_HEADER, &OFF_HEAD, &OFF_TAIL, &OFF_BLOCKED,
                                     &FLAG_PICKLED, &FLAG_IN_SEGMENT, &FLAG_SYNC, &SYNC_SHIFT,
                                     &PAD_FLAG, &SUBCONTEXTS, &SYNC_ACK, &ANY_SOURCE,
                                     &ANY_TAG, &ERR_TRUNCATE, &P2P, &TAG_UB, &P2P_WAIT_SLICE,
                                     &miss, &FLAG_STAGED,
                                     &FLAG_STAGING, &FLAG_DIRECT, &STAGING_HEADER,
                                     &PyType_Type, &status_type))
        return NULL;
    Py_INCREF(miss);
    Py_XSETREF(g_p2p_miss, miss);
    Py_INCREF(status_type);
    Py_XSETREF(g_status_type, (PyTypeObject *)status_type);
    g_setup_done = 1;
    Py_RETURN_NONE;
}

static PyMethodDef transport_functions[] = {
    {"transport_setup", (PyCFunction)(void (*)(void))n_transport_setup,
     METH_VARARGS | METH_KEYWORDS,
     "transport_setup(**constants): the ring layout, record flags and codes the transport "
     "shares with Python."},
    {NULL}
};

/* Ready `type` and add it to the module as `name` (the inits of p2p/). */
int
add_type(PyObject *module, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

int
transport_init(PyObject *module)
{
    if (add_type(module, &ArrivedType, "Arrived") < 0 ||
            add_type(module, &TransportType, "Transport") < 0)
        return -1;
    return PyModule_AddFunctions(module, transport_functions);
}
