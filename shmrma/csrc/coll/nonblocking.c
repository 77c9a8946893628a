/*
 * The nonblocking collectives' common cases in C, on the channel of
 * shmrma/coll/channel.py (read its docstring first; coll/channel.c holds the
 * channel's state, ChannelCore, and finishes its steps).
 *
 * The calls whose arguments are plain (C-contiguous buffers of a numeric
 * format, a predefined op the kernels know, an int root in range; for the
 * vector forms, messages of counts and displacements whose datatype is
 * predefined) and whose stream fits a slot start here when nothing of this
 * rank waits to be deposited before them: the stream goes into this member's
 * slot, and the request is an NbcOp, which reads its sources' slots (copies,
 * folds in rank order) in its own Wait and Test, or in the channel's progress
 * among Python operations.  Anything else misses (False) with nothing touched;
 * a Wait that does not end within a wait slice, or that would need the
 * channel's queue run, goes on in Python (request.Request.Wait), which checks
 * the job's health as it waits.
 */
#include "coll.h"

static Py_ssize_t SLOTS, INLINE, SLOT_HEADER;
static double WAIT_SLICE;
static PyObject *g_failed;          /* nbcarea.failed(name, rank, error class) -> exception */
static PyObject *g_mismatch;        /* nbcarea.mismatch(name, rank, got, expected) -> exception */
static PyObject *g_request_type;    /* nonblocking._FastCollective */
static PyObject *g_python_wait, *g_python_test;   /* request.Request.Wait and .Test */
static PyObject *g_in_place;
static int g_setup_done = 0;

typedef struct {                    /* a slot's header: nbcarea.HEADER */
    int32_t ready, error;
    int64_t length, generation, offset, size;
} NbcHeader;

/* The vector forms (GATHERV..) run as their fixed-size kind with the parts that
 * their counts and displacements give, Ireduce_scatter as Ireduce_scatter_block
 * with the blocks its counts give; only their names differ. */
enum { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, GATHER, SCATTER, ALLTOALL, SCAN, EXSCAN,
       REDUCE_SCATTER_BLOCK, GATHERV, SCATTERV, ALLGATHERV, ALLTOALLV, REDUCE_SCATTER, KINDS };
static const char *const KIND_NAMES[] = {"Ibarrier", "Ibcast", "Ireduce", "Iallreduce",
                                         "Iallgather", "Igather", "Iscatter", "Ialltoall",
                                         "Iscan", "Iexscan", "Ireduce_scatter_block",
                                         "Igatherv", "Iscatterv", "Iallgatherv", "Ialltoallv",
                                         "Ireduce_scatter"};
#define VECTOR(kind) ((kind) >= GATHERV && (kind) <= ALLTOALLV)
#define FIXED_OF(kind) ((kind) == GATHERV ? GATHER : (kind) == SCATTERV ? SCATTER : \
                        (kind) == ALLGATHERV ? ALLGATHER : (kind) == ALLTOALLV ? ALLTOALL : \
                        (kind) == REDUCE_SCATTER ? REDUCE_SCATTER_BLOCK : (kind))

#define FOLDS(kind) ((kind) == REDUCE || (kind) == ALLREDUCE || (kind) == SCAN || \
                     (kind) == EXSCAN || (kind) == REDUCE_SCATTER_BLOCK)
#define TABLED(kind) ((kind) == SCATTER || (kind) == ALLTOALL)
#define PARTED(kind) ((kind) == GATHER || (kind) == ALLGATHER || TABLED(kind))

typedef struct {                    /* an entry of a stream's table (collective.TABLE) */
    int64_t offset, length;
} TableEntry;

/* --- the area's slots ------------------------------------------------------- */

static inline char *
slot_of(ChannelCore *c, int rank, long long step)
{
    return c->base + LINE * (1 + c->n) + (rank * SLOTS + step % SLOTS) * (SLOT_HEADER + INLINE);
}

static int
deposited_step(ChannelCore *c, int rank, long long step)
{
    return __atomic_load_n((int32_t *)slot_of(c, rank, step), SC) == (int32_t)(uint32_t)step;
}

/* --- NbcOp: reading its sources --------------------------------------------- */

