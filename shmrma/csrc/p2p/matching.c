/*
 * MPI matching of point-to-point messages (p2p/transport.py's Mailbox does the
 * same in Python): the receives posted before their message arrived, in
 * posting order, and the messages that arrived before a receive wanted them,
 * per source in arrival order, so that the messages of a pair of ranks never
 * overtake one another (MPI-3.1 §3.5).  A record drained from a ring
 * (p2p/rings.c) completes the first posted receive it matches, or waits among
 * the unexpected messages for a receive that finds it.  Core is a receive as
 * Python sees it.  The callers hold the rank's MPI lock (p2p/transport.c).
 */
#include "p2p.h"

static inline int
matches(int32_t context, int32_t source, int32_t tag, int32_t want_context,
        int32_t want_source, int32_t want_tag)
{
    return context == want_context && (want_source == ANY_SOURCE || want_source == source) &&
        (want_tag == ANY_TAG || want_tag == tag);
}

/* Complete c with a message whose payload (or segment name) is data[:len];
 * acknowledges a synchronous send.  -1 with an exception on failure (c is
 * then complete with ERR_OTHER's status left to Python: it raises the error). */
int
complete(Transport *t, Core *c, int32_t source, int32_t flags, int32_t context, int32_t tag,
         int64_t nbytes, const char *data, Py_ssize_t len)
{
    int staged = (flags & FLAG_IN_SEGMENT) != 0, rc = 0;
    PyObject *name = NULL, *result;
    if (flags & FLAG_SYNC) {
        int32_t ack = context - context % SUBCONTEXTS + SYNC_ACK;
        if (send_record(t, source, 0, ack, flags >> SYNC_SHIFT, 0, "", 0) < 0)
            return -1;
    }
    c->source = source;
    c->tag = tag;
    c->flags = flags;
    c->count = nbytes;
    if (staged && (name = PyBytes_FromStringAndSize(data, len)) == NULL)
        rc = -1;
    else if (!c->has_view) {
        if (staged)
            result = PyObject_CallFunction(t->fetch, "OL", name, (long long)nbytes);
        else
            result = PyBytes_FromStringAndSize(data, (Py_ssize_t)nbytes);
        Py_XSETREF(c->payload, result);
        rc = result == NULL ? -1 : 0;
    }
    else if (nbytes > c->into.view.len) {
        c->error = ERR_TRUNCATE;
        if (staged) {
            result = PyObject_CallFunction(t->discard, "OL", name, (long long)nbytes);
            rc = result == NULL ? -1 : 0;
            Py_XDECREF(result);
        }
    }
    else if (staged) {
        PyObject *into = PyMemoryView_FromMemory(c->into.view.buf, c->into.view.len,
                                                 PyBUF_WRITE);
        result = into ? PyObject_CallFunction(t->fetch, "OLO", name, (long long)nbytes,
                                              into) : NULL;
        rc = result == NULL ? -1 : 0;
        Py_XDECREF(result);
        Py_XDECREF(into);
    }
    else
        copy_large(c->into.view.buf, data, (size_t)nbytes);
    Py_XDECREF(name);
    /* done last: the thread that waits for it reads the payload once it sees done
     * (a copy and a fetch let the GIL go) */
    c->done = 1;
    t->events++;
    return rc;
}

/* A record that arrived from source: to the first posted receive it matches,
 * else to the unexpected messages. */
int
arrived(Transport *t, int32_t source, int32_t flags, int32_t context, int32_t tag,
        int64_t nbytes, const char *data, Py_ssize_t len)
{
    Core *c;
    Msg *m;
    int rc;
    for (c = t->posted_head; c; c = c->next)
        if (matches(context, source, tag, c->context, c->want_source, c->want_tag)) {
            unpost(t, c);
            rc = complete(t, c, source, flags, context, tag, nbytes, data, len);
            Py_DECREF(c);
            return rc;
        }
    if ((m = new_msg(source, flags, context, tag, nbytes, data, len)) == NULL)
        return -1;
    append(&t->unexpected[source], m);
    return 0;
}

/* A message that arrived whole as an unexpected one: to a receive posted while
 * its chunks were arriving, if one matches, else to the unexpected messages. */
static int
settle(Transport *t, int source, Msg *m)
{
    Core *c;
    int rc;
    for (c = t->posted_head; c; c = c->next)
        if (matches(m->context, source, m->tag, c->context, c->want_source, c->want_tag)) {
            unpost(t, c);
            rc = complete(t, c, source, m->flags, m->context, m->tag, m->nbytes, m->data,
                          m->len);
            Py_DECREF(c);
            free_msg(m);
            return rc;
        }
    append(&t->unexpected[source], m);
    return 0;
}

/* The first chunk of a staged message: to the first posted receive it matches
 * (checked for truncation, a synchronous send acknowledged), else to an
 * unexpected message made to hold it all. */
