/*
 * Active target synchronization (shmrma/rma/active.py) in C: Start, Complete,
 * Post, Wait and Test in their common case, on the post matrix and the counts
 * of Completes in the control blocks, the ones the Python path uses (rma/rma.h:
 * "the synchronization objects").
 */
#include "rma.h"

static int
spin_while(int32_t *cell, int32_t old)
{
    return spin_on(cell, old, 0);
}

static inline int32_t *
post_cell(WinTable *t, Py_ssize_t origin, Py_ssize_t target)
{
    return (int32_t *)(t->posts + (origin * t->n + target) * 8);
}

static PyObject *g_str_handle, *g_str_freed;

/* The window ranks of a Group whose live handle window.window_ranks has seen
 * (borrowed from the table's cache), or NULL without an error set. */
static PyObject *
cached_group(WinTable *t, PyObject *group)
{
    PyObject *handle, *freed, *ranks = NULL;
    handle = PyObject_GetAttr(group, g_str_handle);
    if (handle == NULL) {
        PyErr_Clear();
        return NULL;
    }
    freed = PyObject_GetAttr(handle, g_str_freed);
    if (freed == Py_False)
        ranks = PyDict_GetItemWithError(t->groups, handle);
    if (ranks == NULL)
        PyErr_Clear();
    Py_XDECREF(freed);
    Py_DECREF(handle);
    return ranks;
}

/* Window ranks of a Start or Post group (a tuple made by window_ranks). */
static int
group_ranks(WinTable *t, PyObject *ranks)
{
    Py_ssize_t i;
    if (ranks == NULL || !PyTuple_CheckExact(ranks))
        return -1;
    for (i = 0; i < PyTuple_GET_SIZE(ranks); i++) {
        long r = plain_int(PyTuple_GET_ITEM(ranks, i));
        if (r < 0 || r >= t->n || t->targets[r].control == NULL)
            return -1;
    }
    return 0;
}

/* rma_start(table, group, assertion) -> bool: every Post arrived (or NOCHECK),
 * each counted as matched, the epoch open. */
static PyObject *
n_rma_start(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    PyObject *ranks;
    Py_ssize_t i, k;
    long assertion;
    if (check_nargs("rma_start", nargs, 3) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    ranks = cached_group(t, args[1]);
    assertion = plain_int(args[2]);
    if ((assertion != 0 && assertion != g_mode_nocheck) || !access_may_open(t) ||
            t->nlocked || t->ncounter || group_ranks(t, ranks) < 0)
        MISS;
    k = PyTuple_GET_SIZE(ranks);
    if (!(assertion & g_mode_nocheck))
        for (i = 0; i < k; i++) {
            Py_ssize_t r = PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, i));
            if (spin_while(post_cell(t, t->me, r), (int32_t)t->targets[r].posts_used) < 0)
                MISS;           /* nothing taken yet: the Python path waits */
        }
    t->fence_open = 0;
    for (i = 0; i < k; i++) {
        FastTarget *slot = &t->targets[PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, i))];
        slot->posts_used++;
        slot->started = 1;
    }
    __atomic_thread_fence(SC);
    t->start_open = 1;
    DONE;
}

/* rma_complete(table) -> bool */
static PyObject *
n_rma_complete(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    Py_ssize_t r;
    if (check_nargs("rma_complete", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || !t->start_open)
        MISS;
    __atomic_thread_fence(SC);
    for (r = 0; r < t->n; r++)
        if (t->targets[r].started) {
            t->targets[r].started = 0;
            cell_bump(WORD(t->targets[r].control, g_off_completes));
        }
    t->start_open = 0;
    DONE;
}

/* rma_post(table, group, assertion) -> bool */
static PyObject *
n_rma_post(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    PyObject *ranks;
    Py_ssize_t i;
    long assertion;
    char *mine;
    if (check_nargs("rma_post", nargs, 3) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    ranks = cached_group(t, args[1]);
    assertion = plain_int(args[2]);
    if (assertion < 0 || (assertion & ~g_all_modes) || t->post_group != Py_None ||
            (t->fence_open && t->rma_since_fence) || group_ranks(t, ranks) < 0)
        MISS;
    mine = t->targets[t->me].control;
    __atomic_store_n(WORD(mine, g_off_exposed), 1, SC);
    if (__atomic_load_n(WORD(mine, g_off_ticket), SC) !=
            __atomic_load_n(WORD(mine, g_off_write), SC)) {
        __atomic_store_n(WORD(mine, g_off_exposed), 0, SC);
        MISS;                   /* locked (R102): the Python path raises */
    }
    t->fence_open = 0;
    t->completes_due += (uint32_t)PyTuple_GET_SIZE(ranks);
    Py_INCREF(ranks);
    Py_SETREF(t->post_group, ranks);
    __atomic_thread_fence(SC);
    for (i = 0; i < PyTuple_GET_SIZE(ranks); i++)
        cell_bump(post_cell(t, PyLong_AsSsize_t(PyTuple_GET_ITEM(ranks, i)), t->me));
    DONE;
}

/* Have the Completes the Posts await arrived (counts wrap at 2**32)? */
static inline int
completes_arrived(WinTable *t)
{
    uint32_t count = (uint32_t)__atomic_load_n(
        WORD(t->targets[t->me].control, g_off_completes), SC);
    return (int32_t)(count - t->completes_due) >= 0;
}

static void
end_exposure(WinTable *t)
{
    __atomic_thread_fence(SC);
    __atomic_store_n(WORD(t->targets[t->me].control, g_off_exposed), 0, SC);
    Py_INCREF(Py_None);
    Py_SETREF(t->post_group, Py_None);
}

/* rma_wait(table) -> bool */
static PyObject *
n_rma_wait(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    int64_t end;
    long i;
    if (check_nargs("rma_wait", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || t->post_group == Py_None)
        MISS;
    end = now_ns() + SYNC_SPIN_NS;
    for (i = 1; !completes_arrived(t); i++) {
        cpu_relax();
        if ((i & 31) == 0 && now_ns() >= end) {
            int32_t *completes = WORD(t->targets[t->me].control, g_off_completes);
            wait_left(completes, __atomic_load_n(completes, SC));   /* Python sleeps on */
            MISS;
        }
    }
    end_exposure(t);
    DONE;
}

/* rma_test(table) -> True (closed), False (not yet), None (the Python path) */
static PyObject *
n_rma_test(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    if (check_nargs("rma_test", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || t->post_group == Py_None)
        Py_RETURN_NONE;
    if (!completes_arrived(t))
        Py_RETURN_FALSE;
    end_exposure(t);
    Py_RETURN_TRUE;
}

static PyMethodDef active_functions[] = {
    FC(rma_start, "rma_start(table, group, assertion) -> bool."),
    FC(rma_complete, "rma_complete(table) -> bool."),
    FC(rma_post, "rma_post(table, group, assertion) -> bool."),
    FC(rma_wait, "rma_wait(table) -> bool."),
    FC(rma_test, "rma_test(table) -> True, False, or None for the Python path."),
    {NULL, NULL, 0, NULL}
};

int
active_init(PyObject *module)
{
    g_str_handle = PyUnicode_InternFromString("_handle");
    g_str_freed = PyUnicode_InternFromString("freed");
    if (g_str_handle == NULL || g_str_freed == NULL)
        return -1;
    return PyModule_AddFunctions(module, active_functions);
}
