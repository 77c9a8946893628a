/*
 * shmrma._native: the module.  Each file of shmrma/csrc/ holds one concept
 * (native.h lists them) and adds its functions, types and constants to the
 * module in its init; this file makes the module and calls them.  The
 * "Synchronization fast path" section serves shmrma/fastpath.py only; the
 * fallback has no counterpart (there every call takes the Python path).
 */
#include "csrc/native.h"

/* ------------------------------------------------------------------ */
/* Synchronization fast path                                           */
/* ------------------------------------------------------------------ */

/* Lock, Unlock, Lock_all, Unlock_all, Fence, Start, Complete, Post, Wait and
 * Test in their common case: the arguments plain ints, no assertion beyond
 * what the call takes here, the epoch rules satisfied, and whatever they wait
 * for already there or arriving within a short spin.  They use the words
 * shmrma/control.py lays out and the same ticket lock, barrier and counts as
 * the Python paths (passive.py, active.py), so the two mix freely.  A miss
 * (False) changes nothing; the Python path then does the call, waiting with
 * the job's abort and dead-peer checks, or raises its error.  Lock and
 * Lock_all may instead return the ticket they drew when it is not admitted
 * yet, and Fence the barrier generation it arrived at: the Python path then
 * waits for that and finishes the call. */

#define LOCK_EXCLUSIVE 234
#define LOCK_SHARED 235

/* Spins of a wait before it is handed to Python (which spins again, yields
 * and sleeps, with its checks): long enough for a peer that is running, a
 * few microseconds. */


#define WORD(control, off) ((int32_t *)((control) + (off)))

/* Spin (the wait policy's first phase) until *cell == want (equal) or while
 * it holds it (!equal); 0 when the wait ended, -1 when the spin ran out. */
static int
spin_on(int32_t *cell, int32_t value, int equal)
{
    int64_t end = now_ns() + SYNC_SPIN_NS;
    long i;
    for (i = 1;; i++) {
        if ((__atomic_load_n(cell, SC) == value) == equal)
            return 0;
        cpu_relax();
        if ((i & 31) == 0 && now_ns() >= end)
            return -1;
    }
}

static int
spin_until(int32_t *cell, int32_t want)
{
    return spin_on(cell, want, 1);
}

static int
spin_while(int32_t *cell, int32_t old)
{
    return spin_on(cell, old, 0);
}

int
no_status(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) &&
        (nargs == 0 || args[0] == Py_None);
}

