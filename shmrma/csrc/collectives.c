/*
 * Collectives on shared memory: the common cases of Bcast, Reduce and
 * Allreduce in C, on the communicator's collective areas.
 *
 * The protocol is shmrma/collarea.py's (read its docstring first): steps in
 * which every member deposits a header and a chunk in its slot, arrives at the
 * area's counter and waits for the others, then reads their slots.  These
 * functions take a call whose arguments are plain (C-contiguous buffers of a
 * numeric format, a predefined op the kernels know, an int root in range) and
 * run it all when every member's first step agrees with this one's.  When a
 * member failed or disagrees, or the data need the large area and this rank
 * has not mapped it yet, they hand the call to Python after the first step:
 * they answer (parity, lengths, units) and collective.py goes on from there,
 * raising what must be raised.  Before the first step they miss (False) with
 * nothing touched, as every fast path does.
 */
#include "native.h"

static Py_ssize_t AREA_HEADER, SLOT_HEADER;
static int SLICED_ABOVE;        /* from more ranks on, large folds are sliced */
static double WAIT_SLICE;
static PyObject *g_check;       /* collarea.wait_check(state, sequence, first) */
static PyObject *g_over;        /* collarea.wait_over() */
static PyObject *g_in_place;    /* MPI.IN_PLACE */
static int g_setup_done = 0;

typedef struct {
    int32_t error;              /* the member's error class, 0 when it takes part */
    int32_t ready;              /* the step whose header and data these are (written last) */
    int64_t length;             /* bytes it brings */
    int64_t unit;               /* its element size (reductions) */
} SlotHeader;

enum { SMALL, LARGE };

static inline SlotHeader *
slot_at(CommCore *c, int which, int rank, int parity)
{
    AreaCore *a = &c->areas[which];
    Py_ssize_t block = 2 * (SLOT_HEADER + a->slot);
    return (SlotHeader *)(a->base + AREA_HEADER + rank * block +
                          parity * (SLOT_HEADER + a->slot));
}

static inline char *
data_at(CommCore *c, int which, int rank, int parity)
{
    return (char *)slot_at(c, which, rank, parity) + SLOT_HEADER;
}

/* Is every member's arrival at step `sequence` counted?  (The counter holds the
 * arrivals of all steps taken on the area.) */
static int
all_arrived(CommCore *c, int which, uint32_t sequence)
{
    int32_t *counter = (int32_t *)c->areas[which].base;
    uint32_t target = sequence * (uint32_t)c->size;
    return (int32_t)((uint32_t)__atomic_load_n(counter, SC) - target) >= 0;
}

/* Has rank deposited step `sequence`? */
static int
deposited_by(CommCore *c, int which, int rank, uint32_t sequence)
{
    int parity = (int)(sequence & 1);
    return (uint32_t)__atomic_load_n(&slot_at(c, which, rank, parity)->ready, SC) == sequence;
}

/* Wait until all members arrived at step `sequence` (rank < 0) or rank deposited
 * it: the wait policy on the area's counter, which every arrival bumps, and
 * between its slices the job's checks (a dead peer, an abort), which also tell
 * the launcher what this rank waits for.  -1 with an exception set. */
static int
await_step(CommCore *c, PyObject *state, int which, uint32_t sequence, int rank)
{
    int32_t *counter = (int32_t *)c->areas[which].base;
    int noted = 0, rc = 0;
    for (;;) {
        int32_t value = __atomic_load_n(counter, SC), seen;
        PyObject *result;
        if (rank < 0 ? all_arrived(c, which, sequence) : deposited_by(c, which, rank, sequence))
            break;
        if (wait_changed(counter, value, WAIT_SLICE, &seen) < 0) {
            rc = -1;
            break;
        }
        if (seen != value)
            continue;
        result = PyObject_CallFunction(g_check, "OIi", state, sequence, !noted);
        noted = 1;
        if (result == NULL) {
            rc = -1;
            break;
        }
        Py_DECREF(result);
    }
    if (noted) {
        PyObject *result = PyObject_CallNoArgs(g_over);
        if (result == NULL && rc == 0)
            rc = -1;
        Py_XDECREF(result);
    }
    return rc;
}

/* One step: this member's header and chunk, its arrival, then the wait: for
 * every member's arrival, or with `from` >= 0 (a broadcast's root) for that
 * member's deposit only (the root waits for nobody).  The parity of the slots
 * the step used, or -1 with an exception set.
 *
 * A member deposits into a parity only once every member arrived at the step
 * before, and members arrive only after they read what they needed of the step
 * before that: so no slot is overwritten while read, whoever waits for whom. */
