/* The race checker's store finder in C (check/stores.py is the reference and
 * the fallback): the comparison of a rank's window memory with its shadow copy
 * that finds the rank's own stores, word by word where a block changed, whole
 * blocks and chunks compared in one memcmp where nothing did (diff, same); and
 * look_stores, which records the stores it finds in the access log
 * (check/racecheck.c) in the same call, under the rank's checking lock.  Part
 * of shmrma._racecheck: racecheck.c's table lists these functions.
 */
#define PY_SSIZE_T_CLEAN
#include "check.h"

#define DIFF_BLOCK 64
#define DIFF_CHUNK 4096     /* a multiple of DIFF_BLOCK */
/* Whether ``size`` bytes differ (a word's: one load each when it is 8 bytes). */
static int word_differs(const unsigned char *a, const unsigned char *b, Py_ssize_t size)
{
    if (size == 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        return x != y;
    }
    return memcmp(a, b, (size_t)size) != 0;
}

/* A bit per 8-byte word of a 64-byte block: set where memory and shadow differ. */
static uint64_t changed_words8(const unsigned char *memory, const unsigned char *shadow)
{
    uint64_t changed = 0;
    for (int w = 0; w < DIFF_BLOCK / 8; w++) {
        uint64_t x, y;
        memcpy(&x, memory + 8 * w, 8);
        memcpy(&y, shadow + 8 * w, 8);
        changed |= (uint64_t)(x != y) << w;
    }
    return changed;
}

/* Byte runs found by a diff, in C arrays that grow. */
struct runs {
    int64_t *lows, *highs;
    Py_ssize_t count, room;
};

static int append_run(struct runs *r, Py_ssize_t low, Py_ssize_t high)
{
    if (r->count == r->room) {
        Py_ssize_t room = r->room ? 2 * r->room : 16;
        int64_t *lows = PyMem_Realloc(r->lows, (size_t)room * 8);
        if (lows == NULL)
            return -1;
        r->lows = lows;
        int64_t *highs = PyMem_Realloc(r->highs, (size_t)room * 8);
        if (highs == NULL)
            return -1;
        r->highs = highs;
        r->room = room;
    }
    r->lows[r->count] = low;
    r->highs[r->count] = high;
    r->count++;
    return 0;
}

static void free_runs(struct runs *r)
{
    PyMem_Free(r->lows);
    PyMem_Free(r->highs);
}

/* The runs as (lows, highs) lists of ints, or NULL. */
static PyObject *runs_lists(const struct runs *r)
{
    PyObject *lows = PyList_New(r->count), *highs = PyList_New(r->count);
    for (Py_ssize_t i = 0; lows && highs && i < r->count; i++) {
        PyObject *low = PyLong_FromLongLong(r->lows[i]), *high = PyLong_FromLongLong(r->highs[i]);
        if (low == NULL || high == NULL) {
            Py_XDECREF(low);
            Py_XDECREF(high);
            Py_CLEAR(lows);
            break;
        }
        PyList_SET_ITEM(lows, i, low);
        PyList_SET_ITEM(highs, i, high);
    }
    if (lows == NULL || highs == NULL) {
        Py_XDECREF(lows);
        Py_XDECREF(highs);
        return PyErr_NoMemory();
    }
    return Py_BuildValue("(NN)", lows, highs);
}

/* The runs of ``grain``-byte words where ``memory`` differs from its ``shadow`` (see
 * diff()), appended to ``out``, the shadow brought up to date on them: 0, or -1 when
 * out of memory. */
