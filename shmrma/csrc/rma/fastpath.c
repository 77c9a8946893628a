/*
 * The window table (shmrma/rma/fastpath.py's Table) and the synchronization
 * objects its targets point at.
 *
 * A WinTable mirrors one window at one rank: per target rank the mapped
 * memory (base, size, disp_unit) and the accumulate lock cell, plus the
 * epoch flags shmrma/rma/epoch.py keeps in it (fence_open, rma_since_fence,
 * lock_all, and which ranks a Lock epoch covers).  The communication and
 * synchronization calls run on it.
 */
#include "rma.h"

/* Offsets of the words of a rank's control block (shmrma/rma/control.py), given by
 * rma_sync_setup(). */
Py_ssize_t g_off_ticket, g_off_read, g_off_write, g_off_completes, g_off_exposed;
Py_ssize_t g_off_entered;

/* The lock types and assertion bits (rma/rma.h), given by rma_sync_constants(). */
long g_lock_exclusive, g_lock_shared;
long g_mode_nocheck, g_mode_noprecede, g_mode_nosucceed, g_all_modes;

/* --- the table object --- */

static PyObject *
table_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_ssize_t n;
    WinTable *t;
    if (!PyArg_ParseTuple(args, "n:WinTable", &n))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "WinTable(): negative size");
        return NULL;
    }
    t = (WinTable *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->targets = PyMem_Calloc(n ? (size_t)n : 1, sizeof(FastTarget));
    if (t->targets == NULL) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    t->n = n;
    t->open = 1;
    t->me = -1;
    Py_INCREF(Py_None);
    t->post_group = Py_None;
    t->groups = PyDict_New();
    if (t->groups == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void
table_dealloc(WinTable *t)
{
    PyMem_Free(t->targets);
    Py_XDECREF(t->post_group);
    Py_XDECREF(t->groups);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static FastTarget *
table_slot(WinTable *t, PyObject *rank_obj)
{
    Py_ssize_t rank = PyLong_AsSsize_t(rank_obj);
    if (rank == -1 && PyErr_Occurred())
        return NULL;
    if (rank < 0 || rank >= t->n) {
        PyErr_Format(PyExc_IndexError, "rank %zd outside the table of %zd", rank, t->n);
        return NULL;
    }
    return &t->targets[rank];
}

static PyObject *
table_set_target(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    FastTarget *slot;
    void *base, *cell;
    Py_ssize_t size, unit;
    if (check_nargs("set_target", nargs, 5) < 0) return NULL;
    if (!(slot = table_slot(t, args[0]))) return NULL;
    base = PyLong_AsVoidPtr(args[1]);
    if (base == NULL && PyErr_Occurred()) return NULL;
    size = PyLong_AsSsize_t(args[2]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    unit = PyLong_AsSsize_t(args[3]);
    if (unit == -1 && PyErr_Occurred()) return NULL;
    if (!(cell = get_addr(args[4], 8, "set_target"))) return NULL;
    if (size < 0 || unit <= 0) {
        PyErr_SetString(PyExc_ValueError, "set_target(): bad size or disp_unit");
        return NULL;
    }
    slot->base = base;
    slot->size = size;
    slot->unit = unit;
    slot->acc_lock = cell;
    Py_RETURN_NONE;
}

/* The slot and the int of a table method taking (rank, int); -1 with an error set. */
static int
slot_and_int(WinTable *t, PyObject *const *args, Py_ssize_t nargs, const char *name,
             FastTarget **slot, long *value)
{
    if (check_nargs(name, nargs, 2) < 0 || !(*slot = table_slot(t, args[0])))
        return -1;
    *value = PyLong_AsLong(args[1]);
    return *value == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *
table_set_locked(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    FastTarget *slot;
    long flag;
    if (slot_and_int(t, args, nargs, "set_locked", &slot, &flag) < 0) return NULL;
    if (flag < HELD_NONE || flag > HELD_EXCLUSIVE) {
        PyErr_SetString(PyExc_ValueError, "set_locked(): state must be 0..3");
        return NULL;
    }
    t->nlocked += (flag != HELD_NONE) - (slot->locked != HELD_NONE);
    slot->locked = (int)flag;
    Py_RETURN_NONE;
}

static PyObject *
table_locked(WinTable *t, PyObject *rank)
{
    FastTarget *slot = table_slot(t, rank);
    return slot ? PyLong_FromLong(slot->locked) : NULL;
}

static PyObject *
table_started(WinTable *t, PyObject *rank)
{
    FastTarget *slot = table_slot(t, rank);
    return slot ? PyBool_FromLong(slot->started) : NULL;
}

static PyObject *
table_posts_used(WinTable *t, PyObject *rank)
{
    FastTarget *slot = table_slot(t, rank);
    return slot ? PyLong_FromUnsignedLong(slot->posts_used) : NULL;
}

static PyObject *
table_set_posts_used(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    FastTarget *slot;
    unsigned long used;
    if (check_nargs("set_posts_used", nargs, 2) < 0) return NULL;
    if (!(slot = table_slot(t, args[0]))) return NULL;
    used = PyLong_AsUnsignedLongMask(args[1]);
    if (used == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    slot->posts_used = (uint32_t)used;
    Py_RETURN_NONE;
}

static PyObject *
table_use_post(WinTable *t, PyObject *rank)
{
    FastTarget *slot = table_slot(t, rank);
    if (!slot) return NULL;
    return PyLong_FromUnsignedLong(slot->posts_used++);
}

static PyObject *
table_set_control(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    FastTarget *slot;
    void *control, *doorbell;
    if (check_nargs("set_control", nargs, 3) < 0) return NULL;
    if (!(slot = table_slot(t, args[0]))) return NULL;
    if (!(control = get_addr(args[1], 64, "set_control"))) return NULL;
    if (!(doorbell = get_addr(args[2], 8, "set_control"))) return NULL;
    slot->control = control;
    slot->doorbell = doorbell;
    Py_RETURN_NONE;
}

static PyObject *
table_set_sync(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t me;
    void *posts, *holds;
    if (check_nargs("set_sync", nargs, 3) < 0) return NULL;
    me = PyLong_AsSsize_t(args[0]);
    if (me == -1 && PyErr_Occurred()) return NULL;
    if (!(posts = get_addr(args[1], 8, "set_sync"))) return NULL;
    if (!(holds = get_addr(args[2], 4, "set_sync"))) return NULL;
    if (me < 0 || me >= t->n) {
        PyErr_SetString(PyExc_ValueError, "set_sync(): bad rank");
        return NULL;
    }
    t->me = me;
    t->posts = posts;
    t->holds = holds;
    Py_RETURN_NONE;
}

static PyObject *
table_set_started(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    FastTarget *slot;
    int flag;
    if (check_nargs("set_started", nargs, 2) < 0) return NULL;
    if (!(slot = table_slot(t, args[0]))) return NULL;
    if ((flag = PyObject_IsTrue(args[1])) < 0) return NULL;
    slot->started = flag;
    Py_RETURN_NONE;
}

void
counter_epoch_change(WinTable *t, Py_ssize_t rank, int mode, int delta)
{
    FastTarget *slot = &t->targets[rank];
    int bit, kinds = 0;
    for (bit = 0; bit < 3; bit++) {
        if (mode & (1 << bit))
            slot->counter_modes[bit] += delta;
        if (slot->counter_modes[bit] > 0)
            kinds |= 1 << bit;
    }
    t->ncounter += (kinds != 0) - (slot->counter_kinds != 0);
    slot->counter_kinds = kinds;
}

/* open_counter_epoch(rank, mode) / close_counter_epoch(rank, mode) */
static PyObject *
table_counter_epoch(WinTable *t, PyObject *const *args, Py_ssize_t nargs, int delta)
{
    FastTarget *slot;
    long mode;
    if (slot_and_int(t, args, nargs, "counter_epoch", &slot, &mode) < 0) return NULL;
    counter_epoch_change(t, slot - t->targets, (int)mode, delta);
    Py_RETURN_NONE;
}

static PyObject *
table_open_counter_epoch(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    return table_counter_epoch(t, args, nargs, 1);
}

static PyObject *
table_close_counter_epoch(WinTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    return table_counter_epoch(t, args, nargs, -1);
}

static PyObject *
table_counter_kinds(WinTable *t, PyObject *rank)
{
    FastTarget *slot = table_slot(t, rank);
    return slot ? PyLong_FromLong(slot->counter_kinds) : NULL;
}

static PyObject *
table_close(WinTable *t, PyObject *unused)
{
    t->open = 0;
    t->n = 0;                   /* every rank is out of range from now on */
    t->fence_open = t->lock_all = t->nlocked = t->start_open = t->ncounter = 0;
    Py_RETURN_NONE;
}

static PyMethodDef table_methods[] = {
    {"set_target", (PyCFunction)(void (*)(void))table_set_target, METH_FASTCALL,
     "set_target(rank, base_addr, size, disp_unit, acc_lock_addr): the rank's window "
     "memory is mapped here (base_addr 0: it is not)."},
    {"set_locked", (PyCFunction)(void (*)(void))table_set_locked, METH_FASTCALL,
     "set_locked(rank, flag): a Lock epoch to the rank opened (True) or closed."},
    {"set_started", (PyCFunction)(void (*)(void))table_set_started, METH_FASTCALL,
     "set_started(rank, flag): a Start epoch whose group holds the rank opened or closed."},
    {"open_counter_epoch", (PyCFunction)(void (*)(void))table_open_counter_epoch,
     METH_FASTCALL, "open_counter_epoch(rank, mode): a Sync_ops request of mode "
     "(MODE_WIN_* bits) to the rank started (A14)."},
    {"close_counter_epoch", (PyCFunction)(void (*)(void))table_close_counter_epoch,
     METH_FASTCALL, "close_counter_epoch(rank, mode): one such request completed."},
    {"counter_kinds", (PyCFunction)table_counter_kinds, METH_O,
     "counter_kinds(rank) -> the MODE_WIN_* bits the active Sync_ops requests to it cover."},
    {"locked", (PyCFunction)table_locked, METH_O,
     "locked(rank) -> 0 none, 1 Lock with NOCHECK, 2 shared, 3 exclusive."},
    {"started", (PyCFunction)table_started, METH_O,
     "started(rank) -> bool: the open Start epoch's group holds the rank."},
    {"posts_used", (PyCFunction)table_posts_used, METH_O,
     "posts_used(rank) -> how many of the rank's Posts our Starts matched."},
    {"set_posts_used", (PyCFunction)(void (*)(void))table_set_posts_used, METH_FASTCALL,
     "set_posts_used(rank, count): set the count (mod 2**32; tests seed it)."},
    {"use_post", (PyCFunction)table_use_post, METH_O,
     "use_post(rank) -> the count of the rank's Posts matched before this one."},
    {"set_control", (PyCFunction)(void (*)(void))table_set_control, METH_FASTCALL,
     "set_control(rank, address, doorbell): the rank's control block and doorbell."},
    {"set_sync", (PyCFunction)(void (*)(void))table_set_sync, METH_FASTCALL,
     "set_sync(me, post_matrix, hold_row): this rank, the post matrix and its row of "
     "the hold matrix."},
    {"close", (PyCFunction)table_close, METH_NOARGS,
     "close(): the window is freed; every call misses from now on."},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef table_members[] = {
    {"fence_open", T_INT, offsetof(WinTable, fence_open), 0, "a Fence opened an epoch"},
    {"rma_since_fence", T_INT, offsetof(WinTable, rma_since_fence), 0,
     "RMA was issued since the last Fence"},
    {"lock_all", T_INT, offsetof(WinTable, lock_all), 0, "a Lock_all epoch is open"},
    {"start_open", T_INT, offsetof(WinTable, start_open), 0, "a Start epoch is open"},
    {"completes_due", T_UINT, offsetof(WinTable, completes_due), 0,
     "Completes the Posts so far await (mod 2**32)"},
    {"post_group", T_OBJECT, offsetof(WinTable, post_group), 0,
     "the open Post's origins (a tuple), or None"},
    {"barrier_seq", T_UINT, offsetof(WinTable, barrier_seq), 0,
     "window barriers this rank entered (mod 2**32)"},
    {"barrier_pending", T_INT, offsetof(WinTable, barrier_pending), 0,
     "RMA must wait until its target entered barrier_seq (A3)"},
    {"groups", T_OBJECT, offsetof(WinTable, groups), READONLY,
     "group handle -> window ranks, filled by window.window_ranks"},
    {"nlocked", T_INT, offsetof(WinTable, nlocked), READONLY, "open Lock epochs"},
    {"ncounter", T_INT, offsetof(WinTable, ncounter), READONLY,
     "targets with an active Sync_ops request"},
    {"sync_active", T_INT, offsetof(WinTable, sync_active), 0,
     "started synchronization requests not yet completed (Win.Free refuses)"},
    {"open", T_INT, offsetof(WinTable, open), READONLY, "not yet closed"},
    {NULL, 0, 0, 0, NULL}
};

PyTypeObject WinTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.WinTable",
    .tp_basicsize = sizeof(WinTable),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WinTable(nranks): what the RMA fast path knows of one window at this rank.",
    .tp_methods = table_methods,
    .tp_members = table_members,
    .tp_new = table_new,
};

/* The table when sync calls may run on it here, else NULL. */
WinTable *
sync_table(PyObject *table)
{
    WinTable *t = (WinTable *)table;
    if (!g_fast_enabled || Py_TYPE(table) != &WinTableType || !t->open || t->me < 0)
        return NULL;
    return t;
}

/* rma_sync_setup(offsets): the control block words (shmrma/rma/control.py). */
static PyObject *
n_rma_sync_setup(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t *dest[6] = {&g_off_ticket, &g_off_read, &g_off_write, &g_off_completes,
                           &g_off_exposed, &g_off_entered};
    int i;
    if (check_nargs("rma_sync_setup", nargs, 6) < 0) return NULL;
    for (i = 0; i < 6; i++) {
        *dest[i] = PyLong_AsSsize_t(args[i]);
        if (*dest[i] == -1 && PyErr_Occurred()) return NULL;
    }
    Py_RETURN_NONE;
}

/* rma_sync_constants(...): the lock types and assertion bits (rma/rma.h). */
static PyObject *
n_rma_sync_constants(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    long *dest[6] = {&g_lock_exclusive, &g_lock_shared, &g_mode_nocheck,
                     &g_mode_noprecede, &g_mode_nosucceed, &g_all_modes};
    long values[6];
    int i;
    if (check_nargs("rma_sync_constants", nargs, 6) < 0) return NULL;
    for (i = 0; i < 6; i++) {
        values[i] = PyLong_AsLong(args[i]);
        if (values[i] == -1 && PyErr_Occurred()) return NULL;
    }
    for (i = 0; i < 6; i++)
        *dest[i] = values[i];
    Py_RETURN_NONE;
}

static PyMethodDef table_functions[] = {
    FC(rma_sync_setup, "rma_sync_setup(ticket, read, write, completes, exposed, entered): "
       "offsets of the control block words."),
    FC(rma_sync_constants, "rma_sync_constants(lock_exclusive, lock_shared, nocheck, "
       "noprecede, nosucceed, all_modes): the lock types and assertion bits."),
    {NULL, NULL, 0, NULL}
};

int
fastpath_init(PyObject *module)
{
    if (PyType_Ready(&WinTableType) < 0)
        return -1;
    Py_INCREF(&WinTableType);
    if (PyModule_AddObject(module, "WinTable", (PyObject *)&WinTableType) < 0) {
        Py_DECREF(&WinTableType);
        return -1;
    }
    return PyModule_AddFunctions(module, table_functions);
}