static int
step(CommCore *c, PyObject *state, int which, int64_t length, int64_t unit,
     const char *chunk, Py_ssize_t len, int from)
{
    AreaCore *a = &c->areas[which];
    uint32_t sequence = ++a->seq;
    int parity = (int)(sequence & 1);
    int me = c->to_rank[c->world_rank];
    SlotHeader *h = slot_at(c, which, me, parity);
    if (c->size > 1 && !all_arrived(c, which, sequence - 1) &&
            await_step(c, state, which, sequence - 1, -1) < 0)
        return -1;
    h->error = 0;
    h->length = length;
    h->unit = unit;
    if (len)
        memcpy((char *)h + SLOT_HEADER, chunk, (size_t)len);
    __atomic_store_n(&h->ready, (int32_t)sequence, SC);
    if (c->size == 1)
        return parity;
    cell_bump((int32_t *)a->base);
    if (from == me)
        return parity;
    if (await_step(c, state, which, sequence, from) < 0)
        return -1;
    return parity;
}

/* Does every member's first step agree with this one's (no error, the same
 * length and unit)? */
static int
agreed(CommCore *c, int parity, int64_t length, int64_t unit)
{
    int r;
    for (r = 0; r < c->size; r++) {
        SlotHeader *h = slot_at(c, SMALL, r, parity);
        if (h->error || h->unit != unit || h->length != length)
            return 0;
    }
    return 1;
}

/* Did a broadcast's root take part in the first step, bringing `length` bytes? */
static int
root_agrees(CommCore *c, int parity, int root, int64_t length)
{
    SlotHeader *h = slot_at(c, SMALL, root, parity);
    return !h->error && h->length == length;
}

/* (parity, lengths, units) of the first step: Python goes on from there. */
static PyObject *
hand_over(CommCore *c, int parity)
{
    PyObject *lengths = PyList_New(c->size), *units = PyList_New(c->size), *result = NULL;
    int r;
    if (lengths == NULL || units == NULL)
        goto done;
    for (r = 0; r < c->size; r++) {
        SlotHeader *h = slot_at(c, SMALL, r, parity);
        PyObject *length = PyLong_FromLongLong(h->length), *unit = PyLong_FromLongLong(h->unit);
        if (length == NULL || unit == NULL) {
            Py_XDECREF(length);
            Py_XDECREF(unit);
            goto done;
        }
        PyList_SET_ITEM(lengths, r, length);
        PyList_SET_ITEM(units, r, unit);
    }
    result = Py_BuildValue("(iOO)", parity, lengths, units);
done:
    Py_XDECREF(lengths);
    Py_XDECREF(units);
    return result;
}

/* The communicator of a fast collective: its small area mapped here. */
static CommCore *
coll_comm(PyObject *state)
{
    CommCore *c = (CommCore *)state;
    if (!g_fast_enabled || !g_setup_done || !PyObject_TypeCheck(state, &CommCoreType) ||
            c->freed || c->ranks == NULL || c->areas[SMALL].base == NULL ||
            c->to_rank[c->world_rank] < 0)
        return NULL;
    return c;
}

static inline Py_ssize_t
whole_items(Py_ssize_t slot, Py_ssize_t unit)
{
    return slot - slot % unit;
}

/* A reduction's data: (send, recv) plain buffers of one numeric format and
 * length, sendbuf possibly IN_PLACE; recv NULL where the result is not
 * wanted (Reduce off the root).  0, or -1 for a miss. */
typedef struct {
    Operand send, recv;
    int has_send, has_recv;
    const char *data;           /* what this member brings */
    Py_ssize_t nbytes, unit;
    int etype, op;
} Reduction;

static void
reduction_release(Reduction *r)
{
    if (r->has_send)
        operand_release(&r->send);
    if (r->has_recv)
        operand_release(&r->recv);
}

