/*
 * Gather, Allgather, Scatter and Alltoall of plain buffers, and their vector
 * forms, in C: the collectives that move each rank's part of a buffer, on the
 * steps of the collective areas' protocol (coll/area.c; read its opening
 * comment first).
 *
 * What the members deposit is what coll/blocking.py's exchange moves: Gather's and
 * Allgather's streams are the parts themselves (the root of a Gather brings
 * nothing), Scatter's and Alltoall's a table of (offset, length) per rank, then
 * the parts (collective._parts_stream).  C takes the whole call: in the first
 * step when every stream fits the small area, else through the large area as
 * coll/area.py's exchange does (each stream again from its start, chunk by
 * chunk).  When a member failed, a part does not fit its place, or the large
 * area is not mapped yet (its first use maps it, in Python), it hands the call
 * over after the first step.
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

/* A member's stream: Gather's and Allgather's own part (`spans` NULL), or the
 * table stream of Scatter and Alltoall: the table of where each of the n parts
 * that `spans` says lies, then the parts one after another
 * (collective._parts_stream: what a rank sends, not the buffer it lies in). */
typedef struct {
    const char *data;
    const Span *spans;
    int n;
    Py_ssize_t length;
} Stream;

static Stream
plain_stream(const char *data, Py_ssize_t length)
{
    return (Stream){data, NULL, 0, length};
}

static Stream
table_stream(const char *data, const Span *spans, int n)
{
    Py_ssize_t length = n * (Py_ssize_t)sizeof(TableEntry);
    int r;
    for (r = 0; r < n; r++)
        length += spans[r].len;
    return (Stream){data, spans, n, length};
}

/* Copy what [low, high) of `piece` (which sits at `at` in the stream) has of
 * the stream's bytes [start, start + len) to `into` (which holds those). */
static inline void
copy_overlap(char *into, Py_ssize_t start, Py_ssize_t len, const char *piece, Py_ssize_t at,
             Py_ssize_t size)
{
    Py_ssize_t low = at > start ? at : start;
    Py_ssize_t high = at + size < start + len ? at + size : start + len;
    if (low < high)
        memcpy(into + (low - start), piece + (low - at), (size_t)(high - low));
}

/* Bytes [start, start + len) of stream s into `into`. */
static void
stream_copy(const Stream *s, char *into, Py_ssize_t start, Py_ssize_t len)
{
    Py_ssize_t at = s->n * (Py_ssize_t)sizeof(TableEntry);
    int r;
    if (s->spans == NULL) {
        memcpy(into, s->data + start, (size_t)len);
        return;
    }
    for (r = 0; r < s->n; r++) {
        TableEntry e = {at, s->spans[r].len};
        copy_overlap(into, start, len, (const char *)&e, r * (Py_ssize_t)sizeof(e), sizeof(e));
        copy_overlap(into, start, len, s->data + s->spans[r].at, at, s->spans[r].len);
        at += s->spans[r].len;
    }
}

/* The first step, depositing the start of stream s (as much as a small slot
 * holds).  The parity, or -1 with an exception set. */
static int
first_step(CommCore *c, PyObject *state, const Stream *s)
{
    Py_ssize_t slot = c->areas[SMALL].slot;
    char *into = begin_step(c, state, SMALL);
    if (into == NULL)
        return -1;
    stream_copy(s, into, 0, s->length < slot ? s->length : slot);
    return end_step(c, state, SMALL, s->length, 0, -1);
}

/* Where part `index` of rank's table stream lies in that stream (the table is in
 * the rank's small slot: a table of every member fits one), when it is `part`
 * bytes long and within the stream; else -1. */
static Py_ssize_t
table_entry(CommCore *c, int rank, int parity, int index, Py_ssize_t part)
{
    SlotHeader *h = slot_at(c, SMALL, rank, parity);
    TableEntry e;
    if (h->length < (int64_t)((index + 1) * sizeof(TableEntry)))
        return -1;
    memcpy(&e, data_at(c, SMALL, rank, parity) + index * sizeof(TableEntry), sizeof(e));
    if (e.length != part || e.offset < 0 || e.offset + e.length > h->length)
        return -1;
    return (Py_ssize_t)e.offset;
}

/* Did every member take part (no error), each rank other than `skip` bringing
 * the bytes of its part in `parts` (any length when NULL)? */
