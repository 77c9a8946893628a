/*
 * csrc/check/: the race checker's C parts (the C side of shmrma/check/), two
 * extension modules apart from shmrma._native, each optional: without them the
 * checker runs its Python and numpy paths.
 *
 *   racecheck.c   shmrma._racecheck: the module, the access log
 *                 (check/accesses.py) and the call sites of accesses
 *                 (check/report.py)
 *   stores.c      in shmrma._racecheck: the store finder (check/stores.py)
 *   clock.c       in shmrma._racecheck: the vector clocks (check/clock.py)
 *   pagewatch.c   shmrma._pagewatch: the watch on a rank's loads of its own
 *                 window memory (check/loads.py); it stands alone
 *
 * This header is what the files of shmrma._racecheck take from the rest (the
 * wait cell's wake-up, core/core.h) and share: the log's records and
 * accesses, the checking lock, what stores.c and clock.c take from the log,
 * and their functions, which racecheck.c's table lists.
 */
#ifndef SHMRMA_CHECK_H
#define SHMRMA_CHECK_H

#include "../core/core.h"

/* --- the access log (racecheck.c) ------------------------------------------------ */

/* A record of the access log: accesses.RECORD (see racecheck.c). */
struct record {
    int64_t low, high, stamp;
    int32_t origin, kind, op, basic, site, epoch;
};

/* The access being checked or recorded: its sorted, disjoint byte runs and codes.
 * The runs are Python arrays' buffers (take_runs), or C arrays (look_stores). */
struct access {
    const int64_t *lows, *highs;
    Py_ssize_t runs;
    Py_buffer low_view, high_view;
    int viewed;         /* the runs are the views' */
    int64_t low, high;  /* the one run, given as two ints */
    int32_t kind, op, basic, site, epoch, me;
};

#define LOCK_TRIES 64       /* then the Python path waits, with the job's checks */

/* Take a target's checking lock (a wait cell) with a few tries, never sleeping. */
static inline int try_lock(int32_t *lock)
{
    for (int i = 0; i < LOCK_TRIES; i++) {
        int32_t expected = 0;
        if (__atomic_compare_exchange_n(lock, &expected, 1, 0, SC, SC))
            return 1;
        sched_yield();
    }
    return 0;
}

static inline void unlock(int32_t *lock)
{
    __atomic_store_n(lock, 0, SC);
    wake_if_sleepers(lock);
}

/* Whether setup() was called; if not, a RuntimeError is set. */
HIDDEN int ready(void);
/* The locked part of stores(): forget the rank's records of the access's kind
 * stamped ``seen`` or earlier, then scan and append or renew with ``stamp``. */
HIDDEN PyObject *add_stores(const struct access *a, struct record *rows, int64_t *count,
                            const int64_t *vc, Py_ssize_t capacity, int64_t stamp,
                            int64_t seen, int *full);
/* Stamp ``me``'s pending records of the kinds in ``modes`` with ``epoch``. */
HIDDEN void stamp_pending(struct record *rows, Py_ssize_t count, int me, int64_t epoch,
                          int modes, int64_t low, int64_t high, int kind);

/* --- the module's functions from stores.c and clock.c ----------------------------- */

HIDDEN PyObject *diff(PyObject *self, PyObject *args);
HIDDEN PyObject *same(PyObject *self, PyObject *args);
HIDDEN PyObject *look_stores(PyObject *self, PyObject *args);

HIDDEN PyObject *acquire(PyObject *self, PyObject *args);
HIDDEN PyObject *acquire_each(PyObject *self, PyObject *args);
HIDDEN PyObject *release(PyObject *self, PyObject *args);
HIDDEN PyObject *publish(PyObject *self, PyObject *args);
HIDDEN PyObject *signal_counter(PyObject *self, PyObject *args);
HIDDEN PyObject *join(PyObject *self, PyObject *args);
HIDDEN PyObject *join_keyed(PyObject *self, PyObject *args);

#endif
