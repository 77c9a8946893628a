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
#include "coll.h"

static Py_ssize_t AREA_HEADER, SLOT_HEADER, READ_LINE;
static int SLICED_ABOVE;        /* from more ranks on, large folds are sliced */
static double WAIT_SLICE;
static PyObject *g_check;       /* collarea.wait_check(state, sequence, first, reader):
                                   * None, or the job's problem to raise */
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

/* A member's block of the area: its read line, then its two slots. */
static inline char *
block_at(CommCore *c, int which, int rank)
{
    AreaCore *a = &c->areas[which];
    return a->base + AREA_HEADER + rank * (READ_LINE + 2 * (SLOT_HEADER + a->slot));
}

static inline SlotHeader *
slot_at(CommCore *c, int which, int rank, int parity)
{
    return (SlotHeader *)(block_at(c, which, rank) + READ_LINE +
                          parity * (SLOT_HEADER + c->areas[which].slot));
}

static inline char *
data_at(CommCore *c, int which, int rank, int parity)
{
    return (char *)slot_at(c, which, rank, parity) + SLOT_HEADER;
}

/* rank's read cell: a wait cell alone on its line, holding the last step it
 * finished reading (collarea.py). */
static inline int32_t *
read_cell(CommCore *c, int which, int rank)
{
    return (int32_t *)block_at(c, which, rank);
}

/* Is every member's arrival at the current step counted?  (The counter holds the
 * arrivals of all steps taken on the area.) */
static int
all_arrived(CommCore *c, int which, uint32_t sequence, int rank)
{
    AreaCore *a = &c->areas[which];
    return (int32_t)((uint32_t)__atomic_load_n((int32_t *)a->base, SC) - a->target) >= 0;
}

/* Has rank deposited step `sequence`? */
static int
deposited_by(CommCore *c, int which, uint32_t sequence, int rank)
{
    int parity = (int)(sequence & 1);
    return (uint32_t)__atomic_load_n(&slot_at(c, which, rank, parity)->ready, SC) == sequence;
}

/* Has rank finished reading step `sequence`? */
static int
read_by(CommCore *c, int which, uint32_t sequence, int rank)
{
    return (int32_t)((uint32_t)__atomic_load_n(read_cell(c, which, rank), SC) - sequence) >= 0;
}

typedef int (*StepCondition)(CommCore *c, int which, uint32_t sequence, int rank);

/* Wait until done(c, which, sequence, rank) holds: the wait policy on `cell`,
 * which whoever can make it hold changes, and between its slices the job's
 * checks (a dead peer, an abort), which also tell the launcher what this rank
 * waits for (`reader`: the member whose reading of `sequence`, else -1).  -1
 * with an exception set. */
static int
await_cell(CommCore *c, PyObject *state, int which, uint32_t sequence, int rank,
           int32_t *cell, StepCondition done, int reader)
{
    int noted = 0, rc = 0;
    for (;;) {
        int32_t value = __atomic_load_n(cell, SC), seen;
        PyObject *result;
        if (done(c, which, sequence, rank))
            break;
        if (wait_changed(cell, value, WAIT_SLICE, &seen) < 0) {
            rc = -1;
            break;
        }
        if (seen != value)
            continue;
        result = PyObject_CallFunction(g_check, "OIii", state, sequence, !noted, reader);
        noted = 1;
        if (result == NULL) {
            rc = -1;
            break;
        }
        if (result != Py_None) {    /* the job's problem, read before the step again */
            if (!done(c, which, sequence, rank)) {
                PyErr_SetObject((PyObject *)Py_TYPE(result), result);
                rc = -1;
            }
            Py_DECREF(result);
            break;
        }
        Py_DECREF(result);
    }
    if (noted) {    /* the wait's own error, if any, is the one raised */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyObject *result = PyObject_CallNoArgs(g_over);
        if (result == NULL && rc == 0)
            rc = -1;
        Py_XDECREF(result);
        if (type != NULL) {
            PyErr_Clear();
            PyErr_Restore(type, value, traceback);
        }
    }
    return rc;
}

/* Wait on the area's counter, which every deposit bumps, until every member
 * arrived at the current step (rank < 0) or rank deposited it. */
static int
await_step(CommCore *c, PyObject *state, int which, int rank)
{
    return await_cell(c, state, which, c->areas[which].seq, rank, (int32_t *)c->areas[which].base,
                      rank < 0 ? all_arrived : deposited_by, -1);
}

/* A broadcast's receiver finished reading the current step: its read cell, and
 * whoever waits for it (the root, to reuse its slot). */
static void
read_done(CommCore *c, int which)
{
    int32_t *cell;
    if (c->size == 1)
        return;
    cell = read_cell(c, which, c->to_rank[c->world_rank]);
    __atomic_store_n(cell, (int32_t)c->areas[which].seq, SC);
    wake_if_sleepers(cell);
}