static int
all_bring(CommCore *c, int parity, int skip, const Span *parts)
{
    int r;
    for (r = 0; r < c->size; r++) {
        SlotHeader *h = slot_at(c, SMALL, r, parity);
        if (h->error || (parts != NULL && r != skip && h->length != parts[r].len))
            return 0;
    }
    return 1;
}

/* A part this member takes: `length` bytes at `offset` of rank's stream. */
typedef struct {
    int rank;
    Py_ssize_t offset, length;
    char *into;
} Want;

/* The longest stream of the first step. */
static int64_t
longest_stream(CommCore *c, int parity)
{
    int64_t longest = 0;
    int r;
    for (r = 0; r < c->size; r++)
        if (slot_at(c, SMALL, r, parity)->length > longest)
            longest = slot_at(c, SMALL, r, parity)->length;
    return longest;
}

/* Copy what each want holds of the chunk [start, start + size) of its rank's
 * stream, in the area's slots of this parity. */
static void
take(CommCore *c, int which, int parity, Py_ssize_t start, Py_ssize_t size, const Want *wants,
     int count)
{
    int w;
    for (w = 0; w < count; w++) {
        Py_ssize_t low = wants[w].offset > start ? wants[w].offset : start;
        Py_ssize_t high = wants[w].offset + wants[w].length < start + size ?
            wants[w].offset + wants[w].length : start + size;
        if (low < high)
            memcpy(wants[w].into + (low - wants[w].offset),
                   data_at(c, which, wants[w].rank, parity) + (low - start),
                   (size_t)(high - low));
    }
}

/* The rest of a call after its first step (`parity`), when every member took
 * part: the wants from the small slots when every stream fits one, else every
 * stream from its start through the large area in chunks, as coll/area.py's
 * exchange moves them (mapping the large area first when it is not yet).
 * True, or NULL with an exception set. */
