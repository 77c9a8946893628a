/* The race checker's access log in C (shmrma/check/accesses.py is the
 * reference and the fallback): the conflict scan, the append-or-renew of a
 * record and the completion of pending records, over a target's records in
 * the window's checking segment. The caller holds the target's checking lock.
 *
 * A record is accesses.RECORD, a packed numpy dtype laid out as `struct record`
 * (every 8-byte field first, so no padding). The codes (kinds, epochs, PENDING)
 * come from accesses.py through setup(), their one definition.
 */
#define PY_SSIZE_T_CLEAN
#include "native.h"     /* the wait cell's wake (wake_if_sleepers) */

struct record {
    int64_t low, high, stamp;
    int32_t origin, kind, op, basic, site, epoch;
};

static struct {
    int64_t pending;
    int32_t put, get, accumulate, get_accumulate, fetch_and_op, no_op;
    int32_t lock_exclusive, lock_all;
    int ready;
} codes;

static PyObject *setup(PyObject *self, PyObject *args)
{
    if (!PyArg_ParseTuple(args, "Liiiiiiii", &codes.pending, &codes.put, &codes.get,
                          &codes.accumulate, &codes.get_accumulate, &codes.fetch_and_op,
                          &codes.no_op, &codes.lock_exclusive, &codes.lock_all))
        return NULL;
    if (sizeof(struct record) != 48) {
        PyErr_SetString(PyExc_RuntimeError, "struct record is not 48 bytes");
        return NULL;
    }
    codes.ready = 1;
    Py_RETURN_NONE;
}

/* The access being checked or recorded: its sorted, disjoint byte runs and codes. */
struct access {
    Py_buffer lows, highs;
    Py_ssize_t runs;
    int32_t kind, op, basic, site, epoch, me;
};

static int writes(int32_t kind, int32_t op)
{
    if (kind == codes.put || kind == codes.get)
        return kind == codes.put;
    if (kind == codes.get_accumulate || kind == codes.fetch_and_op)
        return op != codes.no_op;
    return 1;       /* Accumulate, Compare_and_swap */
}

static int overlaps(const struct access *a, const struct record *r)
{
    const int64_t *lows = a->lows.buf, *highs = a->highs.buf;
    Py_ssize_t first = 0, last = a->runs;      /* the first run ending after r->low */
    while (first < last) {
        Py_ssize_t middle = (first + last) / 2;
        if (highs[middle] > r->low)
            last = middle;
        else
            first = middle + 1;
    }
    return first < a->runs && lows[first] < r->high;
}

static int is_lock(int32_t epoch)
{
    return epoch >= codes.lock_exclusive && epoch <= codes.lock_all;
}

static int conflicts(const struct access *a, const struct record *r, const int64_t *vc)
{
    if (!overlaps(a, r) || !(writes(r->kind, r->op) || writes(a->kind, a->op)))
        return 0;
    int both_atomic = r->kind >= codes.accumulate && a->kind >= codes.accumulate;
    if (both_atomic && r->basic == a->basic
            && (r->op == a->op || r->op == codes.no_op || a->op == codes.no_op
                || (r->kind > codes.accumulate && a->kind > codes.accumulate)))
        return 0;
    if (r->origin != a->me) {
        if (a->epoch == codes.lock_exclusive ? is_lock(r->epoch)
                : is_lock(a->epoch) && r->epoch == codes.lock_exclusive)
            return 0;       /* an exclusive lock epoch excludes the other */
        return vc[r->origin] < r->stamp;
    }
    return r->stamp == codes.pending && !both_atomic;
}