static int
reduction_args(Reduction *r, PyObject *sendbuf, PyObject *recvbuf, PyObject *op,
               int receives)
{
    Operand *mine;
    memset(r, 0, sizeof(*r));
    if (receives) {
        if (operand_get(recvbuf, 1, &r->recv) < 0)
            return -1;
        r->has_recv = 1;
    }
    if (sendbuf == g_in_place) {
        if (!receives)
            goto miss;          /* IN_PLACE off the root: Python raises ERR_BUFFER */
        mine = &r->recv;
    }
    else {
        if (operand_get(sendbuf, 0, &r->send) < 0)
            goto miss;
        r->has_send = 1;
        mine = &r->send;
        if (receives && (r->send.code != r->recv.code || r->send.view.len != r->recv.view.len ||
                         ((char *)r->send.view.buf < (char *)r->recv.view.buf + r->recv.view.len &&
                          (char *)r->recv.view.buf < (char *)r->send.view.buf + r->send.view.len)))
            goto miss;
    }
    r->data = mine->view.buf;
    r->nbytes = mine->view.len;
    r->unit = mine->view.itemsize;
    r->etype = mine->etype;
    r->op = op_code(op, r->etype, 0);
    if (r->op < 0 || r->op == OP_REPLACE)
        goto miss;
    return 0;
miss:
    reduction_release(r);
    return -1;
}

/* into[:len] = the fold of every member's bytes [from, from+len) of the step's
 * chunk, in rank order. */
static void
fold_chunk(CommCore *c, Reduction *r, int which, int parity, Py_ssize_t from, char *into,
           Py_ssize_t len)
{
    int rank;
    if (c->size == 1) {
        memcpy(into, data_at(c, which, 0, parity) + from, (size_t)len);
        return;
    }
    fold_all(r->etype, r->op, data_at(c, which, 0, parity) + from,
             data_at(c, which, 1, parity) + from, into, len);
    for (rank = 2; rank < c->size; rank++)
        fold_all(r->etype, r->op, into, data_at(c, which, rank, parity) + from, into, len);
}

/* A whole fold through the large area at more than SLICED_ABOVE ranks, two steps
 * a chunk (collarea.fold): every member folds its slice of the chunk, then
 * publishes it and takes the others'.  0, or -1 with an exception set. */
static int
sliced(CommCore *c, PyObject *state, Reduction *r, int receives)
{
    Py_ssize_t size = whole_items(c->areas[LARGE].slot, r->unit), start;
    int me = c->to_rank[c->world_rank], n = c->size, q;
    char *recv = receives ? (char *)r->recv.view.buf : NULL, *spare = NULL;
    if (!receives && (spare = PyMem_Malloc((size_t)(size / n + size % n + r->unit))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (start = 0; start < r->nbytes; start += size) {
        Py_ssize_t len = r->nbytes - start < size ? r->nbytes - start : size;
        Py_ssize_t per = len / n - (len / n) % r->unit;
        Py_ssize_t low = me * per, high = me == n - 1 ? len : low + per;
        char *mine = receives ? recv + start + low : spare;
        int parity = step(c, state, LARGE, r->nbytes, r->unit, r->data + start, len, -1);
        if (parity < 0)
            break;
        fold_chunk(c, r, LARGE, parity, low, mine, high - low);
        if ((parity = step(c, state, LARGE, r->nbytes, r->unit, mine, high - low, -1)) < 0)
            break;
        for (q = 0; receives && q < n; q++)
            if (q != me)
                memcpy(recv + start + q * per, data_at(c, LARGE, q, parity),
                       (size_t)((q == n - 1 ? len : (q + 1) * per) - q * per));
    }
    PyMem_Free(spare);
    return start < r->nbytes ? -1 : 0;
}

/* Reduce (root >= 0) or Allreduce (root -1). */
static PyObject *
reduce(PyObject *state, PyObject *sendbuf, PyObject *recvbuf, PyObject *op, long root)
{
    CommCore *c = coll_comm(state);
    Reduction r;
    int me, receives, parity;
    Py_ssize_t chunk, start;
    PyObject *result = Py_True;
    if (c == NULL || root >= c->size)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    receives = root < 0 || me == root;
    if (reduction_args(&r, sendbuf, recvbuf, op, receives) < 0)
        Py_RETURN_FALSE;
    chunk = whole_items(c->areas[SMALL].slot, r.unit);
    parity = step(c, state, SMALL, r.nbytes, r.unit, r.data,
                  r.nbytes < chunk ? r.nbytes : chunk, -1);
    if (parity < 0)
        result = NULL;
    else if (!agreed(c, parity, r.nbytes, r.unit) ||
             (r.nbytes > chunk && c->areas[LARGE].base == NULL))
        result = hand_over(c, parity);
    else if (r.nbytes <= chunk) {
        if (receives)
            fold_chunk(c, &r, SMALL, parity, 0, (char *)r.recv.view.buf, r.nbytes);
    }
    else if (c->size > SLICED_ABOVE) {
        if (sliced(c, state, &r, receives) < 0)
            result = NULL;
    }
    else {
        chunk = whole_items(c->areas[LARGE].slot, r.unit);
        for (start = 0; start < r.nbytes; start += chunk) {
            Py_ssize_t len = r.nbytes - start < chunk ? r.nbytes - start : chunk;
            if ((parity = step(c, state, LARGE, r.nbytes, r.unit, r.data + start, len, -1)) < 0) {
                result = NULL;
                break;
            }
            if (receives)
                fold_chunk(c, &r, LARGE, parity, 0, (char *)r.recv.view.buf + start, len);
        }
    }
    reduction_release(&r);
    Py_XINCREF(result);
    return result;
}

/* coll_allreduce(state, sendbuf, recvbuf, op) -> True, False (missed), or
 * (parity, lengths, units) for Python to go on from */
static PyObject *
n_coll_allreduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_allreduce", nargs, 4) < 0)
        return NULL;
    return reduce(args[0], args[1], args[2], args[3], -1);
}

/* coll_reduce(state, sendbuf, recvbuf, op, root) -> as coll_allreduce */
static PyObject *
n_coll_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    long root;
    if (check_nargs("coll_reduce", nargs, 5) < 0)
        return NULL;
    if ((root = plain_int(args[4])) < 0)
        Py_RETURN_FALSE;
    return reduce(args[0], args[1], args[2], args[3], root);
}

