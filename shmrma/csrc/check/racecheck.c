/* The race checker's access log in C (shmrma/check/accesses.py is the
 * reference and the fallback): the conflict scan, the append-or-renew of a
 * record and the completion of pending records, over a target's records in
 * the window's checking segment, under the target's checking lock (held by the
 * caller, or taken with a few tries: record, shadowed, stores, and the store
 * finder's diff and look_stores).
 * This file makes the module shmrma._racecheck; its table lists the functions
 * of the store finder (check/stores.c) and of the vector clocks (check/clock.c)
 * too, which check/check.h declares with what the three files share.
 *
 * A record is accesses.RECORD, a packed numpy dtype laid out as `struct record`
 * (every 8-byte field first, so no padding). The codes (kinds, epochs, PENDING)
 * come from accesses.py through setup(), their one definition.
 */
#define PY_SSIZE_T_CLEAN
#include "check.h"     /* the log's records, the checking lock, the other files */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#define INTERNAL_FRAMES 1   /* user_site reads the interpreter's frames */
#endif

static struct {
    int64_t pending;
    int32_t load, put, get, accumulate, get_accumulate, fetch_and_op, no_op;
    int32_t lock_exclusive, lock_all;
    int32_t size_shift, max_size;   /* a basic code's size in bytes (accesses.SIZE_SHIFT) */
    int ready;
} codes;

static PyObject *setup(PyObject *self, PyObject *args)
{
    if (!PyArg_ParseTuple(args, "Liiiiiiiiiii", &codes.pending, &codes.load, &codes.put,
                          &codes.get,
                          &codes.accumulate, &codes.get_accumulate, &codes.fetch_and_op,
                          &codes.no_op, &codes.lock_exclusive, &codes.lock_all,
                          &codes.size_shift, &codes.max_size))
        return NULL;
    if (sizeof(struct record) != 48) {
        PyErr_SetString(PyExc_RuntimeError, "struct record is not 48 bytes");
        return NULL;
    }
    codes.ready = 1;
    Py_RETURN_NONE;
}

static int writes(int32_t kind, int32_t op)
{
    if (kind == codes.load)
        return 0;
    if (kind == codes.put || kind == codes.get)
        return kind == codes.put;
    if (kind == codes.get_accumulate || kind == codes.fetch_and_op)
        return op != codes.no_op;
    return 1;       /* Accumulate, Compare_and_swap */
}

/* The first of the access's runs that overlaps r, or -1. */
static Py_ssize_t overlapping(const struct access *a, const struct record *r)
{
    const int64_t *lows = a->lows, *highs = a->highs;
    Py_ssize_t first = 0, last = a->runs;      /* the first run ending after r->low */
    while (first < last) {
        Py_ssize_t middle = (first + last) / 2;
        if (highs[middle] > r->low)
            last = middle;
        else
            first = middle + 1;
    }
    return first < a->runs && lows[first] < r->high ? first : -1;
}

/* Do the elements of the access's run `run` coincide with r's (its basic type's
 * size from its code, 0 for unknown: any)? */
static int coincide(const struct access *a, Py_ssize_t run, const struct record *r)
{
    int64_t size = (a->basic >> codes.size_shift) & codes.max_size;
    return size <= 1 || (a->lows[run] - r->low) % size == 0;
}

static int is_lock(int32_t epoch)
{
    return epoch >= codes.lock_exclusive && epoch <= codes.lock_all;
}

static int conflicts(const struct access *a, const struct record *r, const int64_t *vc)
{
    Py_ssize_t run = overlapping(a, r);
    if (run < 0 || !(writes(r->kind, r->op) || writes(a->kind, a->op)))
        return 0;
    int both_atomic = r->kind >= codes.accumulate && a->kind >= codes.accumulate;
    int same_basic = r->basic == a->basic;
    if (both_atomic && same_basic && coincide(a, run, r)
            && (r->op == a->op || r->op == codes.no_op || a->op == codes.no_op
                || (r->kind > codes.accumulate && a->kind > codes.accumulate)))
        return 0;
    if (r->origin != a->me) {
        if (a->epoch == codes.lock_exclusive ? is_lock(r->epoch)
                : is_lock(a->epoch) && r->epoch == codes.lock_exclusive)
            return 0;       /* an exclusive lock epoch excludes the other */
        return vc[r->origin] < r->stamp;
    }
    /* one origin's accumulates are ordered per datatype (accumulate_ordering) */
    return r->stamp == codes.pending && !(both_atomic && same_basic);
}