/* The access's runs from two int64 arrays of one length >= 1 (sorted, disjoint). */
static int take_runs(struct access *a, PyObject *lows, PyObject *highs)
{
    if (PyObject_GetBuffer(lows, &a->lows, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (PyObject_GetBuffer(highs, &a->highs, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&a->lows);
        return -1;
    }
    a->runs = a->lows.len / 8;
    if (a->lows.itemsize != 8 || a->highs.len != a->lows.len || a->runs == 0) {
        PyBuffer_Release(&a->lows);
        PyBuffer_Release(&a->highs);
        PyErr_SetString(PyExc_ValueError, "lows and highs: int64 arrays of one length >= 1");
        return -1;
    }
    return 0;
}

static int ready(void)
{
    if (!codes.ready)
        PyErr_SetString(PyExc_RuntimeError, "_racecheck.setup() was not called");
    return codes.ready;
}

static int parse_access(PyObject *args, struct access *a, Py_ssize_t *address,
                        Py_ssize_t *count, Py_ssize_t *extra)
{
    PyObject *lows, *highs;
    if (!ready() || !PyArg_ParseTuple(args, "nnOOiiiiiin", address, count, &lows, &highs,
                                      &a->kind, &a->op, &a->basic, &a->site, &a->epoch,
                                      &a->me, extra))
        return -1;
    return take_runs(a, lows, highs);
}

static void release_access(struct access *a)
{
    PyBuffer_Release(&a->lows);
    PyBuffer_Release(&a->highs);
}

/* The indices of the records racing with the access, as a list (NULL on error). */
static PyObject *scan_rows(const struct access *a, const struct record *rows,
                           Py_ssize_t count, const int64_t *vc)
{
    PyObject *found = PyList_New(0);
    for (Py_ssize_t i = 0; found && i < count; i++) {
        if (!conflicts(a, &rows[i], vc))
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (!index || PyList_Append(found, index) < 0)
            Py_CLEAR(found);
        Py_XDECREF(index);
    }
    return found;
}

/* Renew the record of an identical single-run access, extend the last record when the
 * access continues it, or append one pending record per run; the new count, or -1
 * when they do not fit. */
static Py_ssize_t add_rows(const struct access *a, struct record *rows, Py_ssize_t count,
                           Py_ssize_t capacity)
{
    const int64_t *lows = a->lows.buf, *highs = a->highs.buf;
    if (a->runs == 1) {
        for (Py_ssize_t i = 0; i < count; i++) {
            struct record *r = &rows[i];
            if (r->low == lows[0] && r->high == highs[0] && r->origin == a->me
                    && r->site == a->site && r->kind == a->kind && r->op == a->op
                    && r->epoch == a->epoch) {
                r->stamp = codes.pending;
                return count;
            }
        }
    }
    if (a->runs == 1 && count > 0) {   /* a loop over consecutive elements: one record */
        struct record *last = &rows[count - 1];
        if (last->high == lows[0] && last->origin == a->me && last->stamp == codes.pending
                && last->site == a->site && last->kind == a->kind && last->op == a->op
                && last->basic == a->basic && last->epoch == a->epoch) {
            last->high = highs[0];
            return count;
        }
    }
    if (count + a->runs > capacity)
        return -1;
    for (Py_ssize_t j = 0; j < a->runs; j++) {
        struct record *r = &rows[count + j];
        r->low = lows[j];
        r->high = highs[j];
        r->stamp = codes.pending;
        r->origin = a->me;
        r->kind = a->kind;
        r->op = a->op;
        r->basic = a->basic;
        r->site = a->site;
        r->epoch = a->epoch;
    }
    return count + a->runs;
}

/* scan(records, count, lows, highs, kind, op, basic, site, epoch, me, vc):
 * the indices of the records that race with the access. */
static PyObject *scan(PyObject *self, PyObject *args)
{
    struct access a;
    Py_ssize_t address, count, vc;
    if (parse_access(args, &a, &address, &count, &vc) < 0)
        return NULL;
    PyObject *found = scan_rows(&a, (const struct record *)address, count,
                                (const int64_t *)vc);
    release_access(&a);
    return found;
}

/* add(records, count, lows, highs, kind, op, basic, site, epoch, me, capacity):
 * renew or append (add_rows); the new count, or -1 when the runs do not fit. */
static PyObject *add(PyObject *self, PyObject *args)
{
    struct access a;
    Py_ssize_t address, count, capacity;
    if (parse_access(args, &a, &address, &count, &capacity) < 0)
        return NULL;
    count = add_rows(&a, (struct record *)address, count, capacity);
    release_access(&a);
    return PyLong_FromSsize_t(count);
}

#define LOCK_TRIES 64       /* then the Python path waits, with the job's checks */

/* record(records, count_cell, lows, highs, kind, op, basic, site, epoch, me,
 *        lock_cell, vc, capacity): under the target's checking lock (a wait cell,
 * taken with a few tries, never sleeping), scan and then append or renew; the
 * indices of the racing records, or None when the lock stayed busy or the log is
 * full: the Python path then does it all, waiting and pruning. */
static PyObject *record(PyObject *self, PyObject *args)
{
    struct access a;
    Py_ssize_t address, count_cell, lock_cell, vc, capacity;
    PyObject *lows, *highs;
    if (!ready() || !PyArg_ParseTuple(args, "nnOOiiiiiinnn", &address, &count_cell, &lows,
                                      &highs, &a.kind, &a.op, &a.basic, &a.site, &a.epoch,
                                      &a.me, &lock_cell, &vc, &capacity)
            || take_runs(&a, lows, highs) < 0)
        return NULL;
    int32_t *lock = (int32_t *)lock_cell;
    int held = 0;
    for (int i = 0; i < LOCK_TRIES && !held; i++) {
        int32_t expected = 0;
        held = __atomic_compare_exchange_n(lock, &expected, 1, 0, SC, SC);
        if (!held)
            sched_yield();
    }
    if (!held) {
        release_access(&a);
        Py_RETURN_NONE;
    }
    int64_t *count = (int64_t *)count_cell;
    struct record *rows = (struct record *)address;
    Py_ssize_t before = (Py_ssize_t)__atomic_load_n(count, SC);
    PyObject *found = scan_rows(&a, rows, before, (const int64_t *)vc);
    Py_ssize_t after = found ? add_rows(&a, rows, before, capacity) : before;
    if (after >= 0)
        __atomic_store_n(count, (int64_t)after, SC);
    __atomic_store_n(lock, 0, SC);
    wake_if_sleepers(lock);
    release_access(&a);
    if (found && after < 0) {   /* full: the Python path prunes, then records */
        Py_DECREF(found);
        Py_RETURN_NONE;
    }
    return found;
}

/* complete(records, count, me, epoch, modes[, low, high, kind]): stamp ``me``'s
 * pending records of the kinds in ``modes`` (MODE_WIN_PUT 1, GET 2, ACCUMULATE 4);
 * with ``kind``, only those of that kind within bytes low..high (one request's). */
static PyObject *complete(PyObject *self, PyObject *args)
{
    Py_ssize_t address, count;
    int me, modes, kind = -1;
    long long epoch, low = 0, high = 0;
    if (!PyArg_ParseTuple(args, "nniLi|LLi", &address, &count, &me, &epoch, &modes, &low,
                          &high, &kind))
        return NULL;
    struct record *rows = (struct record *)address;
    for (Py_ssize_t i = 0; i < count; i++) {
        struct record *r = &rows[i];
        int bit = r->kind == codes.put ? 1 : r->kind == codes.get ? 2 : 4;
        if (r->origin == me && r->stamp == codes.pending && (modes & bit)
                && (kind < 0 || (r->kind == kind && r->low >= low && r->high <= high)))
            r->stamp = epoch;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(pending, put, get, accumulate, get_accumulate, "
     "fetch_and_op, no_op, lock_exclusive, lock_all): the codes of accesses.py"},
    {"scan", scan, METH_VARARGS, "the indices of the records racing with an access"},
    {"add", add, METH_VARARGS, "record an access; the new count, -1 when full"},
    {"record", record, METH_VARARGS, "lock, scan, record, unlock; None: do it in Python"},
    {"complete", complete, METH_VARARGS, "stamp this rank's pending records"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "shmrma._racecheck",
    "The race checker's access log in C (shmrma/check/accesses.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__racecheck(void)
{
    return PyModule_Create(&module);
}
