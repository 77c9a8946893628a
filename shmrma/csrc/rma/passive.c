/*
 * Passive target synchronization (shmrma/rma/passive.py) in C: Lock, Unlock,
 * Lock_all and Unlock_all in their common case, on the ticket lock of each
 * rank's control block, the one the Python path takes (rma/rma.h: "the
 * synchronization objects").
 */
#include "rma.h"

static int
spin_until(int32_t *cell, int32_t want)
{
    return spin_on(cell, want, 1);
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
    if (rank < 0 || rank >= t->n || (type != g_lock_exclusive && type != g_lock_shared) ||
            plain_int(args[3]) != 0 || !access_may_open(t))
        MISS;
    slot = &t->targets[rank];
    if (slot->locked || slot->control == NULL)
        MISS;
    t->fence_open = 0;
    held = lock_acquire(slot->control, type == g_lock_exclusive, &ticket);
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

static PyMethodDef passive_functions[] = {
    FC(rma_lock, "rma_lock(table, rank, lock_type, assertion) -> True, False or a ticket."),
    FC(rma_unlock, "rma_unlock(table, rank) -> bool."),
    FC(rma_lock_all, "rma_lock_all(table, assertion) -> True, False or (rank, ticket)."),
    FC(rma_unlock_all, "rma_unlock_all(table) -> bool."),
    {NULL, NULL, 0, NULL}
};

int
passive_init(PyObject *module)
{
    return PyModule_AddFunctions(module, passive_functions);
}