/* The access's runs from two int64 arrays of one length >= 1 (sorted, disjoint), or
 * its one run from two ints. */
static int take_runs(struct access *a, PyObject *lows, PyObject *highs)
{
    if (PyLong_CheckExact(lows) && PyLong_CheckExact(highs)) {     /* one run */
        a->low = PyLong_AsLongLong(lows);
        a->high = PyLong_AsLongLong(highs);
        if (PyErr_Occurred())
            return -1;
        if (a->low >= a->high) {
            PyErr_SetString(PyExc_ValueError, "one run: low < high");
            return -1;
        }
        a->lows = &a->low;
        a->highs = &a->high;
        a->runs = 1;
        return 0;
    }
    if (PyObject_GetBuffer(lows, &a->low_view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (PyObject_GetBuffer(highs, &a->high_view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&a->low_view);
        return -1;
    }
    a->runs = a->low_view.len / 8;
    if (a->low_view.itemsize != 8 || a->high_view.len != a->low_view.len || a->runs == 0) {
        PyBuffer_Release(&a->low_view);
        PyBuffer_Release(&a->high_view);
        PyErr_SetString(PyExc_ValueError, "lows and highs: int64 arrays of one length >= 1");
        return -1;
    }
    a->lows = a->low_view.buf;
    a->highs = a->high_view.buf;
    a->viewed = 1;
    return 0;
}

int ready(void)
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
    if (a->viewed) {
        PyBuffer_Release(&a->low_view);
        PyBuffer_Release(&a->high_view);
        a->viewed = 0;
    }
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
                           Py_ssize_t capacity, int64_t stamp)
{
    const int64_t *lows = a->lows, *highs = a->highs;
    if (a->runs == 1) {
        for (Py_ssize_t i = 0; i < count; i++) {
            struct record *r = &rows[i];
            if (r->low == lows[0] && r->high == highs[0] && r->origin == a->me
                    && r->site == a->site && r->kind == a->kind && r->op == a->op
                    && r->epoch == a->epoch) {
                r->stamp = stamp;
                return count;
            }
        }
    }
    if (a->runs == 1 && count > 0) {   /* a loop over consecutive elements: one record */
        struct record *last = &rows[count - 1];
        if (last->high == lows[0] && last->origin == a->me && last->stamp == stamp
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
        r->stamp = stamp;
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
    struct access a = {0};
    Py_ssize_t address, count, vc;
    if (parse_access(args, &a, &address, &count, &vc) < 0)
        return NULL;
    PyObject *found = scan_rows(&a, (const struct record *)address, count,
                                (const int64_t *)vc);
    release_access(&a);
    return found;
}

/* add(records, count, lows, highs, kind, op, basic, site, epoch, me, capacity[, stamp]):
 * renew or append (add_rows), pending or (a store, complete when made) with the
 * stamp given; the new count, or -1 when the runs do not fit. */
static PyObject *add(PyObject *self, PyObject *args)
{
    struct access a = {0};
    Py_ssize_t address, count, capacity;
    long long stamp = codes.pending;
    PyObject *lows, *highs;
    if (!ready() || !PyArg_ParseTuple(args, "nnOOiiiiiin|L", &address, &count, &lows, &highs,
                                      &a.kind, &a.op, &a.basic, &a.site, &a.epoch, &a.me,
                                      &capacity, &stamp)
            || take_runs(&a, lows, highs) < 0)
        return NULL;
    count = add_rows(&a, (struct record *)address, count, capacity, stamp);
    release_access(&a);
    return PyLong_FromSsize_t(count);
}


/* Scan the ``before`` records, then append or renew the access's (add_rows) and
 * publish the new count: the racing records' indices; NULL with *full set when
 * the log had no room (nothing added), NULL with an exception on error. */
static PyObject *scan_and_add(const struct access *a, struct record *rows, int64_t *count,
                              Py_ssize_t before, const int64_t *vc, Py_ssize_t capacity,
                              int64_t stamp, int *full)
{
    PyObject *found = scan_rows(a, rows, before, vc);
    Py_ssize_t after = found ? add_rows(a, rows, before, capacity, stamp) : before;
    __atomic_store_n(count, (int64_t)(after >= 0 ? after : before), SC);
    *full = found && after < 0;
    if (*full)
        Py_CLEAR(found);
    return found;
}

/* Where an access's record goes, with its target's memory and shadow (0 when the
 * target's stores are not checked). */
struct log_target {
    Py_ssize_t records, count_cell, lock_cell, vc, capacity, memory, shadow;
};

/* Scan and then append or renew the access's record under its target's checking
 * lock, taken with a few tries, never sleeping: the racing records' indices; NULL
 * with *busy set when the lock stayed busy, with *full set when the log had no room
 * (nothing recorded either way), else with an exception. */
static PyObject *record_locked(const struct access *a, const struct log_target *t,
                               int *busy, int *full)
{
    int32_t *lock = (int32_t *)t->lock_cell;
    *full = 0;
    *busy = !try_lock(lock);
    if (*busy)
        return NULL;
    int64_t *count = (int64_t *)t->count_cell;
    PyObject *found = scan_and_add(a, (struct record *)t->records, count,
                                   (Py_ssize_t)__atomic_load_n(count, SC),
                                   (const int64_t *)t->vc, t->capacity, codes.pending, full);
    unlock(lock);
    return found;
}

/* record(records, count_cell, lows, highs, kind, op, basic, site, epoch, me,
 *        lock_cell, vc, capacity): under the target's checking lock (a wait cell,
 * taken with a few tries, never sleeping), scan and then append or renew; the
 * indices of the racing records, or None when the lock stayed busy or the log is
 * full: the Python path then does it all, waiting and pruning. */
static PyObject *record(PyObject *self, PyObject *args)
{
    struct access a = {0};
    struct log_target t;
    PyObject *lows, *highs;
    if (!ready() || !PyArg_ParseTuple(args, "nnOOiiiiiinnn", &t.records, &t.count_cell,
                                      &lows, &highs, &a.kind, &a.op, &a.basic, &a.site,
                                      &a.epoch, &a.me, &t.lock_cell, &t.vc, &t.capacity)
            || take_runs(&a, lows, highs) < 0)
        return NULL;
    int busy, full;
    PyObject *found = record_locked(&a, &t, &busy, &full);
    release_access(&a);
    if (busy || full)   /* the Python path waits, or prunes, then records */
        Py_RETURN_NONE;
    return found;
}

/* The first run where the target's memory differs from its shadow (a store of its
 * owner not looked at yet), brought up to date so it is reported once: 1 and its
 * bytes in *first..*last, or 0. */
static int unseen_run(const struct access *a, const unsigned char *memory,
                      unsigned char *shadow, int64_t *first, int64_t *last)
{
    const int64_t *lows = a->lows, *highs = a->highs;
    for (Py_ssize_t j = 0; j < a->runs; j++) {
        int64_t low = lows[j], high = highs[j];
        if (!memcmp(memory + low, shadow + low, (size_t)(high - low)))
            continue;
        *first = -1;
        for (int64_t i = low; i < high; i++) {
            if (memory[i] != shadow[i]) {
                if (*first < 0)
                    *first = i;
                *last = i + 1;
            }
        }
        memcpy(shadow + low, memory + low, (size_t)(high - low));
        return 1;
    }
    return 0;
}

/* The shadow of the access's runs after it wrote them: from ``source`` (the bytes it
 * wrote, run after run) when given, else from the memory as it is now. */
static void copy_runs(const struct access *a, const unsigned char *memory,
                      const unsigned char *source, unsigned char *shadow)
{
    const int64_t *lows = a->lows, *highs = a->highs;
    for (Py_ssize_t j = 0; j < a->runs; j++) {
        size_t size = (size_t)(highs[j] - lows[j]);
        if (source) {
            memcpy(shadow + lows[j], source, size);
            source += size;
        } else {
            memcpy(shadow + lows[j], memory + lows[j], size);
        }
    }
}

static Py_ssize_t runs_bytes(const struct access *a)
{
    const int64_t *lows = a->lows, *highs = a->highs;
    Py_ssize_t total = 0;
    for (Py_ssize_t j = 0; j < a->runs; j++)
        total += highs[j] - lows[j];
    return total;
}

/* shadowed(records, count_cell, lows, highs, kind, op, basic, site, epoch, me,
 *          lock_cell, vc, capacity, memory, shadow, unseen, writes, perform[, source]):
 * record()
 * for an access to memory whose stores are checked (check/stores.py), with the call
 * itself inside the target's checking lock: with ``unseen`` (the caller is not the
 * target), the first run where the memory differs from its shadow, then ``perform()``,
 * then, when it ``writes``, its runs copied to the shadow (from ``source``, the bytes
 * a Put wrote, when given: a store of the target's landing just after the copy into
 * memory then still differs from the shadow), then scan and record.
 * None when the lock stayed busy (nothing done: the Python path does it all), else
 * (perform's result, the racing records or None when the log is full, the unseen
 * run or None). */
/* shadowed()'s work once its arguments are taken: NULL with *busy set when the lock
 * stayed busy (nothing done), NULL with an exception on error, else (perform's result,
 * the racing records or None when the log is full, the unseen run or None). */
static PyObject *access_shadowed(const struct access *a, const struct log_target *t,
                                 int check_unseen, int writes_memory, PyObject *perform,
                                 const Py_buffer *source, int *busy)
{
    int32_t *lock = (int32_t *)t->lock_cell;
    *busy = !try_lock(lock);
    if (*busy)
        return NULL;
    int64_t first = 0, last = 0;
    int unseen = check_unseen && unseen_run(a, (const unsigned char *)t->memory,
                                            (unsigned char *)t->shadow, &first, &last);
    PyObject *result = PyObject_CallNoArgs(perform), *found = NULL;
    if (result) {
        if (writes_memory)
            copy_runs(a, (const unsigned char *)t->memory,
                      source ? (const unsigned char *)source->buf : NULL,
                      (unsigned char *)t->shadow);
        int64_t *count = (int64_t *)t->count_cell;
        int full;       /* then found is NULL: the Python path prunes, then records */
        found = scan_and_add(a, (struct record *)t->records, count,
                             (Py_ssize_t)__atomic_load_n(count, SC), (const int64_t *)t->vc,
                             t->capacity, codes.pending, &full);
    }
    unlock(lock);
    if (!result)
        return NULL;
    if (!found && PyErr_Occurred()) {
        Py_DECREF(result);
        return NULL;
    }
    PyObject *run = unseen ? Py_BuildValue("(LL)", (long long)first, (long long)last)
                           : (Py_INCREF(Py_None), Py_None);
    if (!found) {
        Py_INCREF(Py_None);
        found = Py_None;
    }
    return run ? Py_BuildValue("(NNN)", result, found, run) : NULL;
}

static PyObject *shadowed(PyObject *self, PyObject *args)
{
    struct access a = {0};
    struct log_target t;
    int writes_memory, check_unseen;
    PyObject *lows, *highs, *perform, *source_object = Py_None;
    if (!ready() || !PyArg_ParseTuple(args, "nnOOiiiiiinnnnnppO|O", &t.records, &t.count_cell,
                                      &lows, &highs, &a.kind, &a.op, &a.basic, &a.site,
                                      &a.epoch, &a.me, &t.lock_cell, &t.vc, &t.capacity,
                                      &t.memory, &t.shadow, &check_unseen, &writes_memory,
                                      &perform, &source_object)
            || take_runs(&a, lows, highs) < 0)
        return NULL;
    Py_buffer source = {0};
    if (source_object != Py_None) {
        if (PyObject_GetBuffer(source_object, &source, PyBUF_C_CONTIGUOUS) < 0) {
            release_access(&a);
            return NULL;
        }
        if (source.len != runs_bytes(&a)) {
            PyBuffer_Release(&source);
            release_access(&a);
            PyErr_SetString(PyExc_ValueError, "source: as many bytes as the runs");
            return NULL;
        }
    }
    int busy;
    PyObject *done = access_shadowed(&a, &t, check_unseen, writes_memory, perform,
                                     source.buf ? &source : NULL, &busy);
    if (source.buf)
        PyBuffer_Release(&source);
    release_access(&a);
    if (busy)
        Py_RETURN_NONE;
    return done;
}

/* quick(target, kind, disp, array, basic, site, epoch, me, vc, capacity, put,
 *       check_unseen, perform, counter): WindowCheck.quick_access's C part, a Put
 * (``put``) or Get of a C-contiguous buffer at displacement ``disp``. ``target`` is
 * its QuickTarget (records, count cell, lock cell, memory, shadow, unit, size;
 * memory None when the target's stores are not checked). False when it declines,
 * having done nothing: the buffer not C-contiguous, bytes outside the target's
 * memory, the lock busy. Else the call is made and recorded (shadowed(), or the
 * call then record()) and: None, the access counted at ``counter``, when it races
 * with nothing and met no unseen store; (the racing records' indices or None when
 * it is not recorded yet, the unseen run or None) for the Python path to report. */
static PyObject *quick(PyObject *self, PyObject *args)
{
    struct access a = {0};
    struct log_target t;
    PyObject *target, *array, *perform, *memory, *shadow;
    Py_ssize_t disp, unit, size, counter;
    int put, check_unseen;
    if (!ready() || !PyArg_ParseTuple(args, "O!inOiiiinnppOn", &PyTuple_Type, &target,
                                      &a.kind, &disp, &array, &a.basic, &a.site, &a.epoch,
                                      &a.me, &t.vc, &t.capacity, &put, &check_unseen,
                                      &perform, &counter)
            || !PyArg_ParseTuple(target, "nnnOOnn", &t.records, &t.count_cell, &t.lock_cell,
                                 &memory, &shadow, &unit, &size))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(array, &view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();      /* not C-contiguous: the general path takes it */
        Py_RETURN_FALSE;
    }
    a.low = (int64_t)disp * unit;
    a.high = a.low + view.len;
    if (a.low < 0 || a.low >= a.high || a.high > size) {
        PyBuffer_Release(&view);
        Py_RETURN_FALSE;    /* the real call raises its error on the general path */
    }
    a.lows = &a.low;
    a.highs = &a.high;
    a.runs = 1;
    PyObject *found, *unseen = Py_None, *done = NULL;
    if (memory == Py_None) {        /* stores unchecked: the call, then its record */
        PyObject *result = PyObject_CallNoArgs(perform);
        PyBuffer_Release(&view);
        if (result == NULL)
            return NULL;
        Py_DECREF(result);
        int busy, full;
        found = record_locked(&a, &t, &busy, &full);
        if (found == NULL) {
            if (!busy && !full)
                return NULL;
            Py_INCREF(Py_None);     /* not recorded: the Python path records it */
            found = Py_None;
        }
    } else {
        t.memory = PyLong_AsSsize_t(memory);
        t.shadow = PyLong_AsSsize_t(shadow);
        int busy = 0;
        if (!PyErr_Occurred())
            done = access_shadowed(&a, &t, check_unseen, put, perform, put ? &view : NULL,
                                   &busy);
        PyBuffer_Release(&view);
        if (busy)
            Py_RETURN_FALSE;
        if (done == NULL)
            return NULL;
        found = PyTuple_GET_ITEM(done, 1);
        unseen = PyTuple_GET_ITEM(done, 2);
        Py_INCREF(found);
    }
    PyObject *reply;
    if (found != Py_None && PyList_GET_SIZE(found) == 0 && unseen == Py_None) {
        __atomic_fetch_add((int64_t *)counter, 1, SC);      /* Clock.accesses */
        Py_INCREF(Py_None);
        reply = Py_None;
    } else {
        reply = Py_BuildValue("(OO)", found, unseen);
    }
    Py_DECREF(found);
    Py_XDECREF(done);
    return reply;
}

/* The locked part of stores(): forget the rank's records of the access's kind stamped
 * ``seen`` or earlier, then scan_and_add with ``stamp``. */
PyObject *add_stores(const struct access *a, struct record *rows, int64_t *count,
                     const int64_t *vc, Py_ssize_t capacity, int64_t stamp,
                     int64_t seen, int *full)
{
    Py_ssize_t before = (Py_ssize_t)__atomic_load_n(count, SC), kept = 0;
    for (Py_ssize_t i = 0; i < before; i++) {
        const struct record *r = &rows[i];
        if (r->kind == a->kind && r->origin == a->me && r->stamp <= seen)
            continue;
        if (kept != i)
            rows[kept] = *r;
        kept++;
    }
    return scan_and_add(a, rows, count, kept, vc, capacity, stamp, full);
}

/* stores(records, count_cell, lows, highs, kind, epoch, site, me, lock_cell, vc,
 *        capacity, stamp, seen): record a rank's own stores to its window memory
 * (check/stores.py: ``kind`` STORE, ``epoch`` the epoch kind) under its checking lock,
 * taken with a few tries: first forget its store records stamped ``seen`` or
 * earlier (every rank is ordered after them), then scan, then append or renew them
 * complete with ``stamp``. The indices of the racing records; None when the lock
 * stayed busy or the log is full (nothing recorded: the Python path does it). */
static PyObject *stores(PyObject *self, PyObject *args)
{
    struct access a = {0};
    Py_ssize_t address, count_cell, lock_cell, vc, capacity;
    long long stamp, seen;
    PyObject *lows, *highs;
    if (!ready() || !PyArg_ParseTuple(args, "nnOOiiiinnnLL", &address, &count_cell, &lows,
                                      &highs, &a.kind, &a.epoch, &a.site, &a.me, &lock_cell,
                                      &vc, &capacity, &stamp, &seen)
            || take_runs(&a, lows, highs) < 0)
        return NULL;
    a.op = a.basic = 0;
    int32_t *lock = (int32_t *)lock_cell;
    if (!try_lock(lock)) {
        release_access(&a);
        Py_RETURN_NONE;
    }
    int full;
    PyObject *found = add_stores(&a, (struct record *)address, (int64_t *)count_cell,
                                 (const int64_t *)vc, capacity, stamp, seen, &full);
    unlock(lock);
    release_access(&a);
    if (full)
        Py_RETURN_NONE;
    return found;
}

/* Stamp ``me``'s pending records of the kinds in ``modes`` (MODE_WIN_PUT 1, GET 2,
 * ACCUMULATE 4) with ``epoch``; with ``kind`` >= 0, only those of that kind within
 * bytes low..high (one request's). */
void stamp_pending(struct record *rows, Py_ssize_t count, int me, int64_t epoch,
                   int modes, int64_t low, int64_t high, int kind)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        struct record *r = &rows[i];
        int bit = r->kind == codes.put ? 1 : r->kind == codes.get ? 2 : 4;
        if (r->origin == me && r->stamp == codes.pending && (modes & bit)
                && (kind < 0 || (r->kind == kind && r->low >= low && r->high <= high)))
            r->stamp = epoch;
    }
}

/* complete(records, count, me, epoch, modes[, low, high, kind]): stamp_pending, the
 * target's lock held by the caller. */
static PyObject *complete(PyObject *self, PyObject *args)
{
    Py_ssize_t address, count;
    int me, modes, kind = -1;
    long long epoch, low = 0, high = 0;
    if (!PyArg_ParseTuple(args, "nniLi|LLi", &address, &count, &me, &epoch, &modes, &low,
                          &high, &kind))
        return NULL;
    stamp_pending((struct record *)address, count, me, epoch, modes, low, high, kind);
    Py_RETURN_NONE;
}

/* complete_locked(records, count_cell, lock_cell, me, epoch, modes[, low, high, kind]):
 * stamp_pending under the target's checking lock, taken with a few tries: False when
 * it stayed busy (nothing done: the Python path waits for it). */
static PyObject *complete_locked(PyObject *self, PyObject *args)
{
    Py_ssize_t address, count_cell, lock_cell;
    int me, modes, kind = -1;
    long long epoch, low = 0, high = 0;
    if (!PyArg_ParseTuple(args, "nnniLi|LLi", &address, &count_cell, &lock_cell, &me,
                          &epoch, &modes, &low, &high, &kind))
        return NULL;
    int32_t *lock = (int32_t *)lock_cell;
    if (!try_lock(lock))
        Py_RETURN_FALSE;
    stamp_pending((struct record *)address,
                  (Py_ssize_t)__atomic_load_n((int64_t *)count_cell, SC), me, epoch, modes,
                  low, high, kind);
    unlock(lock);
    Py_RETURN_TRUE;
}

/* written_pages(records, count, me, first, page, pages): a bytes object of one flag
 * per page (``page`` bytes each, the first at byte ``first`` of the target's
 * memory): 1 where a record of another origin than ``me`` writes.  Read without
 * the lock: the load watch takes it as a hint of which pages RMA writes
 * (check/loads.py), never as a record. */
static PyObject *written_pages(PyObject *self, PyObject *args)
{
    Py_ssize_t address, count, first, page, pages;
    int me;
    if (!ready() || !PyArg_ParseTuple(args, "nninnn", &address, &count, &me, &first, &page,
                                      &pages))
        return NULL;
    if (page <= 0 || pages < 0) {
        PyErr_SetString(PyExc_ValueError, "page > 0 and pages >= 0");
        return NULL;
    }
    PyObject *flags = PyBytes_FromStringAndSize(NULL, pages);
    if (flags == NULL)
        return NULL;
    char *flag = PyBytes_AS_STRING(flags);
    memset(flag, 0, (size_t)pages);
    const struct record *rows = (const struct record *)address;
    for (Py_ssize_t i = 0; i < count; i++) {
        const struct record *r = &rows[i];
        if (r->origin == me || !writes(r->kind, r->op) || r->high <= first)
            continue;
        Py_ssize_t low = (Py_ssize_t)(r->low > first ? r->low - first : 0) / page;
        Py_ssize_t high = (Py_ssize_t)(r->high - first - 1) / page;
        for (Py_ssize_t p = low; p <= high && p < pages; p++)
            flag[p] = 1;
    }
    return flags;
}

#ifdef INTERNAL_FRAMES
/* The interpreter's frames, walked without making a frame object of each (as
 * pagewatch.c's fault handler walks them): the innermost complete one from ``frame``. */
static _PyInterpreterFrame *complete_from(_PyInterpreterFrame *frame)
{
    while (frame != NULL && _PyFrame_IsIncomplete(frame))
        frame = frame->previous;
    return frame;
}

static PyCodeObject *code_of(_PyInterpreterFrame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *code = frame->f_executable;
    return code != NULL && PyCode_Check(code) ? (PyCodeObject *)code : NULL;
#else
    return frame->f_code;
#endif
}

/* user_site(prefix, sites, start): report.user_frame and Clock.site_of in one call: the
 * innermost frame whose file does not start with ``prefix`` (shmrma's own code), from
 * ``start`` frames above the caller's (from the caller's when the stack is shallower)
 * on: its site number, when ``sites`` (a dict keyed by (id(code), f_lasti)) has it;
 * else -1 (Python names the site the first time), or None when there is no such
 * frame. */
static PyObject *user_site(PyObject *self, PyObject *args)
{
    PyObject *prefix, *sites;
    int start;
    if (!PyArg_ParseTuple(args, "UO!i", &prefix, &PyDict_Type, &sites, &start))
        return NULL;
    PyThreadState *state = PyThreadState_Get();
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *caller = complete_from(state->current_frame);
#else
    _PyInterpreterFrame *caller = complete_from(state->cframe ? state->cframe->current_frame
                                                              : NULL);
#endif
    _PyInterpreterFrame *frame = caller;
    for (int i = 0; frame != NULL && i < start; i++)
        frame = complete_from(frame->previous);
    for (frame = frame ? frame : caller; frame != NULL; frame = complete_from(frame->previous)) {
        PyCodeObject *code = code_of(frame);
        if (code == NULL)
            continue;
        int ours = PyUnicode_Tailmatch(code->co_filename, prefix, 0, PY_SSIZE_T_MAX, -1);
        if (ours < 0)
            return NULL;
        if (ours)
            continue;
        PyObject *lasti = PyLong_FromLong(
            _PyInterpreterFrame_LASTI(frame) * (long)sizeof(_Py_CODEUNIT));
        PyObject *id = PyLong_FromVoidPtr(code);
        PyObject *key = lasti && id ? PyTuple_Pack(2, id, lasti) : NULL;
        Py_XDECREF(id);
        PyObject *found = key ? PyDict_GetItemWithError(sites, key) : NULL;
        Py_XDECREF(key);
        Py_XDECREF(lasti);
        if (found != NULL) {
            Py_INCREF(found);
            return found;
        }
        return PyErr_Occurred() ? NULL : PyLong_FromLong(-1);
    }
    Py_RETURN_NONE;
}
#endif

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(pending, load, put, get, accumulate, get_accumulate, "
     "fetch_and_op, no_op, lock_exclusive, lock_all): the codes of accesses.py"},
    {"scan", scan, METH_VARARGS, "the indices of the records racing with an access"},
    {"add", add, METH_VARARGS, "record an access; the new count, -1 when full"},
    {"record", record, METH_VARARGS, "lock, scan, record, unlock; None: do it in Python"},
    {"shadowed", shadowed, METH_VARARGS, "record() around the call, keeping the shadow"},
    {"complete", complete, METH_VARARGS, "stamp this rank's pending records"},
    {"complete_locked", complete_locked, METH_VARARGS,
     "complete() under the target's lock; False: do it in Python"},
    {"stores", stores, METH_VARARGS, "record a rank's own stores, forgetting ordered ones"},
    {"diff", diff, METH_VARARGS, "the byte runs where memory differs from its shadow"},
    {"same", same, METH_VARARGS, "whether memory equals its shadow throughout"},
    {"quick", quick, METH_VARARGS, "a Put or Get of a contiguous buffer, made and recorded"},
    {"look_stores", look_stores, METH_VARARGS, "diff and record a rank's stores in one call"},
    {"written_pages", written_pages, METH_VARARGS, "a flag per page other origins write"},
    {"acquire", acquire, METH_VARARGS, "join the clock a rank released under a key"},
    {"acquire_each", acquire_each, METH_VARARGS, "acquire() from each of several rings"},
    {"release", release, METH_VARARGS, "append the clock to the ring, end the epoch"},
    {"publish", publish, METH_VARARGS, "write the clock into a cell, end the epoch"},
    {"join", join, METH_VARARGS, "join the clock in a cell"},
    {"signal", signal_counter, METH_VARARGS, "complete a signal's RMA, publish its clock"},
    {"join_keyed", join_keyed, METH_VARARGS, "join the clock of each rank's cell for a key"},
#ifdef INTERNAL_FRAMES
    {"user_site", user_site, METH_VARARGS, "the site of the program's innermost frame"},
#endif
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