/* coll_bcast(state, buf, root) -> as coll_allreduce */
static PyObject *
n_coll_bcast(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    Operand o;
    long root;
    int me, parity;
    Py_ssize_t slot, start;
    PyObject *result = Py_True;
    if (check_nargs("coll_bcast", nargs, 3) < 0)
        return NULL;
    if (!(c = coll_comm(args[0])) || (root = plain_int(args[2])) < 0 || root >= c->size)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    if (operand_get(args[1], me != root, &o) < 0)
        Py_RETURN_FALSE;
    slot = c->areas[SMALL].slot;
    if (me == root)
        parity = step(c, args[0], SMALL, o.view.len, 0, o.view.buf,
                      o.view.len < slot ? o.view.len : slot, (int)root);
    else
        parity = step(c, args[0], SMALL, 0, 0, NULL, 0, (int)root);
    if (parity < 0)
        result = NULL;
    else if ((me != root && !root_agrees(c, parity, (int)root, o.view.len)) ||
             (o.view.len > slot && c->areas[LARGE].base == NULL))
        result = hand_over(c, parity);
    else if (o.view.len <= slot) {
        if (me != root)
            memcpy(o.view.buf, data_at(c, SMALL, (int)root, parity), (size_t)o.view.len);
    }
    else {
        slot = c->areas[LARGE].slot;
        for (start = 0; start < o.view.len; start += slot) {
            Py_ssize_t len = o.view.len - start < slot ? o.view.len - start : slot;
            parity = me == root ?
                step(c, args[0], LARGE, o.view.len, 0, (char *)o.view.buf + start, len,
                     (int)root) :
                step(c, args[0], LARGE, 0, 0, NULL, 0, (int)root);
            if (parity < 0) {
                result = NULL;
                break;
            }
            if (me != root)
                memcpy((char *)o.view.buf + start, data_at(c, LARGE, (int)root, parity),
                       (size_t)len);
        }
    }
    operand_release(&o);
    Py_XINCREF(result);
    return result;
}

/* Did every member (only `root`, when >= 0) take part in the first step (no
 * error), each bringing at most a small slot? */
static int
all_small(CommCore *c, int parity, int root)
{
    int r;
    for (r = root < 0 ? 0 : root; r < (root < 0 ? c->size : root + 1); r++) {
        SlotHeader *h = slot_at(c, SMALL, r, parity);
        if (h->error || h->length > c->areas[SMALL].slot)
            return 0;
    }
    return 1;
}


/* The bytes rank deposited in the first step. */
static PyObject *
deposited(CommCore *c, int rank, int parity)
{
    return PyBytes_FromStringAndSize(data_at(c, SMALL, rank, parity),
                                     (Py_ssize_t)slot_at(c, SMALL, rank, parity)->length);
}

/* coll_allgather_bytes(state, data) -> every member's bytes (a list), False
 * (missed), or (parity, lengths, units): the objects' collectives on pickles */