static int
fail_with(NbcOp *o, PyObject *maker, const char *format, ...)
{
    PyObject *exc;
    va_list va;
    va_start(va, format);
    exc = Py_VaBuildValue(format, va);
    va_end(va);
    if (exc == NULL)
        return -1;
    Py_SETREF(exc, PyObject_CallObject(maker, exc));
    if (exc == NULL)
        return -1;
    Py_XSETREF(o->error, exc);
    return 0;
}

static inline NbcHeader *
header_of(ChannelCore *c, int rank, long long step)
{
    return (NbcHeader *)slot_of(c, rank, step);
}

/* Source rank's stream for o's step: in its slot, or (a long one that the
 * Python path deposited) in its outbox, through Channel._stream_view; then
 * *held is set and the view must be released.  NULL with an exception set. */
static const char *
stream_at(NbcOp *o, int rank, Py_buffer *view, int *held)
{
    ChannelCore *c = o->channel;
    PyObject *obj;
    *held = 0;
    if (!header_of(c, rank, o->step)->generation)
        return slot_of(c, rank, o->step) + SLOT_HEADER;
    obj = PyObject_CallMethod((PyObject *)c, "_stream_view", "iL", rank, o->step);
    if (obj == NULL)
        return NULL;
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    Py_DECREF(obj);
    *held = 1;
    return view->buf;
}

/* Copy or fold (fold_op >= 0: into = into op stream) len bytes of rank's
 * stream from `from` into `into`. */
static int
use_stream(NbcOp *o, int rank, Py_ssize_t from, char *into, Py_ssize_t len, int fold_op)
{
    Py_buffer view;
    int held;
    const char *data = stream_at(o, rank, &view, &held);
    if (data == NULL)
        return -1;
    if (fold_op < 0)
        memcpy(into, data + from, (size_t)len);
    else
        fold_all(o->etype, fold_op, into, data + from, into, len);
    if (held)
        PyBuffer_Release(&view);
    return 0;
}

/* Where part `index` of rank's table stream lies: *from and *len, as Python's
 * nonblocking._table_part slices it (nothing when the table is short). */
static int
table_entry(NbcOp *o, int rank, int index, Py_ssize_t *from, Py_ssize_t *len)
{
    Py_buffer view;
    int held;
    int64_t size = header_of(o->channel, rank, o->step)->length;
    TableEntry e = {0, 0};
    const char *data = stream_at(o, rank, &view, &held);
    if (data == NULL)
        return -1;
    if (size >= (int64_t)((index + 1) * sizeof(TableEntry)))
        memcpy(&e, data + index * sizeof(TableEntry), sizeof(e));
    if (held)
        PyBuffer_Release(&view);
    if (e.offset < 0 || e.offset > size || e.length < 0)
        e.offset = e.length = 0;
    *from = (Py_ssize_t)e.offset;
    *len = (Py_ssize_t)(e.length < size - e.offset ? e.length : size - e.offset);
    return 0;
}

/* Does source `rank` bring what this member expects?  0 (an error kept) or 1. */
static int
source_ok(NbcOp *o, int rank, int64_t expected)
{
    NbcHeader *h = header_of(o->channel, rank, o->step);
    const char *name = KIND_NAMES[o->named];
    if (h->error)
        return fail_with(o, g_failed, "(sii)", name, rank, h->error) < 0 ? -1 : 0;
    if (expected >= 0 && h->length != expected)
        return fail_with(o, g_mismatch, "(siLL)", name, rank, (long long)h->length,
                         (long long)expected) < 0 ? -1 : 0;
    return 1;
}

/* Does member `to` read member `from`'s stream? */
static int
flows(NbcOp *o, int from, int to)
{
    if (from == to)
        return 0;
    switch (o->kind) {
    case BCAST:
    case SCATTER:
        return from == o->root;
    case REDUCE:
    case GATHER:
        return to == o->root;
    case SCAN:
    case EXSCAN:
        return from < to;
    default:
        return 1;
    }
}

/* Does this member read rank's stream? */
static int
reads_from(NbcOp *o, int rank)
{
    return flows(o, rank, o->channel->me);
}

/* Does rank read this member's stream? */
static int
reader(NbcOp *o, int rank)
{
    return flows(o, o->channel->me, rank);
}

