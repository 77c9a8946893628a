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

static PyObject **g_datatypes;      /* the predefined datatypes a message may name */
static Py_ssize_t *g_extents;       /* and their extents */
static char *g_codes;               /* and typecodes (0: none the kernels know) */
static Py_ssize_t g_ndatatypes;
static int g_format_datatype[256];  /* the datatype a buffer format means, by its
                                     * typecode (0: no format); -1 none */

void
operand_release(Operand *o)
{
    o->view.buf = o->whole;
    o->view.len = o->whole_len;
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
    o->whole = o->view.buf;
    o->whole_len = o->view.len;
    size = o->view.itemsize;
    if (format_code(o->view.format, &o->code) < 0 ||
            size != (o->code ? format_size(o->code) : 1) || o->view.len % size != 0) {
        operand_release(o);
        return -1;
    }
    o->etype = element_type(o->code, size);
    o->datatype = g_format_datatype[(unsigned char)o->code];
    o->extent = size;
    o->count = o->view.len / size;
    return 0;
}

/* --- the datatypes a message may name, and messages ------------------------------ */

static Py_ssize_t datatype_index(PyObject *datatype);

/* g_format_datatype from (format, datatype) pairs, datatypes of the table. */
static int
set_format_datatypes(PyObject *formats)
{
    PyObject *seq = PySequence_Fast(formats, "formats must be a sequence");
    Py_ssize_t i;
    if (seq == NULL)
        return -1;
    memset(g_format_datatype, -1, sizeof g_format_datatype);
    for (i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *datatype;
        const char *format;
        Py_ssize_t len, index;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "s#O", &format, &len,
                              &datatype) || len > 1 || (index = datatype_index(datatype)) < 0) {
            PyErr_SetString(PyExc_ValueError, "formats are (a typecode or \"\", a datatype "
                            "of the table)");
            Py_DECREF(seq);
            return -1;
        }
        g_format_datatype[len ? (unsigned char)format[0] : 0] = (int)index;
    }
    Py_DECREF(seq);
    return 0;
}

/* The predefined datatypes a message may name: a sequence of (datatype,
 * extent > 0, typecode) (the typecode of format_size's, or ""), kept for good;
 * then the datatype each buffer format means (set_format_datatypes). */
int
set_datatypes(PyObject *pairs, PyObject *formats)
{
    PyObject *seq = PySequence_Fast(pairs, "datatypes must be a sequence");
    Py_ssize_t i, n;
    if (seq == NULL)
        return -1;
    n = PySequence_Fast_GET_SIZE(seq);
    g_ndatatypes = 0;
    PyMem_Free(g_extents);
    PyMem_Free(g_codes);
    g_datatypes = PyMem_Realloc(g_datatypes, (size_t)(n ? n : 1) * sizeof(PyObject *));
    g_extents = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    g_codes = PyMem_Malloc((size_t)(n ? n : 1));
    if (g_datatypes == NULL || g_extents == NULL || g_codes == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++) {
        PyObject *datatype;
        Py_ssize_t extent, code_len;
        const char *code;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "Ons#", &datatype, &extent,
                              &code, &code_len) || extent <= 0 || code_len > 1 ||
                (code_len && format_size(code[0]) != extent)) {
            PyErr_SetString(PyExc_ValueError, "datatypes are (datatype, extent > 0, a "
                            "typecode of that size or \"\")");
            Py_DECREF(seq);
            return -1;
        }
        Py_INCREF(datatype);
        g_datatypes[i] = datatype;
        g_extents[i] = extent;
        g_codes[i] = code_len ? code[0] : 0;
    }
    g_ndatatypes = n;
    Py_DECREF(seq);
    return set_format_datatypes(formats);
}

