/*
 * Buffer operands (shmrma/types/buffers.py) as the C paths take them: C-contiguous
 * buffers with a plain native format whose item size agrees, and the vector
 * messages of the collectives (a buffer with counts, displacements and a
 * predefined datatype).  Anything else is a miss, left to the Python path.
 */
#include "types.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ORDER '<'
#else
#define NATIVE_ORDER '>'
#endif

/* Typecodes of the formats taken as they are, with their C size; the rest miss. */
Py_ssize_t
format_size(char code)
{
    switch (code) {
    case 'b': case 'B': case '?': return 1;
    case 'h': case 'H': return sizeof(short);
    case 'i': case 'I': return sizeof(int);
    case 'l': case 'L': return sizeof(long);
    case 'q': case 'Q': return sizeof(long long);
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    default: return 0;
    }
}

int
element_type(char code, Py_ssize_t size)
{
    if (code == 'f') return E_F32;
    if (code == 'd') return E_F64;
    if (code == 'b' || code == 'h' || code == 'i' || code == 'l' || code == 'q')
        return size == 1 ? E_I8 : size == 2 ? E_I16 : size == 4 ? E_I32 :
            size == 8 ? E_I64 : E_RAW;
    /* 'B' is UNSIGNED_CHAR; a buffer with no format (MPI BYTE, code 0) stays E_RAW */
    if (code == 'B' || code == 'H' || code == 'I' || code == 'L' || code == 'Q')
        return size == 1 ? E_U8 : size == 2 ? E_U16 : size == 4 ? E_U32 :
            size == 8 ? E_U64 : E_RAW;
    return E_RAW;
}

/* The typecode of a PEP 3118 format as shmrma.datatype.from_buffer_format reads it. */
int
format_code(const char *fmt, char *code)
{
    if (fmt == NULL) {
        *code = 0;
        return 0;
    }
    if (fmt[0] == '@' || fmt[0] == NATIVE_ORDER)
        fmt++;
    if (fmt[0] == '\0' || fmt[1] != '\0' || format_size(fmt[0]) == 0)
        return -1;
    *code = fmt[0];
    return 0;
}

void
operand_release(Operand *o)
{
    PyBuffer_Release(&o->view);
}

/* A C-contiguous buffer with a known format whose item size agrees. */
int
operand_get(PyObject *obj, int writable, Operand *o)
{
    Py_ssize_t size;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &o->view, flags) < 0) {
        PyErr_Clear();
        return -1;
    }
    size = o->view.itemsize;
    if (format_code(o->view.format, &o->code) < 0 ||
            size != (o->code ? format_size(o->code) : 1) || o->view.len % size != 0) {
        operand_release(o);
        return -1;
    }
    o->etype = element_type(o->code, size);
    o->count = o->view.len / size;
    return 0;
}

/* --- vector messages (the counts and displacements of Gatherv, Alltoallv, ...) --- */

static PyObject **g_datatypes;      /* the predefined datatypes a vector message may name */
static Py_ssize_t *g_extents;       /* and their extents */
static Py_ssize_t g_ndatatypes;

/* The predefined datatypes a vector message may name: a sequence of
 * (datatype, extent > 0), kept for good. */
int
set_vector_datatypes(PyObject *pairs)
{
    PyObject *seq = PySequence_Fast(pairs, "datatypes must be a sequence");
    Py_ssize_t i, n;
    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    g_ndatatypes = 0;
    PyMem_Free(g_extents);
    g_datatypes = PyMem_Realloc(g_datatypes, (size_t)(n ? n : 1) * sizeof(PyObject *));
    g_extents = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    if (g_datatypes == NULL || g_extents == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++) {
        PyObject *datatype;
        Py_ssize_t extent;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "On", &datatype, &extent) ||
                extent <= 0) {
            PyErr_SetString(PyExc_ValueError, "datatypes are (datatype, extent > 0)");
            Py_DECREF(seq);
            return -1;
        }
        Py_INCREF(datatype);
        g_datatypes[i] = datatype;
        g_extents[i] = extent;
    }
    g_ndatatypes = n;
    Py_DECREF(seq);
    return 0;
}