/* The bytes this member expects of source rank's stream, or -1 for any. */
static int64_t
expected_of(NbcOp *o, int rank)
{
    ChannelCore *c = o->channel;
    switch (o->kind) {
    case BCAST:
        return o->io.has_recv ? o->io.recv.view.len : -1;
    case ALLGATHER:
    case GATHER:
        return o->recvs[rank].len;
    default:
        return FOLDS(o->kind) ? header_of(c, c->me, o->step)->length : -1;
    }
}

/* Check every source this member reads (all others, or the root): 1 when all
 * bring what this member expects, 0 with the error kept, -1 on failure. */
static int
sources_ok(NbcOp *o)
{
    ChannelCore *c = o->channel;
    int r, ok;
    for (r = 0; r < c->n; r++)
        if (reads_from(o, r) && (ok = source_ok(o, r, expected_of(o, r))) != 1)
            return ok;
    return 1;
}

/* Each source's part into where its part lands in recv: its whole stream
 * (gathers), or part `index` of its table stream (scatters, alltoall). */
static int
take_parts(NbcOp *o, int index)
{
    ChannelCore *c = o->channel;
    Py_ssize_t from = 0, len;
    int r;
    for (r = 0; r < c->n; r++) {
        Span *into = &o->recvs[r];
        if (!reads_from(o, r))
            continue;
        if (!TABLED(o->kind))
            len = into->len;    /* sources_ok checked the stream's length */
        else if (table_entry(o, r, index, &from, &len) < 0)
            return -1;
        else if (len != into->len)
            return fail_with(o, g_mismatch, "(siLL)", KIND_NAMES[o->named], r, (long long)len,
                             (long long)into->len);
        if (use_stream(o, r, from, (char *)o->io.recv.view.buf + into->at, len, -1) < 0)
            return -1;
    }
    return 0;
}

/* The sources' streams into the receive buffer, every source being there. */
static int
take(NbcOp *o)
{
    ChannelCore *c = o->channel;
    int r, ok;
    char *recv = o->io.has_recv ? o->io.recv.view.buf : NULL;
    if ((ok = sources_ok(o)) != 1)
        return ok;
    if (recv == NULL)
        return 0;
    if (PARTED(o->kind))
        return take_parts(o, c->me);
    if (o->kind == BCAST)
        return use_stream(o, o->root, 0, recv, o->io.recv.view.len, -1);
    if (!FOLDS(o->kind))
        return 0;
    /* ranks [0, last) in rank order, this member's vector from its own slot
     * (recv may be its send buffer) */
    for (r = 0; r < o->last; r++)
        if (use_stream(o, r, o->low, recv, o->high - o->low, r == 0 ? -1 : o->op) < 0)
            return -1;
    return 0;
}

/* Let go of the buffers and parts, once read or never to be. */
static void
release_args(NbcOp *o)
{
    pair_release(&o->io);
    PyMem_Free(o->sends);
    o->sends = o->recvs = NULL;
}

/* Read the sources if they all deposited: 1 (read), 0 (not yet), -1 (error set). */
static int
try_read(NbcOp *o)
{
    ChannelCore *c = o->channel;
    int r;
    if (o->read)
        return 1;
    for (r = 0; r < c->n; r++)
        if (reads_from(o, r) && !deposited_step(c, r, o->step))
            return 0;
    if (take(o) < 0)
        return -1;
    o->read = 1;
    release_args(o);
    wake_threads(c->doorbells[c->me]);     /* its own thread may be waiting for it */
    return 1;
}

