/*
 * The core of communicators in C: CommCore, what the fast paths need of a
 * communicator (its context, its members, its collective areas).
 * p2p/communicator.py's CommState derives from it; the point-to-point fast
 * paths (p2p/calls.c) and the collectives (csrc/coll/) read it.
 */
#include "p2p.h"

static PyObject *
commcore_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* the subclass's arguments are its own: bind() gives the members */
    return type->tp_alloc(type, 0);
}

static void
commcore_dealloc(CommCore *c)
{
    PyMem_Free(c->ranks);
    PyMem_Free(c->to_rank);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* _bind(context, ranks, world_size, world_rank): the communicator's context and
 * members, and who this process is */
static PyObject *
commcore_bind(CommCore *c, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq;
    Py_ssize_t i, size;
    long context, world_size, world_rank;
    int32_t *ranks, *to_rank;
    if (check_nargs("_bind", nargs, 4) < 0)
        return NULL;
    context = PyLong_AsLong(args[0]);
    world_size = PyLong_AsLong(args[2]);
    world_rank = PyLong_AsLong(args[3]);
    if ((context == -1 || world_size == -1 || world_rank == -1) && PyErr_Occurred())
        return NULL;
    if (world_size < 1 || context < 0 || context > INT32_MAX / 16 || world_rank < 0 ||
            world_rank >= world_size) {
        PyErr_SetString(PyExc_ValueError, "_bind(): bad context, world size or rank");
        return NULL;
    }
    if ((seq = PySequence_Fast(args[1], "_bind(): ranks must be a sequence")) == NULL)
        return NULL;
    size = PySequence_Fast_GET_SIZE(seq);
    ranks = PyMem_Calloc(size ? (size_t)size : 1, sizeof(int32_t));
    to_rank = PyMem_Malloc((size_t)world_size * sizeof(int32_t));
    if (ranks == NULL || to_rank == NULL) {
        PyMem_Free(ranks);
        PyMem_Free(to_rank);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (i = 0; i < world_size; i++)
        to_rank[i] = -1;
    for (i = 0; i < size; i++) {
        long w = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (w < 0 || w >= world_size) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "_bind(): a rank outside the world");
            PyMem_Free(ranks);
            PyMem_Free(to_rank);
            Py_DECREF(seq);
            return NULL;
        }
        ranks[i] = (int32_t)w;
        to_rank[w] = (int32_t)i;
    }
    Py_DECREF(seq);
    PyMem_Free(c->ranks);
    PyMem_Free(c->to_rank);
    c->ranks = ranks;
    c->to_rank = to_rank;
    c->context = (int32_t)context;
    c->size = (int32_t)size;
    c->world_size = (int32_t)world_size;
    c->world_rank = (int32_t)world_rank;
    Py_RETURN_NONE;
}

/* _bind_area(large, address, slot): a collective area is mapped (coll/area.py) */
static PyObject *
commcore_bind_area(CommCore *c, PyObject *const *args, Py_ssize_t nargs)
{
    int large;
    void *base;
    Py_ssize_t slot;
    if (check_nargs("_bind_area", nargs, 3) < 0 || (large = PyObject_IsTrue(args[0])) < 0)
        return NULL;
    if (!(base = get_addr(args[1], 64, "_bind_area")))
        return NULL;
    slot = PyLong_AsSsize_t(args[2]);
    if (slot == -1 && PyErr_Occurred())
        return NULL;
    if (slot < 64 || slot % 64) {
        PyErr_SetString(PyExc_ValueError, "_bind_area(): bad slot size");
        return NULL;
    }
    c->areas[large].base = base;
    c->areas[large].slot = slot;
    Py_RETURN_NONE;
}

/* _unbind_areas(): the areas are about to be unmapped */
static PyObject *
commcore_unbind_areas(CommCore *c, PyObject *unused)
{
    c->areas[0].base = c->areas[1].base = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef commcore_methods[] = {
    {"_bind", (PyCFunction)(void (*)(void))commcore_bind, METH_FASTCALL,
     "_bind(context, ranks, world_size, world_rank): the communicator the fast paths "
     "serve."},
    {"_bind_area", (PyCFunction)(void (*)(void))commcore_bind_area, METH_FASTCALL,
     "_bind_area(large, address, slot): a collective area of the communicator is mapped."},
    {"_unbind_areas", (PyCFunction)commcore_unbind_areas, METH_NOARGS,
     "_unbind_areas(): the collective areas are about to be unmapped."},
    {NULL}
};

static PyMemberDef commcore_members[] = {
    {"freed", T_INT, offsetof(CommCore, freed), 0, "the communicator was freed"},
    /* per collective area (coll/area.py): its steps taken so far, the counter's
     * value once the last step's arrivals are in, and the last step every member
     * finished reading as far as this one knows (all mod 2**32) */
#define AREA_FIELD(name, which, field) \
    {name, T_UINT, offsetof(CommCore, areas[which].field), 0, "see collarea.Area"}
    AREA_FIELD("coll_seq", 0, seq), AREA_FIELD("large_seq", 1, seq),
    AREA_FIELD("coll_target", 0, target), AREA_FIELD("large_target", 1, target),
    AREA_FIELD("coll_clear", 0, clear), AREA_FIELD("large_clear", 1, clear),
#undef AREA_FIELD
    {NULL}
};

PyTypeObject CommCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.CommCore",
    .tp_basicsize = sizeof(CommCore),
    .tp_dealloc = (destructor)commcore_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "What the point-to-point fast paths know of a communicator (comm.CommState "
              "derives from it).",
    .tp_methods = commcore_methods,
    .tp_members = commcore_members,
    .tp_new = commcore_new,
};

int
communicator_init(PyObject *module)
{
    return add_type(module, &CommCoreType, "CommCore");
}