static int find_stores(const unsigned char *memory, unsigned char *shadow, Py_ssize_t nbytes,
                       Py_ssize_t grain, Py_ssize_t max_runs, struct runs *out)
{
    Py_ssize_t run_low = -1, run_high = -1;
    for (Py_ssize_t block = 0; block < nbytes; block += DIFF_BLOCK) {
        if (block % DIFF_CHUNK == 0) {      /* skip unchanged chunks in one memcmp */
            Py_ssize_t chunk_end = block + DIFF_CHUNK < nbytes ? block + DIFF_CHUNK : nbytes;
            if (!memcmp(memory + block, shadow + block, (size_t)(chunk_end - block))) {
                block = chunk_end - DIFF_BLOCK;
                continue;
            }
        }
        Py_ssize_t end = block + DIFF_BLOCK < nbytes ? block + DIFF_BLOCK : nbytes;
        Py_ssize_t words = (end - block + grain - 1) / grain;
        uint64_t changed = 0, every = words == 64 ? ~(uint64_t)0 : ((uint64_t)1 << words) - 1;
        if (grain == 8 && end - block == DIFF_BLOCK) {
            /* the common case (float64 and int64 windows), compared and copied inline */
            changed = changed_words8(memory + block, shadow + block);
            if (!changed)
                continue;
            memcpy(shadow + block, memory + block, DIFF_BLOCK);
        } else {
            if (!memcmp(memory + block, shadow + block, (size_t)(end - block)))
                continue;
            /* which words changed (a block holds at most 64), then one copy of it */
            for (Py_ssize_t w = 0; w < words; w++) {
                Py_ssize_t word = block + w * grain;
                if (word_differs(memory + word, shadow + word,
                                 word + grain <= end ? grain : end - word))
                    changed |= (uint64_t)1 << w;
            }
            memcpy(shadow + block, memory + block, (size_t)(end - block));
        }
        if (changed == every && block == run_high) {   /* a run going on through the block */
            run_high = end;
            continue;
        }
        for (Py_ssize_t w = 0; w < words; w++) {
            if (!(changed >> w & 1))
                continue;
            Py_ssize_t word = block + w * grain;
            Py_ssize_t size = word + grain <= end ? grain : end - word;
            if (word == run_high || (out->count >= max_runs && word - run_high < DIFF_BLOCK)) {
                run_high = word + size;
                continue;
            }
            if (run_low >= 0 && append_run(out, run_low, run_high) < 0)
                return -1;
            run_low = word;
            run_high = word + size;
        }
    }
    if (run_low >= 0 && append_run(out, run_low, run_high) < 0)
        return -1;
    return 0;
}

static int valid_grain(Py_ssize_t grain)
{
    if (grain != 1 && grain != 2 && grain != 4 && grain != 8) {
        PyErr_SetString(PyExc_ValueError, "grain: 1, 2, 4 or 8");
        return 0;
    }
    return 1;
}

/* Memory equal to its shadow throughout needs no lock: the owner's stores are all
 * made (it is the caller), and an RMA writing meanwhile updates the memory first, so
 * a block it is halfway through differs and takes the locked pass. */
static int unchanged(const unsigned char *memory, const unsigned char *shadow,
                     Py_ssize_t nbytes)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return !memcmp(memory, shadow, (size_t)nbytes);
}

/* diff(memory, shadow, nbytes, grain, max_runs[, lock_cell]): the runs of ``grain``-byte words
 * (1, 2, 4 or 8, from the window's start) where ``memory`` differs from its
 * ``shadow`` copy, as (lows, highs) lists, the shadow brought up to date on them.
 * Once ``max_runs`` are found, runs less than a block apart merge (a coarser
 * answer). Whole blocks are compared first: memory that did not change costs a
 * memcmp. With ``lock_cell``, under that lock, taken with a few tries: None when it
 * stayed busy. */
PyObject *diff(PyObject *self, PyObject *args)
{
    Py_ssize_t memory_address, shadow_address, nbytes, grain, max_runs, lock_cell = 0;
    if (!PyArg_ParseTuple(args, "nnnnn|n", &memory_address, &shadow_address, &nbytes, &grain,
                          &max_runs, &lock_cell)
            || !valid_grain(grain))
        return NULL;
    const unsigned char *memory = (const unsigned char *)memory_address;
    unsigned char *shadow = (unsigned char *)shadow_address;
    int32_t *lock = (int32_t *)lock_cell;
    if (lock) {
        if (unchanged(memory, shadow, nbytes))
            return Py_BuildValue("([][])");
        if (!try_lock(lock))
            Py_RETURN_NONE;
    }
    struct runs found = {0};
    int bad = find_stores(memory, shadow, nbytes, grain, max_runs, &found);
    if (lock)
        unlock(lock);
    PyObject *result = bad ? PyErr_NoMemory() : runs_lists(&found);
    free_runs(&found);
    return result;
}

/* The latest epoch of this rank every rank has acquired: the least of the clock
 * entries at ``entries`` (a tuple of addresses, Clock.entries_for_me). */