/* vector_setup(datatypes) */
static PyObject *
n_vector_setup(PyObject *m, PyObject *datatypes)
{
    if (set_vector_datatypes(datatypes) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The extent of a predefined datatype set_vector_datatypes named; 0 for any
 * other object. */
static Py_ssize_t
extent_of(PyObject *datatype)
{
    Py_ssize_t i;
    for (i = 0; i < g_ndatatypes; i++)
        if (g_datatypes[i] == datatype)
            return g_extents[i];
    return 0;
}

/* The counts (or, `displs`, the displacements) of a vector message into each
 * span's len (at), in items: an int (every rank's count; the displacements'
 * stride), or a list or tuple of an int per rank, each >= 0.  None is left to
 * the caller.  -1: a miss. */
int
per_rank(PyObject *obj, int n, Span *spans, int displs)
{
    PyObject *const *items;
    long value;
    int r;
    if (PyLong_CheckExact(obj)) {
        if ((value = plain_int(obj)) < 0 || value > PY_SSIZE_T_MAX / n)
            return -1;
        for (r = 0; r < n; r++)
            *(displs ? &spans[r].at : &spans[r].len) = displs ? value * r : value;
        return 0;
    }
    if ((!PyList_Check(obj) && !PyTuple_Check(obj)) || PySequence_Fast_GET_SIZE(obj) != n)
        return -1;
    items = PySequence_Fast_ITEMS(obj);
    for (r = 0; r < n; r++) {
        if ((value = plain_int(items[r])) < 0)
            return -1;
        *(displs ? &spans[r].at : &spans[r].len) = value;
    }
    return 0;
}

/* A vector collective's message (buffers.vector_message) in the forms C takes:
 * a buffer, [buf, counts], [buf, (counts, displs)], [buf, counts, datatype],
 * [buf, (counts, displs), datatype] or [buf, counts, displs, datatype], the
 * counts and displacements None, an int or an int per rank, the datatype None
 * or a predefined one: the buffer into *op, each rank's part into spans.
 * Counts left out split the buffer as evenly as it goes (the first ranks get
 * one more item); displacements left out pack the parts.  -1: a miss, nothing
 * held (Python raises what is wrong). */
int
vector_get(PyObject *msg, int writable, int n, Operand *op, Span *spans)
{
    PyObject *buf = msg, *counts = Py_None, *displs = Py_None, *datatype = Py_None;
    Py_ssize_t extent, items, packed = 0;
    int r;
    if (PyList_Check(msg) || PyTuple_Check(msg)) {
        PyObject *const *parts = PySequence_Fast_ITEMS(msg);
        Py_ssize_t len = PySequence_Fast_GET_SIZE(msg);
        if (len < 2 || len > 4)
            return -1;
        buf = parts[0];
        counts = parts[1];
        if (len == 4)
            displs = parts[2];
        if (len > 2)
            datatype = parts[len - 1];
        else if (extent_of(parts[1])) {
            datatype = parts[1];
            counts = Py_None;
        }
        if (len < 4 && PyTuple_Check(counts)) {     /* (counts, displs) */
            if (PyTuple_GET_SIZE(counts) != 2)
                return -1;
            displs = PyTuple_GET_ITEM(counts, 1);
            counts = PyTuple_GET_ITEM(counts, 0);
        }
    }
    if ((datatype != Py_None && !extent_of(datatype)) || operand_get(buf, writable, op) < 0)
        return -1;
    extent = datatype != Py_None ? extent_of(datatype) : op->view.itemsize;
    items = op->view.len / extent;
    if (counts == Py_None) {
        if (op->view.len % extent)
            goto miss;
        for (r = 0; r < n; r++)
            spans[r].len = items / n + (items % n > r);
    }
    else if (per_rank(counts, n, spans, 0) < 0)
        goto miss;
    if (displs == Py_None)
        for (r = 0; r < n; r++) {
            spans[r].at = packed;
            packed += spans[r].len;
        }
    else if (per_rank(displs, n, spans, 1) < 0)
        goto miss;
    for (r = 0; r < n; r++) {      /* within the buffer, then in bytes */
        if (spans[r].len > items || spans[r].at > items - spans[r].len)
            goto miss;
        spans[r].at *= extent;
        spans[r].len *= extent;
    }
    return 0;
miss:
    operand_release(op);
    return -1;
}

static PyMethodDef buffers_functions[] = {
    {"vector_setup", (PyCFunction)n_vector_setup, METH_O,
     "vector_setup(datatypes): the (datatype, extent) of the predefined datatypes a "
     "vector collective's message may name on the C paths."},
    {NULL, NULL, 0, NULL}
};

int
buffers_init(PyObject *module)
{
    return PyModule_AddFunctions(module, buffers_functions);
}