static PyObject *
n_coll_allgather_bytes(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    PyObject *data, *result;
    int parity, r, me;
    if (check_nargs("coll_allgather_bytes", nargs, 2) < 0)
        return NULL;
    data = args[1];
    if (!(c = coll_comm(args[0])) || !PyBytes_CheckExact(data) ||
            PyBytes_GET_SIZE(data) > c->areas[SMALL].slot)
        Py_RETURN_FALSE;
    parity = step(c, args[0], SMALL, PyBytes_GET_SIZE(data), 0, PyBytes_AS_STRING(data),
                  PyBytes_GET_SIZE(data), -1);
    if (parity < 0)
        return NULL;
    if (!all_small(c, parity, -1))
        return hand_over(c, parity);
    if ((result = PyList_New(c->size)) == NULL)
        return NULL;
    me = c->to_rank[c->world_rank];
    for (r = 0; r < c->size; r++) {
        PyObject *item = r == me ? (Py_INCREF(data), data) : deposited(c, r, parity);
        if (item == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyList_SET_ITEM(result, r, item);
    }
    return result;
}

/* coll_bcast_bytes(state, data or None, root) -> the root's bytes, False
 * (missed), or (parity, lengths, units) */
static PyObject *
n_coll_bcast_bytes(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    PyObject *data;
    long root;
    int parity, me;
    if (check_nargs("coll_bcast_bytes", nargs, 3) < 0)
        return NULL;
    data = args[1];
    if (!(c = coll_comm(args[0])) || (root = plain_int(args[2])) < 0 || root >= c->size)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    if (me == root ? !PyBytes_CheckExact(data) || PyBytes_GET_SIZE(data) > c->areas[SMALL].slot
                   : data != Py_None)
        Py_RETURN_FALSE;
    parity = me == root ?
        step(c, args[0], SMALL, PyBytes_GET_SIZE(data), 0, PyBytes_AS_STRING(data),
             PyBytes_GET_SIZE(data), (int)root) :
        step(c, args[0], SMALL, 0, 0, NULL, 0, (int)root);
    if (parity < 0)
        return NULL;
    if (me != root && !all_small(c, parity, (int)root))
        return hand_over(c, parity);
    if (me == root) {
        Py_INCREF(data);
        return data;
    }
    return deposited(c, (int)root, parity);
}

/* collectives_setup(**constants): the area layout and the Python helpers. */
static PyObject *
n_collectives_setup(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"area_header", "slot_header", "wait_slice", "check", "over",
                             "in_place", "sliced_above", NULL};
    PyObject *check, *over, *in_place;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$nndOOOi:collectives_setup", kwlist,
                                     &AREA_HEADER, &SLOT_HEADER, &WAIT_SLICE, &check, &over,
                                     &in_place, &SLICED_ABOVE))
        return NULL;
    if (SLOT_HEADER < (Py_ssize_t)sizeof(SlotHeader)) {
        PyErr_SetString(PyExc_ValueError, "collectives_setup(): the slot header is too small");
        return NULL;
    }
    Py_INCREF(check);
    Py_XSETREF(g_check, check);
    Py_INCREF(over);
    Py_XSETREF(g_over, over);
    Py_INCREF(in_place);
    Py_XSETREF(g_in_place, in_place);
    g_setup_done = 1;
    Py_RETURN_NONE;
}

static PyMethodDef collective_functions[] = {
    {"collectives_setup", (PyCFunction)(void (*)(void))n_collectives_setup,
     METH_VARARGS | METH_KEYWORDS,
     "collectives_setup(**constants): the collective areas' layout and Python helpers."},
    {"coll_allreduce", (PyCFunction)(void (*)(void))n_coll_allreduce, METH_FASTCALL,
     "coll_allreduce(state, sendbuf, recvbuf, op) -> True, False (missed) or "
     "(parity, lengths, units) for the Python path to go on from."},
    {"coll_reduce", (PyCFunction)(void (*)(void))n_coll_reduce, METH_FASTCALL,
     "coll_reduce(state, sendbuf, recvbuf, op, root) -> as coll_allreduce."},
    {"coll_bcast", (PyCFunction)(void (*)(void))n_coll_bcast, METH_FASTCALL,
     "coll_bcast(state, buf, root) -> as coll_allreduce."},
    {"coll_allgather_bytes", (PyCFunction)(void (*)(void))n_coll_allgather_bytes,
     METH_FASTCALL, "coll_allgather_bytes(state, data) -> every member's bytes, False "
     "(missed) or (parity, lengths, units)."},
    {"coll_bcast_bytes", (PyCFunction)(void (*)(void))n_coll_bcast_bytes, METH_FASTCALL,
     "coll_bcast_bytes(state, data or None, root) -> the root's bytes, False (missed) or "
     "(parity, lengths, units)."},
    {NULL}
};

int
collectives_init(PyObject *module)
{
    return PyModule_AddFunctions(module, collective_functions);
}