static int seen_by_all(PyObject *entries, int64_t *seen)
{
    *seen = INT64_MAX;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(entries); i++) {
        Py_ssize_t address = PyLong_AsSsize_t(PyTuple_GET_ITEM(entries, i));
        if (address == -1 && PyErr_Occurred())
            return -1;
        int64_t entry = __atomic_load_n((const int64_t *)address, SC);
        if (entry < *seen)
            *seen = entry;
    }
    return 0;
}

/* look_stores(memory, shadow, nbytes, grain, max_runs, lock_cell, records, count_cell,
 *             kind, epoch, site, me, vc, capacity, stamp, entries):
 * Stores.look's diff and its record in one call, under the rank's checking lock
 * (taken with a few tries) throughout: the runs where the memory differs from its
 * shadow (diff()), recorded as stores() records them, forgetting the rank's store
 * records every rank has acquired (``entries``: the addresses of their clocks'
 * entries for this rank). ``site`` names the call site (a callable returning its
 * number), called once the memory differs, before the lock. (lows, highs, the racing
 * records' indices, the site number): the lists empty and the site -1 when nothing
 * changed; the indices None when the log is full (the Python path records the
 * runs); None when the lock stayed busy (nothing done). */
PyObject *look_stores(PyObject *self, PyObject *args)
{
    Py_ssize_t memory_address, shadow_address, nbytes, grain, max_runs, lock_cell, address,
               count_cell, vc, capacity;
    long long stamp;
    struct access a = {0};
    PyObject *entries, *site;
    if (!ready() || !PyArg_ParseTuple(args, "nnnnnnnniiOinnLO!", &memory_address,
                                      &shadow_address, &nbytes, &grain, &max_runs, &lock_cell,
                                      &address, &count_cell, &a.kind, &a.epoch, &site, &a.me,
                                      &vc, &capacity, &stamp, &PyTuple_Type, &entries)
            || !valid_grain(grain))
        return NULL;
    const unsigned char *memory = (const unsigned char *)memory_address;
    unsigned char *shadow = (unsigned char *)shadow_address;
    if (unchanged(memory, shadow, nbytes))
        return Py_BuildValue("([][][]i)", -1);
    PyObject *number = PyObject_CallNoArgs(site);
    a.site = number ? (int32_t)PyLong_AsLong(number) : -1;
    Py_XDECREF(number);
    if (a.site == -1 && PyErr_Occurred())
        return NULL;
    int32_t *lock = (int32_t *)lock_cell;
    if (!try_lock(lock))
        Py_RETURN_NONE;
    struct runs found = {0};
    int64_t seen;
    PyObject *races = NULL;
    int bad = find_stores(memory, shadow, nbytes, grain, max_runs, &found) < 0, full = 0;
    if (bad)
        PyErr_NoMemory();
    else if (found.count && seen_by_all(entries, &seen) == 0) {
        a.lows = found.lows;
        a.highs = found.highs;
        a.runs = found.count;
        races = add_stores(&a, (struct record *)address, (int64_t *)count_cell,
                           (const int64_t *)vc, capacity, stamp, seen, &full);
    } else if (!found.count) {
        races = PyList_New(0);
    }
    unlock(lock);
    PyObject *result = NULL;
    if (races != NULL || full) {
        PyObject *lists = runs_lists(&found);
        if (lists != NULL) {
            result = Py_BuildValue("(OOOi)", PyTuple_GET_ITEM(lists, 0),
                                   PyTuple_GET_ITEM(lists, 1), races ? races : Py_None,
                                   (int)a.site);
            Py_DECREF(lists);
        }
    }
    Py_XDECREF(races);
    free_runs(&found);
    return result;
}

/* same(memory, shadow, nbytes): whether the memory equals its shadow throughout (no
 * store of its owner since it last looked: diff's first pass, without its lock). */
PyObject *same(PyObject *self, PyObject *args)
{
    Py_ssize_t memory, shadow, nbytes;
    if (!PyArg_ParseTuple(args, "nnn", &memory, &shadow, &nbytes))
        return NULL;
    if (nbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "nbytes >= 0");
        return NULL;
    }
    return PyBool_FromLong(unchanged((const unsigned char *)memory,
                                     (const unsigned char *)shadow, nbytes));
}
