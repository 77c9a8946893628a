/*
 * Gather, Allgather, Scatter and Alltoall of plain buffers, and their vector
 * forms, in C: the collectives that move each rank's part of a buffer, on the
 * steps of the collective areas' protocol (coll/area.c; read its opening
 * comment first).
 *
 * What the members deposit is what coll/blocking.py's exchange moves: Gather's and
 * Allgather's streams are the parts themselves (the root of a Gather brings
 * nothing), Scatter's and Alltoall's a table of (offset, length) per rank, then
 * the parts (collective._parts_stream).  C takes the call when every stream fits
 * the small area; otherwise, or when a member failed or a part does not fit its
 * place, it hands the call over after the first step.
 */
#include "coll.h"

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
        if (message_get(recvbuf, 1, n, &p->io.recv) < 0)
            return -1;
        p->io.has_recv = 1;
        if (p->io.recv.count % n)
            goto miss;
        p->part = p->io.recv.view.len / n;
    }
    if (sendbuf == g_area_in_place) {
        if (in_place && receives)
            return 0;
        goto miss;
    }
    if (message_get(sendbuf, 0, send_parts, &p->io.send) < 0)
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

/* Deposit the first step of the table stream of the parts of data that `spans`
 * says, one per rank: the table of where each part lies in the stream, then the
 * parts one after another (collective._parts_stream: what a rank sends, not the
 * buffer it lies in), as much of it as the slot holds.  The parity, or -1 with
 * an exception set. */
static int
table_step(CommCore *c, PyObject *state, const char *data, const Span *spans)
{
    int n = c->size, r;
    Py_ssize_t table = n * (Py_ssize_t)sizeof(TableEntry), slot = c->areas[SMALL].slot;
    Py_ssize_t at = table;
    char *into = begin_step(c, state, SMALL);
    if (into == NULL)
        return -1;
    for (r = 0; r < n; r++) {
        TableEntry e = {at, spans[r].len};
        memcpy(into + r * sizeof(TableEntry), &e, sizeof(e));
        if (at < slot)
            memcpy(into + at, data + spans[r].at,
                   (size_t)(spans[r].len < slot - at ? spans[r].len : slot - at));
        at += spans[r].len;
    }
    return end_step(c, state, SMALL, at, 0, -1);
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
    if (sendbuf == g_area_in_place && receives)
        return 0;
    if (sendbuf != g_area_in_place && message_get(sendbuf, 0, 1, &p->io.send) == 0) {
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
    if (recvbuf == g_area_in_place)
        return 0;
    if (message_get(recvbuf, 1, 1, &p->io.recv) == 0) {
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
        parity = table_step(c, state, p.io.send.view.buf, sends);
    }
    else {
        memset(&p, 0, sizeof(p));      /* sendbuf is not significant here */
        if (message_get(recvbuf, 1, 1, &p.io.recv) < 0) {
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
    if (sendbuf == g_area_in_place)
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
    parity = table_step(c, state, out->view.buf, out_spans);
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

static PyMethodDef parts_functions[] = {
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
    {NULL}
};

int
parts_init(PyObject *module)
{
    return PyModule_AddFunctions(module, parts_functions);
}
