/* The race checker's vector clocks in C (check/clock.py's Clock is the
 * reference and the fallback): a rank joins into its clock the clocks other
 * ranks released under a key, from their rings of (key, clock) rows (acquire,
 * acquire_each) or from cells (join, join_keyed); it releases its own into its
 * ring or publishes it into a cell, ending its epoch (release, publish), and a
 * counter's signal completes the RMA it covers in the access log, then
 * publishes (signal).  Part of shmrma._racecheck: racecheck.c's table lists
 * these functions.
 */
#define PY_SSIZE_T_CLEAN
#include "check.h"

/* vc = max(vc, clock), element-wise, over ``n`` entries (a clock only grows: an entry
 * read while it changes is still one it had). */
static void join_into(int64_t *vc, const int64_t *clock, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t seen = __atomic_load_n(&clock[i], __ATOMIC_RELAXED);
        if (seen > vc[i])
            vc[i] = seen;
    }
}

/* Join into ``vc`` the clock a rank released under ``key`` (acquire()): 1, or 0 when
 * the key is not in its ring, or its row was reused while copied. */
static int acquire_from(const int64_t *ring, const int64_t *index, Py_ssize_t entries,
                        Py_ssize_t width, Py_ssize_t recent, int64_t key, int64_t *vc)
{
    int64_t newest = __atomic_load_n(index, __ATOMIC_SEQ_CST);
    const int64_t *entry = NULL;
    for (Py_ssize_t back = 1; back <= recent && !entry; back++) {
        const int64_t *row = ring + ((((newest - back) % entries) + entries) % entries) * width;
        if (__atomic_load_n(row, __ATOMIC_SEQ_CST) == key)
            entry = row;
    }
    for (Py_ssize_t back = 1; back <= entries && !entry; back++) {     /* newest first */
        const int64_t *row = ring + ((((newest - back) % entries) + entries) % entries) * width;
        if (__atomic_load_n(row, __ATOMIC_SEQ_CST) == key)
            entry = row;
    }
    if (!entry)
        return 0;
    int64_t clock[4096];
    memcpy(clock, entry + 1, (size_t)(width - 1) * 8);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(entry, __ATOMIC_SEQ_CST) != key)
        return 0;       /* reused while we copied: so long ago it cannot matter */
    join_into(vc, clock, width - 1);
    return 1;
}

static int ring_shape_ok(Py_ssize_t entries, Py_ssize_t width)
{
    if (entries <= 0 || width < 2 || width > 4097) {
        PyErr_SetString(PyExc_ValueError, "acquire: entries > 0 and 2 <= width <= 4097");
        return 0;
    }
    return 1;
}

/* acquire(ring, ring_index, entries, width, recent, key, vc): join (element-wise max)
 * into the clock at ``vc`` the clock a rank released under ``key`` (check/clock.py,
 * Clock.acquire, is the reference and the fallback): its ring holds ``entries``
 * rows of ``width`` int64 (key, clock), the newest just below the index; the
 * ``recent`` newest are looked at first, then every row, the newest match taken.
 * False when the key is not there, or its row was reused while copied. */
PyObject *acquire(PyObject *self, PyObject *args)
{
    Py_ssize_t ring_address, index_address, entries, width, recent, vc_address;
    long long key;
    if (!PyArg_ParseTuple(args, "nnnnnLn", &ring_address, &index_address, &entries, &width,
                          &recent, &key, &vc_address)
            || !ring_shape_ok(entries, width))
        return NULL;
    return PyBool_FromLong(acquire_from((const int64_t *)ring_address,
                                        (const int64_t *)index_address, entries, width,
                                        recent, key, (int64_t *)vc_address));
}

/* acquire_each(rings, key, vc): acquire() from each ring of ``rings``, a tuple of
 * acquire()'s (ring, ring_index, entries, width, recent): the count of clocks joined. */
PyObject *acquire_each(PyObject *self, PyObject *args)
{
    PyObject *rings;
    Py_ssize_t vc_address, joined = 0;
    long long key;
    if (!PyArg_ParseTuple(args, "O!Ln", &PyTuple_Type, &rings, &key, &vc_address))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rings); i++) {
        Py_ssize_t ring_address, index_address, entries, width, recent;
        PyObject *ring = PyTuple_GET_ITEM(rings, i);
        if (!PyTuple_Check(ring) || !PyArg_ParseTuple(ring, "nnnnn", &ring_address,
                                                      &index_address, &entries, &width,
                                                      &recent)
                || !ring_shape_ok(entries, width)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "acquire_each: a tuple of ring tuples");
            return NULL;
        }
        joined += acquire_from((const int64_t *)ring_address, (const int64_t *)index_address,
                               entries, width, recent, key, (int64_t *)vc_address);
    }
    return PyLong_FromSsize_t(joined);
}

/* The clock ``vc`` (width - 1 entries) into ``entry`` after its key, then the key;
 * with ``clear``, the key is 0 while the clock changes (readers skip the entry). */