/* datatypes_setup(datatypes, formats) */
static PyObject *
n_datatypes_setup(PyObject *m, PyObject *args)
{
    PyObject *datatypes, *formats;
    if (!PyArg_ParseTuple(args, "OO:datatypes_setup", &datatypes, &formats) ||
            set_datatypes(datatypes, formats) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The index of a predefined datatype set_datatypes named; -1 for any
 * other object. */
static Py_ssize_t
datatype_index(PyObject *datatype)
{
    Py_ssize_t i;
    for (i = 0; i < g_ndatatypes; i++)
        if (g_datatypes[i] == datatype)
            return i;
    return -1;
}

/* buf (operand_get) as items of `datatype`, None for the buffer's own format's,
 * else a predefined one of the table: its typecode, element type, identity and
 * extent replace the format's.  -1: a miss, nothing held. */
static int
typed_operand(PyObject *buf, PyObject *datatype, int writable, Operand *o)
{
    Py_ssize_t index = datatype == Py_None ? -1 : datatype_index(datatype);
    if ((datatype != Py_None && index < 0) || operand_get(buf, writable, o) < 0)
        return -1;
    if (index >= 0) {
        o->code = g_codes[index];
        o->etype = element_type(o->code, g_extents[index]);
        o->datatype = (int)index;
        o->extent = g_extents[index];
    }
    return 0;
}

/* A message's items as mpi4py unpacks them: buf, [buf, datatype], [buf, count],
 * [buf, pair], [buf, count, datatype], [buf, pair, datatype] or [buf, count,
 * displ, datatype], where a pair is a tuple (count, displ) (with `lists`, a list
 * too: a vector message's counts may be a list); what is not there is None.
 * -1: a list of another length, or a pair of another (a miss). */
static int
unpack(PyObject *msg, int lists, PyObject **buf, PyObject **count, PyObject **displ,
       PyObject **datatype)
{
    PyObject *const *parts;
    Py_ssize_t len;
    *buf = msg;
    *count = *displ = *datatype = Py_None;
    if (!PyList_Check(msg) && !PyTuple_Check(msg))
        return 0;
    parts = PySequence_Fast_ITEMS(msg);
    len = PySequence_Fast_GET_SIZE(msg);
    if (len < 2 || len > 4)
        return -1;
    *buf = parts[0];
    if (len == 2 && datatype_index(parts[1]) >= 0) {
        *datatype = parts[1];
        return 0;
    }
    *count = parts[1];
    if (len > 2)
        *datatype = parts[len - 1];
    if (len == 4)
        *displ = parts[2];
    else if (PyTuple_Check(*count) || (lists && PyList_Check(*count))) {
        if (PySequence_Fast_GET_SIZE(*count) != 2)
            return -1;
        *displ = PySequence_Fast_ITEMS(*count)[1];
        *count = PySequence_Fast_ITEMS(*count)[0];
    }
    return 0;
}

/* An int >= 0, None (-2), or anything else (-1). */
static Py_ssize_t
count_or_none(PyObject *obj)
{
    return obj == Py_None ? -2 : plain_int(obj);
}

int
message_get(PyObject *msg, int writable, int blocks, Operand *o)
{
    PyObject *buf, *count_obj, *displ_obj, *datatype;
    Py_ssize_t extent, start = 0, count, displ, room;
    if (unpack(msg, 1, &buf, &count_obj, &displ_obj, &datatype) < 0)
        return -1;
    if (buf == msg)     /* a bare buffer: all of it, as operand_get takes it */
        return operand_get(buf, writable, o);
    if ((count = count_or_none(count_obj)) == -1 || (displ = count_or_none(displ_obj)) == -1 ||
            typed_operand(buf, datatype, writable, o) < 0)
        return -1;
    extent = o->extent;
    if (displ > 0) {
        if (displ > o->view.len / extent)
            goto miss;
        start = displ * extent;
    }
    room = (o->view.len - start) / extent / blocks;     /* items per block */
    if (count == -2) {
        if ((o->view.len - start) % (extent * blocks))
            goto miss;
        count = room;
    }
    else if (count > room)
        goto miss;
    o->view.buf = (char *)o->view.buf + start;
    o->count = count * blocks;
    o->view.len = o->count * extent;
    return 0;
miss:
    operand_release(o);
    return -1;
}

/* An integer array's n values into spans (as per_rank): array('i'), a numpy
 * array of any integer type, any C-contiguous buffer of an integer format.
 * -1: a miss (not such a buffer, another length, a value < 0). */
static int
per_rank_buffer(PyObject *obj, int n, Span *spans, int displs)
{
    Py_buffer view;
    char code;
    int r, rc = 0;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return -1;
    }
    if (format_code(view.format, &code) < 0 || !IS_INT(element_type(code, view.itemsize)) ||
            view.itemsize != format_size(code) || view.len != (Py_ssize_t)n * view.itemsize)
        rc = -1;
    for (r = 0; rc == 0 && r < n; r++) {
        const char *at = (const char *)view.buf + r * view.itemsize;
        long long value;
        switch (element_type(code, view.itemsize)) {
        case E_I8: value = *(const int8_t *)at; break;
        case E_U8: value = *(const uint8_t *)at; break;
        case E_I16: value = *(const int16_t *)at; break;
        case E_U16: value = *(const uint16_t *)at; break;
        case E_I32: value = *(const int32_t *)at; break;
        case E_U32: value = *(const uint32_t *)at; break;
        case E_I64: value = *(const int64_t *)at; break;
        default:    /* E_U64 */
            value = *(const uint64_t *)at > (uint64_t)LLONG_MAX ? -1
                  : (long long)*(const uint64_t *)at;
        }
        if (value < 0 || value > PY_SSIZE_T_MAX)
            rc = -1;
        else
            *(displs ? &spans[r].at : &spans[r].len) = (Py_ssize_t)value;
    }
    PyBuffer_Release(&view);
    return rc;
}

/* The counts (or, `displs`, the displacements) of a vector message into each
 * span's len (at), in items: an int (every rank's count; the displacements'
 * stride), a list or tuple of an int per rank, or an integer array of them
 * (array('i'), numpy), each >= 0.  None is left to the caller.  -1: a miss. */
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
    if (!PyList_Check(obj) && !PyTuple_Check(obj))
        return per_rank_buffer(obj, n, spans, displs);
    if (PySequence_Fast_GET_SIZE(obj) != n)
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
    PyObject *buf, *counts, *displs, *datatype;
    Py_ssize_t extent, items, packed = 0;
    int r;
    if (unpack(msg, 0, &buf, &counts, &displs, &datatype) < 0)
        return -1;
    if (typed_operand(buf, datatype, writable, op) < 0)
        return -1;
    extent = op->extent;
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

/* copy_runs(data, packed, offsets, lengths, count, extent, first, nbytes, unpack):
 * the packed bytes of `count` items of a derived datatype, item k's blocks
 * lying at first + k * extent + offsets[i] in data, lengths[i] bytes each (the
 * merged blocks of types/derived.py's Layout, int64 arrays): copied from data
 * into packed, or (unpack) the first nbytes of packed into data.  One memcpy
 * per block, where numpy would index every byte.  ValueError, nothing copied,
 * when a block lies outside data or packed is too short. */
static PyObject *
n_copy_runs(PyObject *m, PyObject *args)
{
    PyObject *data_obj, *packed_obj, *offsets_obj, *lengths_obj, *result = NULL;
    Py_ssize_t count, extent, first, nbytes, blocks, i, k, done = 0, low = 0, high = 0;
    int unpack;
    Py_buffer data, packed, offsets, lengths;
    if (!PyArg_ParseTuple(args, "OOOOnnnnp:copy_runs", &data_obj, &packed_obj, &offsets_obj,
                          &lengths_obj, &count, &extent, &first, &nbytes, &unpack))
        return NULL;
    if (PyObject_GetBuffer(data_obj, &data, unpack ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(packed_obj, &packed, unpack ? PyBUF_SIMPLE : PyBUF_WRITABLE) < 0)
        goto data_held;
    if (PyObject_GetBuffer(offsets_obj, &offsets, PyBUF_SIMPLE) < 0)
        goto packed_held;
    if (PyObject_GetBuffer(lengths_obj, &lengths, PyBUF_SIMPLE) < 0)
        goto offsets_held;
    blocks = offsets.len / 8;
    if (lengths.len != offsets.len || offsets.len % 8 || count < 0 || nbytes < 0 ||
            nbytes > packed.len) {
        PyErr_SetString(PyExc_ValueError, "copy_runs(): blocks or sizes do not agree");
        goto all_held;
    }
    for (i = 0; i < blocks; i++) {      /* the bytes every item touches */
        int64_t at = ((int64_t *)offsets.buf)[i], len = ((int64_t *)lengths.buf)[i];
        if (len < 0) {
            PyErr_SetString(PyExc_ValueError, "copy_runs(): a negative block length");
            goto all_held;
        }
        low = i == 0 || at < low ? at : low;
        high = i == 0 || at + len > high ? at + len : high;
    }
    if (count && blocks && (first + low + (extent < 0 ? (count - 1) * extent : 0) < 0 ||
                            first + high + (extent > 0 ? (count - 1) * extent : 0) > data.len)) {
        PyErr_SetString(PyExc_ValueError, "copy_runs(): the items lie outside the buffer");
        goto all_held;
    }
    for (k = 0; k < count && done < nbytes; k++) {
        char *item = (char *)data.buf + first + k * extent;
        for (i = 0; i < blocks && done < nbytes; i++) {
            int64_t len = ((int64_t *)lengths.buf)[i];
            char *at = item + ((int64_t *)offsets.buf)[i];
            if (len > nbytes - done)
                len = nbytes - done;
            if (unpack)
                memcpy(at, (char *)packed.buf + done, (size_t)len);
            else
                memcpy((char *)packed.buf + done, at, (size_t)len);
            done += len;
        }
    }
    result = PyLong_FromSsize_t(done);
all_held:
    PyBuffer_Release(&lengths);
offsets_held:
    PyBuffer_Release(&offsets);
packed_held:
    PyBuffer_Release(&packed);
data_held:
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef buffers_functions[] = {
    {"copy_runs", n_copy_runs, METH_VARARGS,
     "copy_runs(data, packed, offsets, lengths, count, extent, first, nbytes, unpack) -> "
     "bytes copied: pack items of a derived datatype block by block, or unpack them."},
    {"datatypes_setup", (PyCFunction)n_datatypes_setup, METH_VARARGS,
     "datatypes_setup(datatypes, formats): the (datatype, extent, typecode) of the "
     "predefined datatypes a message may name on the C paths, and the (format, "
     "datatype) a buffer's format means."},
    {NULL, NULL, 0, NULL}
};

int
buffers_init(PyObject *module)
{
    return PyModule_AddFunctions(module, buffers_functions);
}