static PyObject *
move_streams(CommCore *c, PyObject *state, int parity, const Stream *mine, const Want *wants,
             int count)
{
    int64_t longest = longest_stream(c, parity);
    Py_ssize_t start, size = c->areas[LARGE].slot;
    if (longest <= c->areas[SMALL].slot) {
        take(c, SMALL, parity, 0, c->areas[SMALL].slot, wants, count);
        Py_RETURN_TRUE;
    }
    if (large_mapped(c, state) < 0)
        return NULL;
    size = c->areas[LARGE].slot;
    for (start = 0; start < longest; start += size) {
        Py_ssize_t len = mine->length - start;
        char *into = begin_step(c, state, LARGE);
        if (into == NULL)
            return NULL;
        len = len < 0 ? 0 : len < size ? len : size;
        stream_copy(mine, into, start, len);
        if ((parity = end_step(c, state, LARGE, mine->length, 0, -1)) < 0)
            return NULL;
        take(c, LARGE, parity, start, size, wants, count);
    }
    Py_RETURN_TRUE;
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
    Want *wants;
    Stream mine;
    int me, r, receives, parity, count = 0;
    const char *own;
    PyObject *result;
    if (c == NULL || root >= c->size)
        Py_RETURN_FALSE;
    me = c->to_rank[c->world_rank];
    receives = root < 0 || me == root;
    if ((recvs = PyMem_Malloc((size_t)c->size * (sizeof(Span) + sizeof(Want)))) == NULL)
        return PyErr_NoMemory();
    wants = (Want *)(recvs + c->size);
    if (gather_args(&p, sendbuf, recvbuf, c->size, me, receives, vector, recvs) < 0) {
        PyMem_Free(recvs);
        Py_RETURN_FALSE;
    }
    /* with IN_PLACE this member's part goes out from the receive buffer */
    own = p.io.has_send ? p.io.send.view.buf : (char *)p.io.recv.view.buf + recvs[me].at;
    mine = plain_stream(own, me == root ? 0 : p.io.has_send ? p.io.send.view.len
                                                           : recvs[me].len);
    for (r = 0; receives && r < c->size; r++)
        if (r != me)
            wants[count++] = (Want){r, 0, recvs[r].len, (char *)p.io.recv.view.buf + recvs[r].at};
    if ((parity = first_step(c, state, &mine)) < 0)
        result = NULL;
    else if (!all_bring(c, parity, root < 0 ? -1 : (int)root, receives ? recvs : NULL))
        result = hand_over(c, parity);
    else if ((result = move_streams(c, state, parity, &mine, wants, count)) == Py_True &&
             receives && p.io.has_send)
        memcpy((char *)p.io.recv.view.buf + recvs[me].at, own, (size_t)recvs[me].len);
    pair_release(&p.io);
    PyMem_Free(recvs);
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
    Stream mine = plain_stream(NULL, 0);
    Want want;
    Py_ssize_t own = 0;
    long root;
    int me, parity;
    PyObject *result;
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
        own = sends[me].len;
        sends[me].len = 0;      /* the root's own part does not travel: it copies it */
        mine = table_stream(p.io.send.view.buf, sends, c->size);
    }
    else {
        memset(&p, 0, sizeof(p));      /* sendbuf is not significant here */
        if (message_get(recvbuf, 1, 1, &p.io.recv) < 0) {
            PyMem_Free(sends);
            Py_RETURN_FALSE;
        }
        p.io.has_recv = 1;
        p.part = p.io.recv.view.len;
    }
    if ((parity = first_step(c, state, &mine)) < 0)
        result = NULL;
    else if (!all_bring(c, parity, -1, NULL) || (me != root && (want.offset = table_entry(
                 c, (int)root, parity, me, p.part)) < 0))
        result = hand_over(c, parity);
    else {
        want = (Want){(int)root, want.offset, p.part, p.io.recv.view.buf};
        result = move_streams(c, state, parity, &mine, &want, me != root);
        if (result == Py_True && me == root && p.io.has_recv)
            memcpy(p.io.recv.view.buf, (char *)p.io.send.view.buf + sends[me].at, (size_t)own);
    }
    pair_release(&p.io);
    PyMem_Free(sends);
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
    Span *sends, *recvs;
    Want *wants;
    Stream mine;
    int me, n, r, parity, count = 0;
    Py_ssize_t own;
    char *copy = NULL;
    PyObject *result = NULL;
    if (c == NULL || c->size * (Py_ssize_t)sizeof(TableEntry) > c->areas[SMALL].slot)
        Py_RETURN_FALSE;
    n = c->size;
    me = c->to_rank[c->world_rank];
    if ((sends = PyMem_Malloc((size_t)n * (2 * sizeof(Span) + sizeof(Want)))) == NULL)
        return PyErr_NoMemory();
    recvs = sends + n;
    wants = (Want *)(recvs + n);
    if (alltoall_args(&p, sendbuf, recvbuf, n, me, vector, sends, recvs) < 0) {
        PyMem_Free(sends);
        Py_RETURN_FALSE;
    }
    /* with IN_PLACE the parts go out from the receive buffer; a copy of it when
     * the parts received would land there before all of it went out. This member's
     * own part does not travel (it copies it, or it is in place) */
    own = recvs[me].len;
    (p.io.has_send ? sends : recvs)[me].len = 0;
    mine = p.io.has_send ? table_stream(p.io.send.view.buf, sends, n)
                         : table_stream(p.io.recv.view.buf, recvs, n);
    if (!p.io.has_send && mine.length > c->areas[SMALL].slot) {
        if ((copy = PyMem_Malloc((size_t)p.io.recv.view.len + 1)) == NULL) {
            result = Py_NewRef(Py_False);   /* a miss: Python's path says it to all */
            goto done;
        }
        mine.data = memcpy(copy, p.io.recv.view.buf, (size_t)p.io.recv.view.len);
    }
    if ((parity = first_step(c, state, &mine)) < 0)
        goto done;
    for (r = all_bring(c, parity, -1, NULL) ? 0 : n + 1; r < n; r++) {
        Py_ssize_t offset = r == me ? 0 : table_entry(c, r, parity, me, recvs[r].len);
        if (offset < 0)
            break;
        if (r != me)
            wants[count++] = (Want){r, offset, recvs[r].len,
                                    (char *)p.io.recv.view.buf + recvs[r].at};
    }
    if (r != n)
        result = hand_over(c, parity);
    else if ((result = move_streams(c, state, parity, &mine, wants, count)) == Py_True &&
             p.io.has_send)
        memcpy((char *)p.io.recv.view.buf + recvs[me].at,
               (char *)p.io.send.view.buf + sends[me].at, (size_t)own);
done:
    PyMem_Free(copy);
    pair_release(&p.io);
    PyMem_Free(sends);
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