/* The next step on the area.  At its start every member finished reading the
 * steps up to three before (collarea.py): `clear` knows that much at least. */
static uint32_t
next_step(AreaCore *a)
{
    uint32_t sequence = ++a->seq;
    if ((int32_t)(a->clear - (sequence - 3)) < 0)
        a->clear = sequence - 3;
    return sequence;
}

/* Wait until every member finished reading step `sequence` (the last that used
 * this member's slot of the parity it is about to write), and learn how far
 * they all are. */
static int
await_clear(CommCore *c, PyObject *state, int which, uint32_t sequence)
{
    AreaCore *a = &c->areas[which];
    int me = c->to_rank[c->world_rank], r;
    uint32_t least = a->seq;
    if ((int32_t)(a->clear - sequence) >= 0)
        return 0;
    for (r = 0; r < c->size; r++) {
        uint32_t read;
        if (r == me)
            continue;
        if (!read_by(c, which, sequence, r) &&
                await_cell(c, state, which, sequence, r, read_cell(c, which, r), read_by, r) < 0)
            return -1;
        read = (uint32_t)__atomic_load_n(read_cell(c, which, r), SC);
        if ((int32_t)(read - least) < 0)
            least = read;
    }
    a->clear = least;
    return 0;
}

/* The first half of a step that deposits (every member's, or a broadcast
 * root's): wait until this member's slot of the step's parity is free.  The
 * slot's data, to write the chunk into, or NULL with an exception set. */
static char *
begin_step(CommCore *c, PyObject *state, int which)
{
    uint32_t sequence = next_step(&c->areas[which]);
    if (c->size > 1 && await_clear(c, state, which, sequence - 2) < 0)
        return NULL;
    return data_at(c, which, c->to_rank[c->world_rank], (int)(sequence & 1));
}

/* The second half: this member's header, its read cell and arrival, then with
 * `from` < 0 the wait for every member's arrival; a broadcast's root (`from`
 * is this member) waits for nobody.  The parity of the slots the step used, or
 * -1 with an exception set. */
static int
end_step(CommCore *c, PyObject *state, int which, int64_t length, int64_t unit, int from)
{
    AreaCore *a = &c->areas[which];
    uint32_t sequence = a->seq;
    int parity = (int)(sequence & 1);
    int me = c->to_rank[c->world_rank];
    SlotHeader *h = slot_at(c, which, me, parity);
    h->error = 0;
    h->length = length;
    h->unit = unit;
    /* This member's read cell, before its deposit: whoever sees the deposit sees
     * it, so nobody ever waits for it (no wake-up).  A root reads nothing of its
     * own broadcast; a full step's reads of the step before are done. */
    __atomic_store_n(read_cell(c, which, me), (int32_t)(from < 0 ? sequence - 1 : sequence),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&h->ready, (int32_t)sequence, SC);
    if (c->size == 1)
        return parity;
    a->target += from < 0 ? (uint32_t)c->size : 1;
    cell_bump((int32_t *)a->base);
    if (from >= 0)
        return parity;
    if (await_step(c, state, which, -1) < 0)
        return -1;
    a->clear = sequence - 1;
    return parity;
}

/* A broadcast's step at a member other than the root: wait for the root's
 * deposit; the caller reads it, then calls read_done.  The parity, or -1 with
 * an exception set. */
static int
receive_step(CommCore *c, PyObject *state, int which, int root)
{
    AreaCore *a = &c->areas[which];
    uint32_t sequence = next_step(a);
    a->target += 1;
    if (!deposited_by(c, which, sequence, root) && await_step(c, state, which, root) < 0)
        return -1;
    return (int)(sequence & 1);
}

/* One step whose chunk is chunk[:len] (see end_step); with `from` >= 0, a
 * broadcast's from that member, and the others bring nothing (receive_step). */