static PyObject *
nbcop_try_read(NbcOp *o, PyObject *channel)
{
    int rc;
    mpi_lock();
    rc = try_read(o);
    mpi_unlock();
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

/* --- NbcOp: Wait and Test ------------------------------------------------------ */

/* Complete a read operation as Request._finish does: null, then its error. */
static PyObject *
report(NbcOp *o)
{
    PyObject *error = o->error;
    if (finish_steps(o->channel) < 0)
        return NULL;
    o->null_ = 1;
    if (error != NULL) {
        o->error = NULL;
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
        return NULL;
    }
    Py_RETURN_TRUE;
}

/* Can C complete this operation: no status asked for, nothing of this rank
 * left to deposit (the Python path runs that queue), the operation live? */
static int
c_can_complete(NbcOp *o, Py_ssize_t nargs, PyObject *kwnames, PyObject *const *args)
{
    return no_status(args, nargs, kwnames) && !o->null_ &&
        o->channel->deposited == o->channel->started;
}

/* poll() for wait_bell */
static int
poll_op(void *o)
{
    return try_read((NbcOp *)o);
}

static PyObject *
nbcop_wait(NbcOp *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int rc;
    PyObject *done = NULL;
    mpi_lock();
    if (c_can_complete(o, nargs, kwnames, args) &&
            (rc = wait_bell(o->channel->doorbells[o->channel->me], poll_op, o,
                            WAIT_SLICE)) != 0)
        done = rc < 0 ? NULL : report(o);
    else
        rc = 0;
    mpi_unlock();
    if (rc == 0)        /* a long wait: Python waits on, with the job's abort checks */
        return request_python_path(g_python_wait, (PyObject *)o, args, nargs, kwnames);
    return done;
}

static PyObject *
nbcop_test(NbcOp *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int rc;
    PyObject *done = NULL;
    mpi_lock();
    if (c_can_complete(o, nargs, kwnames, args) && (rc = try_read(o)) != 0)
        done = rc < 0 ? NULL : report(o);
    else
        rc = 0;
    mpi_unlock();
    if (rc == 0)
        return request_python_path(g_python_test, (PyObject *)o, args, nargs, kwnames);
    return done;
}

static void
nbcop_dealloc(NbcOp *o)
{
    PyObject_GC_UnTrack(o);
    release_args(o);
    Py_CLEAR(o->channel);
    Py_CLEAR(o->error);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

static int
nbcop_traverse(NbcOp *o, visitproc visit, void *arg)
{
    Py_VISIT(o->channel);
    Py_VISIT(o->error);
    return 0;
}

static int
nbcop_clear(NbcOp *o)
{
    Py_CLEAR(o->channel);
    Py_CLEAR(o->error);
    return 0;
}

static PyObject *
nbcop_get_name(NbcOp *o, void *closure)
{
    return PyUnicode_FromString(KIND_NAMES[o->named]);
}

static PyObject *
nbcop_get_channel(NbcOp *o, void *closure)
{
    PyObject *c = o->channel ? (PyObject *)o->channel : Py_None;
    Py_INCREF(c);
    return c;
}

static PyGetSetDef nbcop_getset[] = {
    {"name", (getter)nbcop_get_name, NULL, "the call's name", NULL},
    {"_channel", (getter)nbcop_get_channel, NULL, "the channel it runs on", NULL},
    {NULL}
};

static PyMemberDef nbcop_members[] = {
    {"step", T_LONGLONG, offsetof(NbcOp, step), READONLY, "its step on the channel"},
    {"deposited", T_INT, offsetof(NbcOp, deposited), READONLY, "always: C deposits at once"},
    {"read", T_INT, offsetof(NbcOp, read), READONLY, "its sources were read"},
    {"_null", T_BOOL, offsetof(NbcOp, null_), 0, "completed and reported"},
    {"error", T_OBJECT, offsetof(NbcOp, error), 0, "the exception its completion raises"},
    {NULL}
};

static PyMethodDef nbcop_methods[] = {
    {"try_read", (PyCFunction)nbcop_try_read, METH_O,
     "try_read(channel) -> bool: read the sources if they all deposited."},
    {"Wait", (PyCFunction)(void (*)(void))nbcop_wait, METH_FASTCALL | METH_KEYWORDS,
     "Wait(status=None): as Request.Wait."},
    {"Test", (PyCFunction)(void (*)(void))nbcop_test, METH_FASTCALL | METH_KEYWORDS,
     "Test(status=None) -> bool: as Request.Test."},
    {NULL}
};

PyTypeObject NbcOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.NbcOp",
    .tp_basicsize = sizeof(NbcOp),
    .tp_dealloc = (destructor)nbcop_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A nonblocking collective started in C (nonblocking._FastCollective "
              "derives from it).",
    .tp_traverse = (traverseproc)nbcop_traverse,
    .tp_clear = (inquiry)nbcop_clear,
    .tp_methods = nbcop_methods,
    .tp_members = nbcop_members,
    .tp_getset = nbcop_getset,
};

/* --- starting ------------------------------------------------------------------ */

/* The channel of a fast start: bound, live, nothing of this rank queued, and
 * the slot of the next step free.  NULL: miss. */
static ChannelCore *
fast_channel(PyObject *obj)
{
    ChannelCore *c = (ChannelCore *)obj;
    if (!g_fast_enabled || !g_setup_done || !PyObject_TypeCheck(obj, &ChannelCoreType) ||
            c->base == NULL || c->freed || c->deposited != c->started)
        return NULL;
    if (c->n > 1 && c->started + 1 - SLOTS > slowest(c))
        return NULL;
    return c;
}

enum { WHOLE, CUT };

/* buf into *op (writable or not), and each rank's part of it into spans: all
 * of it (WHOLE), or (CUT) as a vector message's counts and displacements say,
 * or, for the fixed-size kinds, one equal part per rank in rank order.  -1: a
 * miss, *has set when *op holds the buffer. */
static int
parts_get(NbcOp *o, PyObject *buf, int writable, int cut, Operand *op, int *has, Span *spans)
{
    int n = o->channel->n, r;
    if (cut && VECTOR(o->named)) {
        if (vector_get(buf, writable, n, op, spans) < 0)
            return -1;
        *has = 1;
        return 0;
    }
    if (message_get(buf, writable, cut ? n : 1, op) < 0)    /* a count is one part's */
        return -1;
    *has = 1;
    if (cut && op->count % n)
        return -1;
    for (r = 0; r < n; r++) {
        spans[r].len = cut ? op->view.len / n : op->view.len;
        spans[r].at = cut ? r * spans[r].len : 0;
    }
    return 0;
}

static int
send_parts(NbcOp *o, PyObject *sendbuf, int cut)
{
    return parts_get(o, sendbuf, 0, cut, &o->io.send, &o->io.has_send, o->sends);
}

static int
recv_parts(NbcOp *o, PyObject *recvbuf, int cut)
{
    return parts_get(o, recvbuf, 1, cut, &o->io.recv, &o->io.has_recv, o->recvs);
}

/* Both buffers held: does this member's own part of the send buffer fill its
 * part of the receive buffer exactly, the buffers apart?  0, or -1 for a miss
 * (Python raises the mismatch). */
static int
own_fits(NbcOp *o)
{
    int me = o->channel->me;
    return o->sends[me].len == o->recvs[me].len && !pair_overlaps(&o->io) ? 0 : -1;
}

/* The reduce-scatters' block of this member: o->low and o->high, the bytes of
 * its block of vectors `mine` (whole, of `count` items); the blocks are
 * recvcounts' (Ireduce_scatter: a list or tuple of an int per rank, this
 * member's that of the receive buffer unless IN_PLACE), or a receive buffer's
 * count each (Ireduce_scatter_block; with IN_PLACE, the vector's share).  0, or
 * -1 for a miss (Python raises what is wrong). */
static int
scatter_block(NbcOp *o, Operand *mine, PyObject *recvcounts)
{
    ChannelCore *c = o->channel;
    Py_ssize_t total = 0, before = 0, item = mine->extent;
    int r, in_place = !o->io.has_send, ok;
    Span *blocks = PyMem_New(Span, (size_t)c->n);
    if (blocks == NULL)
        return -1;
    if (o->named == REDUCE_SCATTER)
        ok = (PyList_Check(recvcounts) || PyTuple_Check(recvcounts)) &&
             per_rank(recvcounts, c->n, blocks, 0) == 0 &&
             (in_place || blocks[c->me].len == o->io.recv.count);
    else {
        for (r = 0; r < c->n; r++)
            blocks[r].len = in_place ? mine->count / c->n : o->io.recv.count;
        ok = 1;
    }
    for (r = 0; ok && r < c->n; r++) {
        before += r < c->me ? blocks[r].len : 0;
        total += blocks[r].len;
        ok = total <= mine->count;
    }
    o->low = before * item;
    o->high = o->low + (ok ? blocks[c->me].len * item : 0);
    PyMem_Free(blocks);
    return ok && total == mine->count ? 0 : -1;
}

/* A reduction's buffers (IN_PLACE: the whole vector in recvbuf), its op, and
 * the ranks and bytes folded: the whole vectors, or this member's block of
 * them (the reduce-scatters, `recvcounts` for Ireduce_scatter). */
static int
fold_args(NbcOp *o, PyObject *sendbuf, PyObject *recvbuf, PyObject *op, PyObject *recvcounts)
{
    ChannelCore *c = o->channel;
    int me = c->me, receives = o->kind != REDUCE || me == o->root;
    int scatters = o->kind == REDUCE_SCATTER_BLOCK, in_place = sendbuf == g_in_place;
    /* Ireduce_scatter_block's vectors are counted in blocks, its receive's IN_PLACE */
    int blocks = scatters && o->named != REDUCE_SCATTER ? c->n : 1;
    Operand *mine;
    if (receives) {
        if (message_get(recvbuf, 1, in_place ? blocks : 1, &o->io.recv) < 0)
            return -1;
        o->io.has_recv = 1;
    }
    if (in_place) {
        if (!receives)
            return -1;
        mine = &o->io.recv;
    }
    else {
        if (message_get(sendbuf, 0, blocks, &o->io.send) < 0)
            return -1;
        o->io.has_send = 1;
        mine = &o->io.send;
        if (receives && (o->io.send.datatype != o->io.recv.datatype || pair_overlaps(&o->io) ||
                         (!scatters && o->io.send.view.len != o->io.recv.view.len)))
            return -1;
    }
    o->etype = mine->etype;
    o->op = op_code(op, o->etype, 0);
    if (o->op < 0 || o->op == OP_REPLACE)
        return -1;
    o->last = !receives ? 0 : o->kind == SCAN ? me + 1 : o->kind == EXSCAN ? me : c->n;
    o->low = 0;
    o->high = mine->view.len;
    return scatters ? scatter_block(o, mine, recvcounts) : 0;
}

/* Parse the buffers of o's kind into o (Ireduce_scatter's recvcounts too): 0,
 * or -1 for a miss (nothing touched). */
static int
start_args(NbcOp *o, PyObject *sendbuf, PyObject *recvbuf, PyObject *op, PyObject *recvcounts)
{
    ChannelCore *c = o->channel;
    int me = c->me, root_side = o->root == me;
    switch (o->kind) {
    case BARRIER:
        return 0;
    case BCAST:         /* sendbuf: the buffer */
        if (message_get(sendbuf, !root_side, 1, root_side ? &o->io.send : &o->io.recv) < 0)
            return -1;
        if (root_side)
            o->io.has_send = 1;
        else
            o->io.has_recv = 1;
        return 0;
    case GATHER:        /* the root takes its own part as an Allgather does */
        if (!root_side)
            return send_parts(o, sendbuf, WHOLE);
        /* fall through */
    case ALLGATHER:
        if (recv_parts(o, recvbuf, CUT) < 0)
            return -1;
        return sendbuf == g_in_place ? 0 : send_parts(o, sendbuf, WHOLE) < 0 ? -1 : own_fits(o);
    case SCATTER:
        if (!root_side)
            return recv_parts(o, recvbuf, WHOLE);
        if (send_parts(o, sendbuf, CUT) < 0)
            return -1;
        return recvbuf == g_in_place ? 0 : recv_parts(o, recvbuf, WHOLE) < 0 ? -1 : own_fits(o);
    case ALLTOALL:
        if (recv_parts(o, recvbuf, CUT) < 0)
            return -1;
        return sendbuf == g_in_place ? 0 : send_parts(o, sendbuf, CUT) < 0 ? -1 : own_fits(o);
    default:
        return fold_args(o, sendbuf, recvbuf, op, recvcounts);
    }
}

/* This member's own part into its receive buffer, where Python's plan puts it
 * at the call (send buffer given, not IN_PLACE). */
static void
take_own(NbcOp *o)
{
    int me = o->channel->me;
    if (!PARTED(o->kind) || !o->io.has_send || !o->io.has_recv)
        return;
    memcpy((char *)o->io.recv.view.buf + o->recvs[me].at,
           (char *)o->io.send.view.buf + o->sends[me].at, (size_t)o->recvs[me].len);
}

/* The buffer this member's parts go out from, and their spans: the send
 * buffer, or with IN_PLACE the receive buffer. */
static Operand *
outgoing(NbcOp *o, Span **spans)
{
    *spans = o->io.has_send ? o->sends : o->recvs;
    return o->io.has_send ? &o->io.send : &o->io.recv;
}

/* What this member deposits: (data, length), after a table of its parts for
 * Iscatter's root and Ialltoall (*table set). */
static void
stream_of(NbcOp *o, const char **data, Py_ssize_t *len, int *table)
{
    ChannelCore *c = o->channel;
    Pair *io = &o->io;
    Operand *out;
    Span *spans;
    int r;
    *data = NULL;
    *len = 0;
    *table = 0;
    switch (o->kind) {
    case BARRIER:
        return;
    case BCAST:
    case GATHER:
        if (io->has_send && (o->kind == BCAST || c->me != o->root)) {
            *data = io->send.view.buf;
            *len = io->send.view.len;
        }
        return;
    case ALLGATHER:
        out = outgoing(o, &spans);
        *data = (char *)out->view.buf + spans[c->me].at;
        *len = spans[c->me].len;
        return;
    case SCATTER:
    case ALLTOALL:      /* the parts after a table, as Python's collective._parts_stream */
        if (o->kind == SCATTER && c->me != o->root)
            return;
        *table = 1;
        out = outgoing(o, &spans);
        *data = out->view.buf;
        for (r = 0; r < c->n; r++)      /* its own part stays: it copied it */
            *len += r == c->me ? 0 : spans[r].len;
        return;
    default:        /* the folds: this member's whole vector */
        *data = io->has_send ? io->send.view.buf : io->recv.view.buf;
        *len = io->has_send ? io->send.view.len : io->recv.view.len;
    }
}

/* The bytes this member deposits, or -1 when they do not fit a slot. */
static Py_ssize_t
stream_bytes(NbcOp *o)
{
    const char *data;
    Py_ssize_t len;
    int table;
    stream_of(o, &data, &len, &table);
    len += table ? o->channel->n * (Py_ssize_t)sizeof(TableEntry) : 0;
    return len <= INLINE ? len : -1;
}

/* Deposit o's stream in this member's slot of its step, then ring its readers. */
static void
deposit(NbcOp *o)
{
    ChannelCore *c = o->channel;
    NbcHeader *h = header_of(c, c->me, o->step);
    char *into = slot_of(c, c->me, o->step) + SLOT_HEADER;
    const char *data;
    Py_ssize_t len, head = 0;
    int r, table;
    Span *spans;
    stream_of(o, &data, &len, &table);
    if (table) {        /* collective._parts_stream: (offset, length) of each part */
        Py_ssize_t at = head = c->n * (Py_ssize_t)sizeof(TableEntry);
        outgoing(o, &spans);
        for (r = 0; r < c->n; r++) {
            TableEntry e = {at, r == c->me ? 0 : spans[r].len};
            memcpy(into + r * sizeof(e), &e, sizeof(e));
            memcpy(into + at, data + spans[r].at, (size_t)e.length);
            at += e.length;
        }
    }
    else if (len)
        memcpy(into + head, data, (size_t)len);
    h->error = 0;
    h->length = head + len;
    h->generation = h->offset = h->size = 0;
    __atomic_store_n(&h->ready, (int32_t)(uint32_t)o->step, SC);
    for (r = 0; r < c->n; r++)
        if (reader(o, r))
            cell_bump(c->doorbells[r]);
}

/* nbc_start(channel, kind, sendbuf, recvbuf, op, root) -> the request, or False;
 * Ireduce_scatter passes its recvcounts for root */
static PyObject *
start_locked(PyObject *const *args, Py_ssize_t nargs)
{
    ChannelCore *c;
    NbcOp *o;
    long kind, fixed, root = 0;
    if (check_nargs("nbc_start", nargs, 6) < 0)
        return NULL;
    if (!(c = fast_channel(args[0])) || (kind = plain_int(args[1])) < 0 || kind >= KINDS)
        Py_RETURN_FALSE;
    fixed = FIXED_OF(kind);
    if ((fixed == BCAST || fixed == REDUCE || fixed == GATHER || fixed == SCATTER) &&
            ((root = plain_int(args[5])) < 0 || root >= c->n))
        Py_RETURN_FALSE;
    if (TABLED(fixed) && c->n * (Py_ssize_t)sizeof(TableEntry) > INLINE)
        Py_RETURN_FALSE;
    o = (NbcOp *)((PyTypeObject *)g_request_type)->tp_alloc((PyTypeObject *)g_request_type, 0);
    if (o == NULL)
        return NULL;
    Py_INCREF(c);
    o->channel = c;
    o->kind = (int)fixed;
    o->named = (int)kind;
    o->root = (int)root;
    if (PARTED(fixed)) {
        if ((o->sends = PyMem_New(Span, 2 * (size_t)c->n)) == NULL) {
            Py_DECREF(o);
            return PyErr_NoMemory();
        }
        o->recvs = o->sends + c->n;
    }
    if (start_args(o, args[2], args[3], args[4], args[5]) < 0 || stream_bytes(o) < 0) {
        Py_DECREF(o);
        Py_RETURN_FALSE;
    }
    take_own(o);
    o->step = ++c->started;
    c->deposited = c->started;
    o->deposited = 1;
    deposit(o);
    if (PyList_Append(c->operations, (PyObject *)o) < 0 || PySet_Add(g_active, args[0]) < 0 ||
            try_read(o) < 0 || finish_steps(c) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

static PyObject *
n_nbc_start(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *started;
    mpi_lock();         /* the channel's state, and the set of active channels */
    started = start_locked(args, nargs);
    mpi_unlock();
    return started;
}

/* nbc_setup(**constants): the area's layout and the Python helpers. */
static PyObject *
n_nbc_setup(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"slots", "inline", "slot_header", "line", "off_gated",
                             "wait_slice", "active", "failed", "mismatch", "request_type",
                             "python_wait", "python_test", "in_place", NULL};
    PyObject *objs[7];
    int i;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$nnnnndOOOOOOO:nbc_setup", kwlist,
                                     &SLOTS, &INLINE, &SLOT_HEADER, &LINE, &OFF_GATED,
                                     &WAIT_SLICE, &objs[0], &objs[1], &objs[2], &objs[3],
                                     &objs[4], &objs[5], &objs[6]))
        return NULL;
    if (SLOT_HEADER < (Py_ssize_t)sizeof(NbcHeader) || !PyType_Check(objs[3]) ||
            !PyType_IsSubtype((PyTypeObject *)objs[3], &NbcOpType)) {
        PyErr_SetString(PyExc_ValueError, "nbc_setup(): bad slot header or request type");
        return NULL;
    }
    for (i = 0; i < 7; i++)
        Py_INCREF(objs[i]);
    Py_XSETREF(g_active, objs[0]);
    Py_XSETREF(g_failed, objs[1]);
    Py_XSETREF(g_mismatch, objs[2]);
    Py_XSETREF(g_request_type, objs[3]);
    Py_XSETREF(g_python_wait, objs[4]);
    Py_XSETREF(g_python_test, objs[5]);
    Py_XSETREF(g_in_place, objs[6]);
    g_setup_done = 1;
    Py_RETURN_NONE;
}

static PyMethodDef nbc_functions[] = {
    {"nbc_setup", (PyCFunction)(void (*)(void))n_nbc_setup, METH_VARARGS | METH_KEYWORDS,
     "nbc_setup(**constants): the channel layout and the Python helpers."},
    {"nbc_start", (PyCFunction)(void (*)(void))n_nbc_start, METH_FASTCALL,
     "nbc_start(channel, kind, sendbuf, recvbuf, op, root or recvcounts) -> the request, "
     "or False "
     "(missed, nothing done)."},
    {NULL}
};

int
nonblocking_init(PyObject *module)
{
    int i;
    if (add_type(module, &NbcOpType, "NbcOp") < 0)
        return -1;
    PyObject *kinds = PyTuple_New(KINDS);
    if (kinds == NULL)
        return -1;
    for (i = 0; i < KINDS; i++) {
        PyObject *name = PyUnicode_FromString(KIND_NAMES[i]);
        if (name == NULL) {
            Py_DECREF(kinds);
            return -1;
        }
        PyTuple_SET_ITEM(kinds, i, name);
    }
    if (PyModule_AddObject(module, "NBC_KINDS", kinds) < 0) {
        Py_DECREF(kinds);
        return -1;
    }
    return PyModule_AddFunctions(module, nbc_functions);
}
