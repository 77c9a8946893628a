/*
 * The reductions on the collective areas in C: the common cases of Allreduce,
 * Reduce, Scan, Exscan and Reduce_scatter_block, on the steps of the areas'
 * protocol (coll/area.c; read its opening comment first).
 *
 * Every member deposits its vector, in one small slot when it fits, else chunk
 * after chunk through the large area, and folds the part of every chunk that it
 * wants: the members' bytes in rank order (all of them, the ranks up to it for
 * the scans, none off Reduce's root), over the whole vectors or its own block
 * of them (Reduce_scatter_block), with the kernels of types/op.c, bit for bit
 * as types/op.py's apply folds.
 * Above SLICED_ABOVE ranks a large Allreduce or Reduce is sliced instead: every
 * member folds its slice of each chunk, then publishes it for the others.
 */
#include "coll.h"

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
    int in_place = sendbuf == g_area_in_place;
    memset(r, 0, sizeof(*r));
    if (receives) {     /* with IN_PLACE, the whole vector: a count is one block's */
        if (message_get(recvbuf, 1, in_place ? blocks : 1, &r->io.recv) < 0)
            return -1;
        r->io.has_recv = 1;
    }
    if (in_place) {
        if (!receives || r->io.recv.count % blocks)
            goto miss;          /* Python raises ERR_BUFFER, or that the blocks are uneven */
        mine = &r->io.recv;
    }
    else {
        if (message_get(sendbuf, 0, blocks, &r->io.send) < 0)
            goto miss;
        r->io.has_send = 1;
        mine = &r->io.send;
        if (receives && (r->io.send.datatype != r->io.recv.datatype ||
                         r->io.send.view.len != r->io.recv.view.len * blocks ||
                         pair_overlaps(&r->io)))
            goto miss;
    }
    r->data = mine->view.buf;
    r->nbytes = mine->view.len;
    r->unit = mine->extent;
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
    else if (!agreed(c, parity, r.nbytes, r.unit))
        result = hand_over(c, parity);
    else if (r.nbytes > chunk && large_mapped(c, state) < 0)
        result = NULL;
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
    /* True is borrowed; hand_over's answer is already a new reference */
    return result == Py_True ? Py_NewRef(result) : result;
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

static PyMethodDef reductions_functions[] = {
    {"coll_allreduce", (PyCFunction)(void (*)(void))n_coll_allreduce, METH_FASTCALL,
     "coll_allreduce(state, sendbuf, recvbuf, op) -> True, False (missed) or "
     "(parity, lengths, units) for the Python path to go on from."},
    {"coll_reduce", (PyCFunction)(void (*)(void))n_coll_reduce, METH_FASTCALL,
     "coll_reduce(state, sendbuf, recvbuf, op, root) -> as coll_allreduce."},
    {"coll_scan", (PyCFunction)(void (*)(void))n_coll_scan, METH_FASTCALL,
     "coll_scan(state, sendbuf, recvbuf, op, inclusive) -> as coll_allreduce."},
    {"coll_reduce_scatter_block", (PyCFunction)(void (*)(void))n_coll_reduce_scatter_block,
     METH_FASTCALL, "coll_reduce_scatter_block(state, sendbuf, recvbuf, op) -> as "
     "coll_allreduce."},
    {NULL}
};

int
reductions_init(PyObject *module)
{
    return PyModule_AddFunctions(module, reductions_functions);
}
