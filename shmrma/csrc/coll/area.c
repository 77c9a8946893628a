/*
 * Collectives on shared memory: the protocol of the communicator's collective
 * areas in C, and on it the common cases of Bcast and of the objects'
 * collectives on pickles; the reductions (coll/reductions.c) and Gather,
 * Scatter, Alltoall and their kin (coll/parts.c) take the same steps.
 *
 * The protocol is shmrma/coll/area.py's (read its docstring first): steps in
 * which every member deposits a header and a chunk in its slot, arrives at the
 * area's counter and waits for the others, then reads their slots.  These
 * functions take a call whose arguments are plain (C-contiguous buffers of a
 * numeric format, a predefined op the kernels know, an int root in range) and
 * run it all when every member's first step agrees with this one's.  When a
 * member failed or disagrees, or the data need the large area and this rank
 * has not mapped it yet, they hand the call to Python after the first step:
 * they answer (parity, lengths, units) and coll/blocking.py goes on from there,
 * raising what must be raised.  Before the first step they miss (False) with
 * nothing touched, as every fast path does.
 */
#include "coll.h"

/* The layout and MPI.IN_PLACE are shared with the other files of the
 * collectives on the areas (coll/coll.h). */
Py_ssize_t AREA_HEADER, AREA_SLOT_HEADER, READ_LINE;
int SLICED_ABOVE;               /* from more ranks on, large folds are sliced */
static double WAIT_SLICE;
static PyObject *g_check;       /* collarea.wait_check(state, sequence, first, reader):
                                   * None, or the job's problem to raise */
static PyObject *g_over;        /* collarea.wait_over() */
static PyObject *g_map;         /* collarea.area_of(state): maps the small area */
static PyObject *g_map_large;   /* collarea.large_area_of(state): maps the large one */
PyObject *g_area_in_place;      /* MPI.IN_PLACE */
static int g_setup_done = 0;

/* rank's read cell: a wait cell alone on its line, holding the last step it
 * finished reading (coll/area.py). */
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
 * steps up to three before (coll/area.py): `clear` knows that much at least. */
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
char *
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
int
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
int
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
int
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
PyObject *
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
CommCore *
coll_comm(PyObject *state)
{
    CommCore *c = (CommCore *)state;
    PyObject *mapped;
    if (!g_fast_enabled || !g_setup_done || !PyObject_TypeCheck(state, &CommCoreType) ||
            c->freed || c->ranks == NULL || c->to_rank[c->world_rank] < 0)
        return NULL;
    if (c->areas[SMALL].base == NULL) {
        /* the communicator's first collective: every member maps its area here, or
         * in the Python path when its call misses, which maps it just the same
         * (a failure there is every member's: each raises it in Python) */
        if ((mapped = PyObject_CallOneArg(g_map, state)) == NULL)
            PyErr_Clear();
        Py_XDECREF(mapped);
        if (c->areas[SMALL].base == NULL)
            return NULL;
    }
    return c;
}

/* The large area mapped here, for a call whose first step showed that its data
 * need it: every member sees that in the same step (all lengths are known by
 * then) and maps it here as the Python path would (collarea.large_area_of, a
 * collective whose failure every member raises).  0, or -1 with that error. */
int
large_mapped(CommCore *c, PyObject *state)
{
    PyObject *mapped;
    if (c->areas[LARGE].base != NULL)
        return 0;
    if ((mapped = PyObject_CallOneArg(g_map_large, state)) == NULL)
        return -1;
    Py_DECREF(mapped);
    if (c->areas[LARGE].base == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the large collective area was not bound");
        return -1;
    }
    return 0;
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
    if (message_get(args[1], me != root, 1, &o) < 0)
        Py_RETURN_FALSE;
    /* the receivers read the root's slots, and say so once they did (read_done);
     * handed over, Python reads on and says so */
    slot = c->areas[SMALL].slot;
    parity = step(c, args[0], SMALL, o.view.len, 0, o.view.buf,
                  o.view.len < slot ? o.view.len : slot, (int)root);
    if (parity < 0)
        result = NULL;
    else if (me != root && !root_agrees(c, parity, (int)root, o.view.len))
        result = hand_over(c, parity);
    else if (o.view.len > slot && large_mapped(c, args[0]) < 0)
        result = NULL;
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
    /* True is borrowed; hand_over's answer is already a new reference */
    return result == Py_True ? Py_NewRef(result) : result;
}

/* Did every member (only `root`, when >= 0) take part in the first step (no
 * error), each bringing at most a small slot? */
int
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

/* collectives_setup(**constants): the area layout and the Python helpers. */
static PyObject *
n_collectives_setup(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"area_header", "slot_header", "read_line", "wait_slice",
                             "check", "over", "in_place", "sliced_above", "map_area",
                             "map_large_area", NULL};
    PyObject *check, *over, *in_place, *map_area, *map_large;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$nnndOOOiOO:collectives_setup", kwlist,
                                     &AREA_HEADER, &AREA_SLOT_HEADER, &READ_LINE, &WAIT_SLICE,
                                     &check, &over, &in_place, &SLICED_ABOVE, &map_area,
                                     &map_large))
        return NULL;
    if (AREA_SLOT_HEADER < (Py_ssize_t)sizeof(SlotHeader) || READ_LINE < 8 || READ_LINE % 8) {
        PyErr_SetString(PyExc_ValueError, "collectives_setup(): the slot header or the "
                        "read line is too small");
        return NULL;
    }
    Py_INCREF(check);
    Py_XSETREF(g_check, check);
    Py_INCREF(over);
    Py_XSETREF(g_over, over);
    Py_INCREF(in_place);
    Py_XSETREF(g_area_in_place, in_place);
    Py_INCREF(map_area);
    Py_XSETREF(g_map, map_area);
    Py_INCREF(map_large);
    Py_XSETREF(g_map_large, map_large);
    g_setup_done = 1;
    Py_RETURN_NONE;
}

static PyMethodDef collective_functions[] = {
    {"collectives_setup", (PyCFunction)(void (*)(void))n_collectives_setup,
     METH_VARARGS | METH_KEYWORDS,
     "collectives_setup(**constants): the collective areas' layout and Python helpers."},
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
area_init(PyObject *module)
{
    return PyModule_AddFunctions(module, collective_functions);
}