int
start_staged(Transport *t, int source, Record *r, Partial *p)
{
    Core *c;
    int64_t nbytes = (int64_t)r->nbytes;
    int32_t flags = r->flags & ~(FLAG_STAGED | FLAG_DIRECT);
    memset(p, 0, sizeof(*p));
    for (c = t->posted_head; c; c = c->next)
        if (matches(r->context, source, r->tag, c->context, c->want_source, c->want_tag))
            break;
    if (c == NULL) {
        if ((p->msg = new_msg(source, flags, r->context, r->tag, nbytes, "", 0)) == NULL)
            return -1;
        p->msg = PyMem_Realloc(p->msg, sizeof(Msg) + (size_t)nbytes);
        if (p->msg == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->msg->len = nbytes;
        p->into = p->msg->data;
        return 0;
    }
    unpost(t, c);
    p->core = c;        /* the posted list's reference */
    if ((flags & FLAG_SYNC) && send_record(t, source, 0, r->context - r->context % SUBCONTEXTS +
                                           SYNC_ACK, flags >> SYNC_SHIFT, 0, "", 0) < 0)
        return -1;
    c->source = source;
    c->tag = r->tag;
    c->flags = flags;
    c->count = nbytes;
    if (!c->has_view) {
        if ((c->payload = PyBytes_FromStringAndSize(NULL, nbytes)) == NULL)
            return -1;
        p->into = PyBytes_AS_STRING(c->payload);
    }
    else if (nbytes > c->into.view.len)
        c->error = ERR_TRUNCATE;    /* its chunks are dropped */
    else
        p->into = c->into.view.buf;
    return 0;
}

/* `length` more bytes of source's partial message are in: the last completes
 * the receive or queues the unexpected message. */
int
received_part(Transport *t, int source, int64_t length, int64_t nbytes)
{
    Partial *p = &t->partial[source];
    int rc = 0;
    p->received += length;
    if (p->received < nbytes)
        return 0;
    if (p->core != NULL) {
        p->core->done = 1;
        t->events++;
        Py_DECREF(p->core);
    }
    else
        rc = settle(t, source, p->msg);
    memset(p, 0, sizeof(*p));
    return rc;
}

/* The first unexpected message matching, per source in arrival order; with
 * remove, taken out of the queue (and *prev_out unused). */
Msg *
find(Transport *t, int32_t context, int32_t source, int32_t tag, int remove)
{
    int first = source == ANY_SOURCE ? 0 : source;
    int last = source == ANY_SOURCE ? t->n - 1 : source;
    int s;
    for (s = first; s <= last; s++) {
        Queue *q = &t->unexpected[s];
        Msg *m, *prev = NULL;
        for (m = q->head; m; prev = m, m = m->next)
            if (matches(m->context, m->peer, m->tag, context, source, tag)) {
                if (remove) {
                    if (prev)
                        prev->next = m->next;
                    else
                        q->head = m->next;
                    if (q->tail == m)
                        q->tail = prev;
                    m->next = NULL;
                }
                return m;
            }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Core                                                                 */
/* ------------------------------------------------------------------ */

static Core *
bare_core(int32_t context, int32_t source, int32_t tag, PyObject *target)
{
    Core *c = PyObject_New(Core, &CoreType);
    if (c == NULL)
        return NULL;
    c->prev = c->next = NULL;
    c->posted = 0;
    c->context = context;
    c->want_source = source;
    c->want_tag = tag;
    c->has_view = 0;
    c->done = 0;
    c->source = c->tag = ANY_SOURCE;
    c->flags = c->error = 0;
    c->count = 0;
    c->payload = NULL;
    Py_INCREF(target);
    c->target = target;
    return c;
}

Core *
new_core(int32_t context, int32_t source, int32_t tag, PyObject *target)
{
    Core *c = bare_core(context, source, tag, target);
    if (c == NULL || target == Py_None)
        return c;
    if (PyObject_GetBuffer(target, &c->into.view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    c->into.whole = c->into.view.buf;
    c->into.whole_len = c->into.view.len;
    c->has_view = 1;
    return c;
}

Core *
new_core_into(int32_t context, int32_t source, int32_t tag, PyObject *target, Operand *into)
{
    Core *c = bare_core(context, source, tag, target);
    if (c == NULL) {
        operand_release(into);
        return NULL;
    }
    c->into = *into;
    c->has_view = 1;
    return c;
}

static void
core_dealloc(Core *c)
{
    if (c->has_view)
        operand_release(&c->into);
    Py_XDECREF(c->target);
    Py_XDECREF(c->payload);
    PyObject_Free(c);
}

static PyObject *
core_get_done(Core *c, void *closure)
{
    return PyBool_FromLong(c->done);
}

static PyObject *
core_get_payload(Core *c, void *closure)
{
    PyObject *payload = c->payload ? c->payload : Py_None;
    Py_INCREF(payload);
    return payload;
}

static PyObject *
core_get_capacity(Core *c, void *closure)
{
    return PyLong_FromSsize_t(c->has_view ? c->into.view.len : 0);
}

static PyGetSetDef core_getset[] = {
    {"capacity", (getter)core_get_capacity, NULL, "the target's bytes", NULL},
    {"done", (getter)core_get_done, NULL, "the receive completed", NULL},
    {"payload", (getter)core_get_payload, NULL, "an object receive's bytes", NULL},
    {NULL}
};

static PyMemberDef core_members[] = {
    {"context", T_INT, offsetof(Core, context), READONLY, "the sub-context received on"},
    {"want_source", T_INT, offsetof(Core, want_source), READONLY,
     "the world rank received from, or ANY_SOURCE"},
    {"want_tag", T_INT, offsetof(Core, want_tag), READONLY, "the tag, or ANY_TAG"},
    {"target", T_OBJECT, offsetof(Core, target), READONLY, "the buffer, or None"},
    {"source", T_INT, offsetof(Core, source), READONLY, "the sender's world rank"},
    {"tag", T_INT, offsetof(Core, tag), READONLY, "the message's tag"},
    {"flags", T_INT, offsetof(Core, flags), READONLY, "the record's flags"},
    {"error", T_INT, offsetof(Core, error), READONLY, "ERR_TRUNCATE, or 0"},
    {"count", T_LONGLONG, offsetof(Core, count), READONLY, "the message's bytes"},
    {NULL}
};

PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Core",
    .tp_basicsize = sizeof(Core),
    .tp_dealloc = (destructor)core_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A receive of the C transport (mailbox.Core's counterpart).",
    .tp_members = core_members,
    .tp_getset = core_getset,
};

int
matching_init(PyObject *module)
{
    return add_type(module, &CoreType, "Core");
}