static int
step(CommCore *c, PyObject *state, int which, int64_t length, int64_t unit,
     const char *chunk, Py_ssize_t len, int from)
{
    char *slot;
    if (from >= 0 && from != c->to_rank[c->world_rank])
        return receive_step(c, state, which, from);
    if ((slot = begin_step(c, state, which)) == NULL)
        return -1;
    if (len)
        memcpy(slot, chunk, (size_t)len);
    return end_step(c, state, which, length, unit, from);
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

/* The reductions, by which ranks each member folds over which bytes. */
enum { ALLREDUCE, REDUCE, SCAN, EXSCAN, REDUCE_SCATTER_BLOCK };

/* A reduction's data: (send, recv) plain buffers of one numeric format, sendbuf
 * possibly IN_PLACE; recv unused where the result is not wanted (Reduce off the
 * root).  This member folds ranks [first, last) over the bytes [low, high) of
 * the vectors into recv (from its start). */
typedef struct {
    Pair io;
    const char *data;           /* what this member brings */
    Py_ssize_t nbytes, unit;
    int etype, op;
    int first, last;            /* last == first: nothing folded here */
    Py_ssize_t low, high;
} Reduction;

/* 0, or -1 for a miss (nothing held).  `blocks`: the receive buffer holds one
 * block of the send vector in that many (Reduce_scatter_block), the whole
 * vector with IN_PLACE. */
static int
reduction_args(Reduction *r, PyObject *sendbuf, PyObject *recvbuf, PyObject *op,
               int receives, int blocks)
{
    Operand *mine;
    memset(r, 0, sizeof(*r));
    if (receives) {
        if (operand_get(recvbuf, 1, &r->io.recv) < 0)
            return -1;
        r->io.has_recv = 1;
    }
    if (sendbuf == g_in_place) {
        if (!receives || r->io.recv.count % blocks)
            goto miss;          /* Python raises ERR_BUFFER, or that the blocks are uneven */
        mine = &r->io.recv;
    }
    else {
        if (operand_get(sendbuf, 0, &r->io.send) < 0)
            goto miss;
        r->io.has_send = 1;
        mine = &r->io.send;
        if (receives && (r->io.send.code != r->io.recv.code ||
                         r->io.send.view.len != r->io.recv.view.len * blocks ||
                         pair_overlaps(&r->io)))
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
    pair_release(&r->io);
    return -1;
}

/* What member `me` of `n` folds in a reduction of this kind. */
static void
reduction_span(Reduction *r, int kind, int receives, int me, int n)
{
    Py_ssize_t block = r->nbytes / n;
    r->first = 0;
    r->last = !receives ? 0 : kind == SCAN ? me + 1 : kind == EXSCAN ? me : n;
    r->low = kind == REDUCE_SCATTER_BLOCK ? me * block : 0;
    r->high = kind == REDUCE_SCATTER_BLOCK ? r->low + block : r->nbytes;
}

/* into[:len] = the fold of members [first, last)'s bytes [from, from+len) of the
 * step's chunk, in rank order. */
static void
fold_chunk(CommCore *c, Reduction *r, int which, int parity, int first, int last,
           Py_ssize_t from, char *into, Py_ssize_t len)
{
    int rank;
    if (last - first == 1) {
        memcpy(into, data_at(c, which, first, parity) + from, (size_t)len);
        return;
    }
    fold_all(r->etype, r->op, data_at(c, which, first, parity) + from,
             data_at(c, which, first + 1, parity) + from, into, len);
    for (rank = first + 2; rank < last; rank++)
        fold_all(r->etype, r->op, into, data_at(c, which, rank, parity) + from, into, len);
}

/* Fold what this member wants of the chunk [start, start + size) of the vectors
 * (collarea._combine). */
static void
fold_wanted(CommCore *c, Reduction *r, int which, int parity, Py_ssize_t start,
            Py_ssize_t size)
{
    Py_ssize_t low = r->low > start ? r->low : start;
    Py_ssize_t high = r->high < start + size ? r->high : start + size;
    if (r->last > r->first && low < high)
        fold_chunk(c, r, which, parity, r->first, r->last, low - start,
                   (char *)r->io.recv.view.buf + (low - r->low), high - low);
}

/* A whole fold through the large area at more than SLICED_ABOVE ranks, two steps
 * a chunk (collarea.fold): every member folds its slice of the chunk, then
 * publishes it and takes the others'.  0, or -1 with an exception set. */
static int
sliced(CommCore *c, PyObject *state, Reduction *r, int receives)
{
    Py_ssize_t size = whole_items(c->areas[LARGE].slot, r->unit), start;
    int me = c->to_rank[c->world_rank], n = c->size, q;
    char *recv = receives ? (char *)r->io.recv.view.buf : NULL, *spare = NULL;
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
        fold_chunk(c, r, LARGE, parity, 0, n, low, mine, high - low);
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

/* A reduction of this kind (root: Reduce's; -1 for the others): True, NULL
 * with an exception set, False (missed), or (parity, lengths, units). */
static PyObject *
reduction(PyObject *state, PyObject *sendbuf, PyObject *recvbuf, PyObject *op, int kind,
          long root)
{
    CommCore *c = coll_comm(state);
    Reduction r;
    int me, receives, parity;
    Py_ssize_t chunk, start;
    PyObject *result = Py_True;
    if (c == NULL || root >= c->size)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    receives = kind != REDUCE || me == root;
    if (reduction_args(&r, sendbuf, recvbuf, op, receives,
                       kind == REDUCE_SCATTER_BLOCK ? c->size : 1) < 0)
        Py_RETURN_FALSE;
    reduction_span(&r, kind, receives, me, c->size);
    chunk = whole_items(c->areas[SMALL].slot, r.unit);
    parity = step(c, state, SMALL, r.nbytes, r.unit, r.data,
                  r.nbytes < chunk ? r.nbytes : chunk, -1);
    if (parity < 0)
        result = NULL;
    else if (!agreed(c, parity, r.nbytes, r.unit) ||
             (r.nbytes > chunk && c->areas[LARGE].base == NULL))
        result = hand_over(c, parity);
    else if (r.nbytes <= chunk)
        fold_wanted(c, &r, SMALL, parity, 0, chunk);
    else if ((kind == ALLREDUCE || kind == REDUCE) && c->size > SLICED_ABOVE) {
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
            fold_wanted(c, &r, LARGE, parity, start, chunk);
        }
    }
    pair_release(&r.io);
    Py_XINCREF(result);
    return result;
}

/* coll_allreduce(state, sendbuf, recvbuf, op) -> True, False (missed) or
 * (parity, lengths, units) for Python to go on from */
static PyObject *
n_coll_allreduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_allreduce", nargs, 4) < 0)
        return NULL;
    return reduction(args[0], args[1], args[2], args[3], ALLREDUCE, -1);
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
    return reduction(args[0], args[1], args[2], args[3], REDUCE, root);
}

/* coll_scan(state, sendbuf, recvbuf, op, inclusive) -> as coll_allreduce: Scan
 * (inclusive True) or Exscan */
static PyObject *
n_coll_scan(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_scan", nargs, 5) < 0)
        return NULL;
    return reduction(args[0], args[1], args[2], args[3],
                     PyObject_IsTrue(args[4]) ? SCAN : EXSCAN, -1);
}

/* coll_reduce_scatter_block(state, sendbuf, recvbuf, op) -> as coll_allreduce */
static PyObject *
n_coll_reduce_scatter_block(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_reduce_scatter_block", nargs, 4) < 0)
        return NULL;
    return reduction(args[0], args[1], args[2], args[3], REDUCE_SCATTER_BLOCK, -1);
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
    /* the receivers read the root's slots, and say so once they did (read_done);
     * handed over, Python reads on and says so */
    slot = c->areas[SMALL].slot;
    parity = step(c, args[0], SMALL, o.view.len, 0, o.view.buf,
                  o.view.len < slot ? o.view.len : slot, (int)root);
    if (parity < 0)
        result = NULL;
    else if ((me != root && !root_agrees(c, parity, (int)root, o.view.len)) ||
             (o.view.len > slot && c->areas[LARGE].base == NULL))
        result = hand_over(c, parity);
    else if (o.view.len <= slot) {
        if (me != root)
            memcpy(o.view.buf, data_at(c, SMALL, (int)root, parity), (size_t)o.view.len);
        read_done(c, SMALL);
    }
    else {
        read_done(c, SMALL);
        slot = c->areas[LARGE].slot;
        for (start = 0; start < o.view.len; start += slot) {
            Py_ssize_t len = o.view.len - start < slot ? o.view.len - start : slot;
            parity = step(c, args[0], LARGE, o.view.len, 0, (char *)o.view.buf + start, len,
                          (int)root);
            if (parity < 0) {
                result = NULL;
                break;
            }
            if (me != root)
                memcpy((char *)o.view.buf + start, data_at(c, LARGE, (int)root, parity),
                       (size_t)len);
            read_done(c, LARGE);
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
    if (taking_turns())
        Py_RETURN_FALSE;
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
    if (taking_turns())
        Py_RETURN_FALSE;
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
        return hand_over(c, parity);    /* Python reads on, and says when it is done */
    if (me == root) {
        Py_INCREF(data);
        return data;
    }
    data = deposited(c, (int)root, parity);
    read_done(c, SMALL);
    return data;
}

/* --- Gather, Allgather, Scatter, Alltoall of plain buffers ------------------------
 *
 * What the members deposit is what collective.py's exchange moves: Gather's and
 * Allgather's streams are the parts themselves (the root of a Gather brings
 * nothing), Scatter's and Alltoall's a table of (offset, length) per rank, then
 * the parts (collective._parts_stream).  C takes the call when every stream fits
 * the small area; otherwise, or when a member failed or a part does not fit its
 * place, it hands the call over after the first step. */

typedef struct {
    int64_t offset, length;
} TableEntry;

/* The parts (send and receive buffers cut in `n`) of a call; `part` bytes each. */
typedef struct {
    Pair io;
    Py_ssize_t part;
} Parts;

/* Fill p: recvbuf (when `receives`) writable and cut in n parts, sendbuf
 * (unless IN_PLACE, allowed only where `in_place`) of `send_parts` parts of the
 * same size, the two apart.  0, or -1 for a miss (nothing held). */
static int
parts_args(Parts *p, PyObject *sendbuf, PyObject *recvbuf, int n, int receives,
           int send_parts, int in_place)
{
    memset(p, 0, sizeof(*p));
    if (receives) {
        if (operand_get(recvbuf, 1, &p->io.recv) < 0)
            return -1;
        p->io.has_recv = 1;
        if (p->io.recv.count % n)
            goto miss;
        p->part = p->io.recv.view.len / n;
    }
    if (sendbuf == g_in_place) {
        if (in_place && receives)
            return 0;
        goto miss;
    }
    if (operand_get(sendbuf, 0, &p->io.send) < 0)
        goto miss;
    p->io.has_send = 1;
    if (send_parts > 1 && p->io.send.count % send_parts)
        goto miss;
    if (!receives)
        p->part = p->io.send.view.len / send_parts;
    else if (p->io.send.view.len != p->part * send_parts || pair_overlaps(&p->io))
        goto miss;
    return 0;
miss:
    pair_release(&p->io);
    return -1;
}

static inline char *
part_at(Operand *o, Py_ssize_t part, int index)
{
    return (char *)o->view.buf + part * index;
}

/* Deposit the first step of a table stream of the `body` bytes at data, cut in
 * one part per rank where `spans` says (NULL: `n` parts of `part` bytes in rank
 * order): the table, then as much of the data as the slot holds.  The parity,
 * or -1 with an exception set. */
static int
table_step(CommCore *c, PyObject *state, const char *data, Py_ssize_t body,
           const Span *spans, Py_ssize_t part)
{
    int n = c->size, r;
    Py_ssize_t table = n * (Py_ssize_t)sizeof(TableEntry), slot = c->areas[SMALL].slot;
    char *into = begin_step(c, state, SMALL);
    if (into == NULL)
        return -1;
    for (r = 0; r < n; r++) {
        TableEntry e = {table + (spans ? spans[r].at : r * part), spans ? spans[r].len : part};
        memcpy(into + r * sizeof(TableEntry), &e, sizeof(e));
    }
    memcpy(into + table, data, (size_t)(body < slot - table ? body : slot - table));
    return end_step(c, state, SMALL, table + body, 0, -1);
}

/* Where part `index` of rank's table stream lies in its slot, when whole there
 * and `part` bytes long; NULL otherwise. */
static const char *
table_part(CommCore *c, int rank, int parity, int index, Py_ssize_t part)
{
    SlotHeader *h = slot_at(c, SMALL, rank, parity);
    TableEntry e;
    if (h->length < (int64_t)((index + 1) * sizeof(TableEntry)))
        return NULL;
    memcpy(&e, data_at(c, SMALL, rank, parity) + index * sizeof(TableEntry), sizeof(e));
    if (e.length != part || e.offset < 0 || e.offset + e.length > h->length)
        return NULL;
    return data_at(c, SMALL, rank, parity) + e.offset;
}

/* Did every member take part, all within a small slot, each rank other than
 * `skip` bringing the bytes of its part in `parts` (any length when NULL)? */
static int
all_bring(CommCore *c, int parity, int skip, const Span *parts)
{
    int r;
    if (!all_small(c, parity, -1))
        return 0;
    for (r = 0; parts != NULL && r < c->size; r++)
        if (r != skip && slot_at(c, SMALL, r, parity)->length != parts[r].len)
            return 0;
    return 1;
}

/* Gather's or Allgather's buffers into p (`receives`: this member's receive
 * buffer too), and where each rank's part lands in it into recvs: equal parts,
 * or (`vector`) as the message's counts and displacements say; member `me`'s
 * send buffer the size of its part.  0, or -1 for a miss (nothing held). */
static int
gather_args(Parts *p, PyObject *sendbuf, PyObject *recvbuf, int n, int me, int receives,
            int vector, Span *recvs)
{
    int r;
    if (!vector) {
        if (parts_args(p, sendbuf, recvbuf, n, receives, 1, 1) < 0)
            return -1;
        for (r = 0; receives && r < n; r++)
            recvs[r] = (Span){r * p->part, p->part};
        return 0;
    }
    memset(p, 0, sizeof(*p));
    if (receives) {
        if (vector_get(recvbuf, 1, n, &p->io.recv, recvs) < 0)
            return -1;
        p->io.has_recv = 1;
    }
    if (sendbuf == g_in_place && receives)
        return 0;
    if (sendbuf != g_in_place && operand_get(sendbuf, 0, &p->io.send) == 0) {
        p->io.has_send = 1;
        if (!receives || (p->io.send.view.len == recvs[me].len && !pair_overlaps(&p->io)))
            return 0;
    }
    pair_release(&p->io);
    return -1;
}

/* Gather (root >= 0) or Allgather (root -1); `vector`: Gatherv, Allgatherv. */
static PyObject *
gather(PyObject *state, PyObject *sendbuf, PyObject *recvbuf, long root, int vector)
{
    CommCore *c = coll_comm(state);
    Parts p;
    Span *recvs;
    int me, r, receives, parity;
    const char *own;
    Py_ssize_t length;
    PyObject *result = Py_True;
    if (c == NULL || root >= c->size)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    receives = root < 0 || me == root;
    if ((recvs = PyMem_New(Span, (size_t)c->size)) == NULL)
        return PyErr_NoMemory();
    if (gather_args(&p, sendbuf, recvbuf, c->size, me, receives, vector, recvs) < 0) {
        PyMem_Free(recvs);
        Py_RETURN_FALSE;
    }
    /* with IN_PLACE this member's part goes out from the receive buffer */
    own = p.io.has_send ? p.io.send.view.buf : (char *)p.io.recv.view.buf + recvs[me].at;
    length = me == root ? 0 : p.io.has_send ? p.io.send.view.len : recvs[me].len;
    parity = step(c, state, SMALL, length, 0, own,
                  length < c->areas[SMALL].slot ? length : c->areas[SMALL].slot, -1);
    if (parity < 0)
        result = NULL;
    else if (!all_bring(c, parity, root < 0 ? -1 : (int)root, receives ? recvs : NULL))
        result = hand_over(c, parity);
    else if (receives) {
        for (r = 0; r < c->size; r++)
            if (r != me)
                memcpy((char *)p.io.recv.view.buf + recvs[r].at, data_at(c, SMALL, r, parity),
                       (size_t)recvs[r].len);
        if (p.io.has_send)
            memcpy((char *)p.io.recv.view.buf + recvs[me].at, own, (size_t)recvs[me].len);
    }
    pair_release(&p.io);
    PyMem_Free(recvs);
    Py_XINCREF(result);
    return result;
}

/* coll_gather(v)'s call `name`(state, sendbuf, recvbuf, root) */
static PyObject *
rooted_gather(const char *name, PyObject *const *args, Py_ssize_t nargs, int vector)
{
    long root;
    if (check_nargs(name, nargs, 4) < 0)
        return NULL;
    if ((root = plain_int(args[3])) < 0)
        Py_RETURN_FALSE;
    return gather(args[0], args[1], args[2], root, vector);
}

/* coll_gather(state, sendbuf, recvbuf, root) -> True, False (missed) or (parity,
 * lengths, units) for Python to go on from */
static PyObject *
n_coll_gather(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return rooted_gather("coll_gather", args, nargs, 0);
}

/* coll_gatherv(state, sendbuf, recvbuf, root) -> as coll_gather */
static PyObject *
n_coll_gatherv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return rooted_gather("coll_gatherv", args, nargs, 1);
}

/* coll_allgather(state, sendbuf, recvbuf) -> as coll_gather */
static PyObject *
n_coll_allgather(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_allgather", nargs, 3) < 0)
        return NULL;
    return gather(args[0], args[1], args[2], -1, 0);
}

/* coll_allgatherv(state, sendbuf, recvbuf) -> as coll_gather */
static PyObject *
n_coll_allgatherv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_allgatherv", nargs, 3) < 0)
        return NULL;
    return gather(args[0], args[1], args[2], -1, 1);
}

/* The root's Scatter (equal parts) or Scatterv (`vector`: as the message's
 * counts and displacements say) buffers into p, each rank's part of the send
 * buffer into sends; the receive buffer (unless IN_PLACE) the size of member
 * `me`'s part.  0, or -1 for a miss (nothing held). */
static int
scatter_root_args(Parts *p, PyObject *sendbuf, PyObject *recvbuf, int n, int me, int vector,
                  Span *sends)
{
    int r;
    if (!vector) {
        if (parts_args(p, sendbuf, Py_None, n, 0, n, 0) < 0)
            return -1;
        for (r = 0; r < n; r++)
            sends[r] = (Span){r * p->part, p->part};
    }
    else {
        memset(p, 0, sizeof(*p));
        if (vector_get(sendbuf, 0, n, &p->io.send, sends) < 0)
            return -1;
        p->io.has_send = 1;
    }
    if (recvbuf == g_in_place)
        return 0;
    if (operand_get(recvbuf, 1, &p->io.recv) == 0) {
        p->io.has_recv = 1;
        if (p->io.recv.view.len == sends[me].len && !pair_overlaps(&p->io))
            return 0;
    }
    pair_release(&p->io);
    return -1;
}

/* Scatter or (`vector`) Scatterv: as coll_gather. */
static PyObject *
scatter(PyObject *state, PyObject *sendbuf, PyObject *recvbuf, PyObject *root_arg, int vector)
{
    CommCore *c = coll_comm(state);
    Parts p;
    Span *sends;
    long root;
    int me, parity;
    const char *mine = NULL;
    PyObject *result = Py_True;
    if (!c || (root = plain_int(root_arg)) < 0 || root >= c->size ||
            c->size * (Py_ssize_t)sizeof(TableEntry) > c->areas[SMALL].slot)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    if ((sends = PyMem_New(Span, (size_t)c->size)) == NULL)
        return PyErr_NoMemory();
    if (me == root) {
        /* the root's parts are its send buffer's; its own goes to recvbuf */
        if (scatter_root_args(&p, sendbuf, recvbuf, c->size, me, vector, sends) < 0) {
            PyMem_Free(sends);
            Py_RETURN_FALSE;
        }
        parity = table_step(c, state, p.io.send.view.buf, p.io.send.view.len, sends, 0);
    }
    else {
        memset(&p, 0, sizeof(p));      /* sendbuf is not significant here */
        if (operand_get(recvbuf, 1, &p.io.recv) < 0) {
            PyMem_Free(sends);
            Py_RETURN_FALSE;
        }
        p.io.has_recv = 1;
        p.part = p.io.recv.view.len;
        parity = step(c, state, SMALL, 0, 0, NULL, 0, -1);
    }
    if (parity < 0)
        result = NULL;
    else if (!all_bring(c, parity, -1, NULL) ||
             (me != root && !(mine = table_part(c, (int)root, parity, me, p.part))))
        result = hand_over(c, parity);
    else if (me != root)
        memcpy(p.io.recv.view.buf, mine, (size_t)p.part);
    else if (p.io.has_recv)
        memcpy(p.io.recv.view.buf, (char *)p.io.send.view.buf + sends[me].at,
               (size_t)sends[me].len);
    pair_release(&p.io);
    PyMem_Free(sends);
    Py_XINCREF(result);
    return result;
}

/* coll_scatter(state, sendbuf, recvbuf, root) -> as coll_gather */
static PyObject *
n_coll_scatter(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_scatter", nargs, 4) < 0)
        return NULL;
    return scatter(args[0], args[1], args[2], args[3], 0);
}

/* coll_scatterv(state, sendbuf, recvbuf, root) -> as coll_gather */
static PyObject *
n_coll_scatterv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_scatterv", nargs, 4) < 0)
        return NULL;
    return scatter(args[0], args[1], args[2], args[3], 1);
}