static void write_clock(int64_t *entry, const int64_t *vc, Py_ssize_t width, int64_t key,
                        int clear)
{
    if (clear) {
        __atomic_store_n(entry, 0, __ATOMIC_SEQ_CST);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    memcpy(entry + 1, vc, (size_t)(width - 1) * 8);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(entry, key, __ATOMIC_SEQ_CST);
}

/* release(ring, index_cell, entries, width, key, vc, me): Clock.release_here in one
 * call: the clock appended to the rank's ring under ``key`` (its entry's key cleared
 * while it changes), the ring's index moved on, then the rank's epoch ended
 * (vc[me] += 1). */
PyObject *release(PyObject *self, PyObject *args)
{
    Py_ssize_t ring_address, index_address, entries, width, vc_address, me;
    long long key;
    if (!PyArg_ParseTuple(args, "nnnnLnn", &ring_address, &index_address, &entries, &width,
                          &key, &vc_address, &me))
        return NULL;
    if (entries <= 0 || width < 2 || me < 0 || me >= width - 1) {
        PyErr_SetString(PyExc_ValueError, "release: entries > 0, width >= 2, 0 <= me < width - 1");
        return NULL;
    }
    int64_t *index = (int64_t *)index_address, *vc = (int64_t *)vc_address;
    int64_t at = __atomic_load_n(index, __ATOMIC_SEQ_CST);
    write_clock((int64_t *)ring_address + (at % entries) * width, vc, width, key, 1);
    __atomic_store_n(index, at + 1, __ATOMIC_SEQ_CST);
    vc[me] += 1;
    Py_RETURN_NONE;
}

/* publish(cell, width, key, vc, me): Clock.publish_here's write in one call: the
 * clock over the cell's (every entry only grows: a torn read is still safe, and the
 * key stays, so probes never find the cell empty), then vc[me] += 1. */
PyObject *publish(PyObject *self, PyObject *args)
{
    Py_ssize_t cell_address, width, vc_address, me;
    long long key;
    if (!PyArg_ParseTuple(args, "nnLnn", &cell_address, &width, &key, &vc_address, &me))
        return NULL;
    if (width < 2 || me < 0 || me >= width - 1) {
        PyErr_SetString(PyExc_ValueError, "publish: width >= 2, 0 <= me < width - 1");
        return NULL;
    }
    int64_t *vc = (int64_t *)vc_address;
    write_clock((int64_t *)cell_address, vc, width, key, 0);
    vc[me] += 1;
    Py_RETURN_NONE;
}

/* signal(records, count_cell, lock_cell, modes, cell, width, key, vc, me): a counter's
 * signal in one call: with ``modes``, this rank's pending records of those kinds at
 * the target stamped with its epoch (complete_locked: False when the target's lock
 * stayed busy, nothing done), then its clock published into its cell for the key
 * (publish): True. */
PyObject *signal_counter(PyObject *self, PyObject *args)
{
    Py_ssize_t address, count_cell, lock_cell, cell_address, width, vc_address, me;
    int modes;
    long long key;
    if (!PyArg_ParseTuple(args, "nnninnLnn", &address, &count_cell, &lock_cell, &modes,
                          &cell_address, &width, &key, &vc_address, &me))
        return NULL;
    if (width < 2 || me < 0 || me >= width - 1) {
        PyErr_SetString(PyExc_ValueError, "signal: width >= 2, 0 <= me < width - 1");
        return NULL;
    }
    int64_t *vc = (int64_t *)vc_address;
    if (modes) {
        int32_t *lock = (int32_t *)lock_cell;
        if (!try_lock(lock))
            Py_RETURN_FALSE;
        stamp_pending((struct record *)address,
                      (Py_ssize_t)__atomic_load_n((int64_t *)count_cell, SC), (int)me, vc[me],
                      modes, 0, 0, -1);
        unlock(lock);
    }
    write_clock((int64_t *)cell_address, vc, width, key, 0);
    vc[me] += 1;
    Py_RETURN_TRUE;
}

/* join(cell, width, vc): join the clock in a cell (after its key) into ``vc``. */
PyObject *join(PyObject *self, PyObject *args)
{
    Py_ssize_t cell_address, width, vc_address;
    if (!PyArg_ParseTuple(args, "nnn", &cell_address, &width, &vc_address))
        return NULL;
    join_into((int64_t *)vc_address, (const int64_t *)cell_address + 1, width - 1);
    Py_RETURN_NONE;
}

/* join_keyed(bases, cell_bytes, cells, key, width, vc): Clock.join_cell for each rank
 * whose cells start at one of ``bases`` (a tuple): probe from the key's cell on, join
 * the clock of the cell holding ``key`` into ``vc``; an empty cell ends the probe (the
 * rank never published the key). The count of cells joined. */
PyObject *join_keyed(PyObject *self, PyObject *args)
{
    PyObject *bases;
    Py_ssize_t cell_bytes, cells, width, vc_address;
    long long key;
    if (!PyArg_ParseTuple(args, "O!nnLnn", &PyTuple_Type, &bases, &cell_bytes, &cells, &key,
                          &width, &vc_address))
        return NULL;
    if (cells <= 0 || width < 2 || cell_bytes < width * 8 || key <= 0) {
        PyErr_SetString(PyExc_ValueError,
                        "join_keyed: cells > 0, width >= 2, cell_bytes >= 8 * width, key > 0");
        return NULL;
    }
    Py_ssize_t joined = 0;
    for (Py_ssize_t b = 0; b < PyTuple_GET_SIZE(bases); b++) {
        Py_ssize_t base = PyLong_AsSsize_t(PyTuple_GET_ITEM(bases, b));
        if (base == -1 && PyErr_Occurred())
            return NULL;
        for (Py_ssize_t probe = 0; probe < cells; probe++) {
            const int64_t *cell = (const int64_t *)(base + (Py_ssize_t)(
                ((unsigned long long)key + (unsigned long long)probe) % (unsigned long long)cells)
                * cell_bytes);
            int64_t seen = __atomic_load_n(cell, __ATOMIC_SEQ_CST);
            if (seen == key) {
                join_into((int64_t *)vc_address, cell + 1, width - 1);
                joined++;
                break;
            }
            if (seen == 0)
                break;
        }
    }
    return PyLong_FromSsize_t(joined);
}