PyObject *
request_python_path(PyObject *method, PyObject *self, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *call[3];
    Py_ssize_t i, total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (total > 1) {
        PyErr_SetString(PyExc_TypeError, "Wait()/Test() take at most one argument (status)");
        return NULL;
    }
    call[0] = NULL;
    call[1] = self;
    for (i = 0; i < total; i++)
        call[2 + i] = args[i];
    return PyObject_Vectorcall(method, call + 1, (1 + nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET,
                               kwnames);
}

/* May a new access epoch open (R66; a fence epoch with RMA must be fenced)? */
static int
access_may_open(WinTable *t)
{
    return !t->lock_all && !t->start_open && !(t->fence_open && t->rma_since_fence);
}

/* Give back a lock held on the control block (passive.WindowLock.release). */
static void
lock_release(char *control, int held)
{
    if (held == HELD_EXCLUSIVE)
        cell_bump(WORD(control, g_off_read));
    if (held == HELD_EXCLUSIVE || held == HELD_SHARED)
        cell_bump(WORD(control, g_off_write));
}

/* Draw a ticket and spin for admission: HELD_* once admitted, or -1 with the
 * ticket in *ticket (a shared lock then still owes its read bump). */
static int
lock_acquire(char *control, int exclusive, int32_t *ticket)
{
    *ticket = (int32_t)__atomic_fetch_add((uint32_t *)WORD(control, g_off_ticket), 1u, SC);
    if (exclusive)
        return spin_until(WORD(control, g_off_write), *ticket) == 0 ? HELD_EXCLUSIVE : -1;
    if (spin_until(WORD(control, g_off_read), *ticket) < 0)
        return -1;
    cell_bump(WORD(control, g_off_read));
    return HELD_SHARED;
}

static inline int
exposed(char *control)
{
    return __atomic_load_n(WORD(control, g_off_exposed), SC) != 0;
}

/* rma_lock(table, rank, lock_type, assertion) -> True, False, or a ticket. */
static PyObject *
n_rma_lock(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    FastTarget *slot;
    long rank, type;
    int32_t ticket;
    int held;
    if (check_nargs("rma_lock", nargs, 4) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    rank = plain_int(args[1]);
    type = plain_int(args[2]);
    if (rank < 0 || rank >= t->n || (type != LOCK_EXCLUSIVE && type != LOCK_SHARED) ||
            plain_int(args[3]) != 0 || !access_may_open(t))
        MISS;
    slot = &t->targets[rank];
    if (slot->locked || slot->control == NULL)
        MISS;
    t->fence_open = 0;
    held = lock_acquire(slot->control, type == LOCK_EXCLUSIVE, &ticket);
    if (held < 0)
        return PyLong_FromLong(ticket);
    if (exposed(slot->control)) {       /* R102: the Python path raises */
        lock_release(slot->control, held);
        MISS;
    }
    slot->locked = held;
    t->nlocked++;
    __atomic_store_n(&t->holds[rank], held, __ATOMIC_RELAXED);    /* for timeout reports */
    DONE;
}

/* rma_unlock(table, rank) -> bool */
static PyObject *
n_rma_unlock(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    FastTarget *slot;
    long rank;
    if (check_nargs("rma_unlock", nargs, 2) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    rank = plain_int(args[1]);
    if (rank < 0 || rank >= t->n)
        MISS;
    slot = &t->targets[rank];
    if (!slot->locked || slot->control == NULL)
        MISS;
    __atomic_thread_fence(SC);          /* the epoch's RMA before the release (R96) */
    __atomic_store_n(&t->holds[rank], 0, __ATOMIC_RELAXED);
    lock_release(slot->control, slot->locked);
    slot->locked = HELD_NONE;
    t->nlocked--;
    DONE;
}

/* rma_lock_all(table, assertion) -> True, False, or (rank, ticket): ranks
 * below `rank` are held, `rank` drew `ticket` and is not admitted yet. */
static PyObject *
n_rma_lock_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    Py_ssize_t r, i;
    int32_t ticket;
    if (check_nargs("rma_lock_all", nargs, 2) < 0) return NULL;
    if (!(t = sync_table(args[0])))
        MISS;
    if (plain_int(args[1]) != 0 || !access_may_open(t) || t->nlocked)
        MISS;
    for (r = 0; r < t->n; r++)
        if (t->targets[r].control == NULL)
            MISS;
    t->fence_open = 0;
    for (r = 0; r < t->n; r++) {
        char *control = t->targets[r].control;
        if (lock_acquire(control, 0, &ticket) < 0)
            return Py_BuildValue("(ni)", r, (int)ticket);
        if (exposed(control)) {         /* R102: give all back; Python raises */
            for (i = 0; i <= r; i++) {
                __atomic_store_n(&t->holds[i], 0, __ATOMIC_RELAXED);
                lock_release(t->targets[i].control, HELD_SHARED);
            }
            MISS;
        }
        __atomic_store_n(&t->holds[r], HELD_SHARED, __ATOMIC_RELAXED);
    }
    t->lock_all = 1;
    DONE;
}

/* rma_unlock_all(table) -> bool.  lock_all is 1 with the shared locks held,
 * 2 under MODE_NOCHECK. */
static PyObject *
n_rma_unlock_all(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    WinTable *t;
    Py_ssize_t r;
    if (check_nargs("rma_unlock_all", nargs, 1) < 0) return NULL;
    if (!(t = sync_table(args[0])) || !t->lock_all)
        MISS;
    __atomic_thread_fence(SC);
    if (t->lock_all == 1)
        for (r = 0; r < t->n; r++) {
            __atomic_store_n(&t->holds[r], 0, __ATOMIC_RELAXED);
            lock_release(t->targets[r].control, HELD_SHARED);
        }
    t->lock_all = 0;
    DONE;
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
    if ((assertion != 0 && assertion != MODE_NOCHECK) || !access_may_open(t) ||
            t->nlocked || t->ncounter || group_ranks(t, ranks) < 0)
        MISS;
    k = PyTuple_GET_SIZE(ranks);
    if (!(assertion & MODE_NOCHECK))
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
    if (assertion < 0 || (assertion & ~ALL_MODES) || t->post_group != Py_None ||
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
        if ((i & 31) == 0 && now_ns() >= end)
            MISS;
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

/* ------------------------------------------------------------------ */
/* module                                                               */
/* ------------------------------------------------------------------ */

static PyMethodDef native_methods[] = {
    FC(rma_lock, "rma_lock(table, rank, lock_type, assertion) -> True, False or a ticket."),
    FC(rma_unlock, "rma_unlock(table, rank) -> bool."),
    FC(rma_lock_all, "rma_lock_all(table, assertion) -> True, False or (rank, ticket)."),
    FC(rma_unlock_all, "rma_unlock_all(table) -> bool."),
    FC(rma_start, "rma_start(table, group, assertion) -> bool."),
    FC(rma_complete, "rma_complete(table) -> bool."),
    FC(rma_post, "rma_post(table, group, assertion) -> bool."),
    FC(rma_wait, "rma_wait(table) -> bool."),
    FC(rma_test, "rma_test(table) -> True, False, or None for the Python path."),
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "shmrma._native",
    "Native atomic layer of shmrma: seq_cst atomics on raw addresses, "
    "futex wait cells, memcpy; the RMA fast path (see shmrma/fastpath.py).",
    -1,
    native_methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *mod;
    g_str_handle = PyUnicode_InternFromString("_handle");
    g_str_freed = PyUnicode_InternFromString("freed");
    if (g_str_handle == NULL || g_str_freed == NULL)
        return NULL;
    mod = PyModule_Create(&native_module);
    if (mod == NULL)
        return NULL;
    if (atomic_init(mod) < 0 || buffers_init(mod) < 0 || op_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (table_init(mod) < 0 || rma_init(mod) < 0 || handle_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (transport_init(mod) < 0 || collectives_init(mod) < 0 || pickles_init(mod) < 0 ||
            nbc_init(mod) < 0 || counters_init(mod) < 0 || winbarrier_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddIntConstant(mod, "LOCK_EXCLUSIVE", LOCK_EXCLUSIVE) < 0 ||
        PyModule_AddIntConstant(mod, "LOCK_SHARED", LOCK_SHARED) < 0 ||
        PyModule_AddIntConstant(mod, "MODE_NOCHECK", MODE_NOCHECK) < 0 ||
        PyModule_AddIntConstant(mod, "MODE_NOPRECEDE", MODE_NOPRECEDE) < 0 ||
        PyModule_AddIntConstant(mod, "MODE_NOSUCCEED", MODE_NOSUCCEED) < 0 ||
        PyModule_AddIntConstant(mod, "ALL_MODES", ALL_MODES) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