/* Alltoall's (cut in equal parts) or Alltoallv's (`vector`: as the messages'
 * counts and displacements say) buffers into p, each rank's part of the send
 * buffer into sends and of the receive buffer into recvs, member `me`'s own
 * part the same size in both.  0, or -1 for a miss (nothing held). */
static int
alltoall_args(Parts *p, PyObject *sendbuf, PyObject *recvbuf, int n, int me, int vector,
              Span *sends, Span *recvs)
{
    int r;
    if (!vector) {
        if (parts_args(p, sendbuf, recvbuf, n, 1, n, 1) < 0)
            return -1;
        for (r = 0; r < n; r++)
            sends[r] = recvs[r] = (Span){r * p->part, p->part};
        return 0;
    }
    memset(p, 0, sizeof(*p));
    if (vector_get(recvbuf, 1, n, &p->io.recv, recvs) < 0)
        return -1;
    p->io.has_recv = 1;
    if (sendbuf == g_in_place)
        return 0;
    if (vector_get(sendbuf, 0, n, &p->io.send, sends) == 0) {
        p->io.has_send = 1;
        if (sends[me].len == recvs[me].len && !pair_overlaps(&p->io))
            return 0;
    }
    pair_release(&p->io);
    return -1;
}

/* Alltoall or (`vector`) Alltoallv: as coll_gather. */
static PyObject *
alltoall(PyObject *state, PyObject *sendbuf, PyObject *recvbuf, int vector)
{
    CommCore *c = coll_comm(state);
    Parts p;
    Span *sends, *recvs, *out_spans;
    Operand *out;
    int me, n, r, parity;
    PyObject *result = Py_True;
    if (c == NULL || c->size * (Py_ssize_t)sizeof(TableEntry) > c->areas[SMALL].slot)
        Py_RETURN_FALSE;
    n = c->size;
    me = c->to_rank[c->world_rank];
    if ((sends = PyMem_New(Span, 2 * (size_t)n)) == NULL)
        return PyErr_NoMemory();
    recvs = sends + n;
    if (alltoall_args(&p, sendbuf, recvbuf, n, me, vector, sends, recvs) < 0) {
        PyMem_Free(sends);
        Py_RETURN_FALSE;
    }
    /* with IN_PLACE the parts go out from the receive buffer */
    out = p.io.has_send ? &p.io.send : &p.io.recv;
    out_spans = p.io.has_send ? sends : recvs;
    parity = table_step(c, state, out->view.buf, out->view.len, out_spans, 0);
    if (parity < 0)
        result = NULL;
    else if (!all_bring(c, parity, -1, NULL))
        result = hand_over(c, parity);
    else {
        for (r = 0; r < n; r++)
            if (r != me && table_part(c, r, parity, me, recvs[r].len) == NULL)
                break;
        if (r < n)
            result = hand_over(c, parity);
        else {
            for (r = 0; r < n; r++)
                if (r != me)
                    memcpy((char *)p.io.recv.view.buf + recvs[r].at,
                           table_part(c, r, parity, me, recvs[r].len), (size_t)recvs[r].len);
            if (p.io.has_send)
                memcpy((char *)p.io.recv.view.buf + recvs[me].at,
                       (char *)p.io.send.view.buf + sends[me].at, (size_t)recvs[me].len);
        }
    }
    pair_release(&p.io);
    PyMem_Free(sends);
    Py_XINCREF(result);
    return result;
}

/* coll_alltoall(state, sendbuf, recvbuf) -> as coll_gather */
static PyObject *
n_coll_alltoall(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_alltoall", nargs, 3) < 0)
        return NULL;
    return alltoall(args[0], args[1], args[2], 0);
}

/* coll_alltoallv(state, sendbuf, recvbuf) -> as coll_gather */
static PyObject *
n_coll_alltoallv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_nargs("coll_alltoallv", nargs, 3) < 0)
        return NULL;
    return alltoall(args[0], args[1], args[2], 1);
}

/* collectives_setup(**constants): the area layout and the Python helpers. */
static PyObject *
n_collectives_setup(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"area_header", "slot_header", "read_line", "wait_slice",
                             "check", "over", "in_place", "sliced_above", NULL};
    PyObject *check, *over, *in_place;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$nnndOOOi:collectives_setup", kwlist,
                                     &AREA_HEADER, &SLOT_HEADER, &READ_LINE, &WAIT_SLICE,
                                     &check, &over, &in_place, &SLICED_ABOVE))
        return NULL;
    if (SLOT_HEADER < (Py_ssize_t)sizeof(SlotHeader) || READ_LINE < 8 || READ_LINE % 8) {
        PyErr_SetString(PyExc_ValueError, "collectives_setup(): the slot header or the "
                        "read line is too small");
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
    {"coll_scan", (PyCFunction)(void (*)(void))n_coll_scan, METH_FASTCALL,
     "coll_scan(state, sendbuf, recvbuf, op, inclusive) -> as coll_allreduce."},
    {"coll_reduce_scatter_block", (PyCFunction)(void (*)(void))n_coll_reduce_scatter_block,
     METH_FASTCALL, "coll_reduce_scatter_block(state, sendbuf, recvbuf, op) -> as "
     "coll_allreduce."},
    {"coll_gather", (PyCFunction)(void (*)(void))n_coll_gather, METH_FASTCALL,
     "coll_gather(state, sendbuf, recvbuf, root) -> as coll_allreduce."},
    {"coll_gatherv", (PyCFunction)(void (*)(void))n_coll_gatherv, METH_FASTCALL,
     "coll_gatherv(state, sendbuf, recvbuf, root) -> as coll_allreduce."},
    {"coll_allgather", (PyCFunction)(void (*)(void))n_coll_allgather, METH_FASTCALL,
     "coll_allgather(state, sendbuf, recvbuf) -> as coll_allreduce."},
    {"coll_allgatherv", (PyCFunction)(void (*)(void))n_coll_allgatherv, METH_FASTCALL,
     "coll_allgatherv(state, sendbuf, recvbuf) -> as coll_allreduce."},
    {"coll_scatter", (PyCFunction)(void (*)(void))n_coll_scatter, METH_FASTCALL,
     "coll_scatter(state, sendbuf, recvbuf, root) -> as coll_allreduce."},
    {"coll_scatterv", (PyCFunction)(void (*)(void))n_coll_scatterv, METH_FASTCALL,
     "coll_scatterv(state, sendbuf, recvbuf, root) -> as coll_allreduce."},
    {"coll_alltoall", (PyCFunction)(void (*)(void))n_coll_alltoall, METH_FASTCALL,
     "coll_alltoall(state, sendbuf, recvbuf) -> as coll_allreduce."},
    {"coll_alltoallv", (PyCFunction)(void (*)(void))n_coll_alltoallv, METH_FASTCALL,
     "coll_alltoallv(state, sendbuf, recvbuf) -> as coll_allreduce."},
    {"coll_allgather_bytes", (PyCFunction)(void (*)(void))n_coll_allgather_bytes,
     METH_FASTCALL, "coll_allgather_bytes(state, data) -> every member's bytes, False "
     "(missed) or (parity, lengths, units)."},
    {"coll_bcast_bytes", (PyCFunction)(void (*)(void))n_coll_bcast_bytes, METH_FASTCALL,
     "coll_bcast_bytes(state, data or None, root) -> the root's bytes, False (missed) or "
     "(parity, lengths, units)."},
    {NULL}
};

int
area_init(PyObject *module)
{
    return PyModule_AddFunctions(module, collective_functions);
}
