/*
 * shmrma._native: the pickles of objects in messages.
 *
 * Objects travel as pickles (mpi4py's contract: the receiver gets
 * pickle.loads of what the sender's pickle.dumps made).  The objects small
 * messages carry most often (int, float, bool, None, short str and bytes)
 * cost pickle.dumps and pickle.loads more than the whole trip through the
 * ring, so this file writes and reads their pickles itself: byte for byte
 * what pickle.dumps(obj, protocol) makes (protocols 4 and 5, framed the same
 * way), so either end may be the C path or the Python one.  Anything else goes
 * to pickle.  tests/test_pickles.py compares the two on every kind.
 */
#include "types.h"

static PyObject *g_dumps, *g_loads, *g_protocol;
static int g_quick;             /* the protocol is one whose pickles we write */

/* Pickle opcodes (Lib/pickle.py) */
#define PROTO '\x80'
#define FRAME '\x95'
#define STOP '.'
#define NONE 'N'
#define NEWTRUE '\x88'
#define NEWFALSE '\x89'
#define BININT 'J'
#define BININT1 'K'
#define BININT2 'M'
#define BINFLOAT 'G'
#define SHORT_BINBYTES 'C'
#define SHORT_BINUNICODE '\x8c'
#define MEMOIZE '\x94'

#define HEADER 2                /* PROTO and the protocol */
#define FRAME_HEADER 9          /* FRAME and the frame's 8-byte length */
#define FRAME_SIZE_MIN 4        /* shorter bodies are not framed */
#define SHORT_MAX 255

static void
put_le(char *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (char)(v >> (8 * i));
}

static uint64_t
get_le(const char *in, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)(unsigned char)in[i] << (8 * i);
    return v;
}

/* BINFLOAT's operand: the IEEE 754 double, big-endian (PyFloat_Pack8's) */
static void
put_double(char *out, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, 8);
    for (int i = 0; i < 8; i++)
        out[i] = (char)(bits >> (8 * (7 - i)));
}

static double
get_double(const char *in)
{
    uint64_t bits = 0;
    double x;
    for (int i = 0; i < 8; i++)
        bits = bits << 8 | (unsigned char)in[i];
    memcpy(&x, &bits, 8);
    return x;
}

static PyObject *
new_ref(PyObject *obj)
{
    Py_INCREF(obj);
    return obj;
}

/* The body of obj's pickle (its opcodes up to STOP) into body: its length, or
 * -1 (no error set) when obj is not a quick kind. */
static Py_ssize_t
quick_body(PyObject *obj, char *body)
{
    Py_ssize_t n = 0, len;
    const char *data;
    if (obj == Py_None)
        body[n++] = NONE;
    else if (PyBool_Check(obj))
        body[n++] = obj == Py_True ? NEWTRUE : NEWFALSE;
    else if (PyLong_CheckExact(obj)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow || v < INT32_MIN || v > INT32_MAX)
            return -1;
        if (v >= 0 && v <= 0xff) {
            body[n++] = BININT1;
            put_le(body + n, (uint64_t)v, 1);
            n += 1;
        } else if (v >= 0 && v <= 0xffff) {
            body[n++] = BININT2;
            put_le(body + n, (uint64_t)v, 2);
            n += 2;
        } else {
            body[n++] = BININT;
            put_le(body + n, (uint64_t)(uint32_t)(int32_t)v, 4);
            n += 4;
        }
    } else if (PyFloat_CheckExact(obj)) {
        body[n++] = BINFLOAT;
        put_double(body + n, PyFloat_AS_DOUBLE(obj));
        n += 8;
    } else if (PyBytes_CheckExact(obj) || PyUnicode_CheckExact(obj)) {
        if (PyBytes_CheckExact(obj)) {
            data = PyBytes_AS_STRING(obj);
            len = PyBytes_GET_SIZE(obj);
            body[n++] = SHORT_BINBYTES;
        } else {
            /* pickle encodes with "surrogatepass"; strict UTF-8 refuses those
             * strings, which then go to pickle */
            if ((data = PyUnicode_AsUTF8AndSize(obj, &len)) == NULL) {
                PyErr_Clear();
                return -1;
            }
            body[n++] = SHORT_BINUNICODE;
        }
        if (len > SHORT_MAX)
            return -1;
        body[n++] = (char)len;
        memcpy(body + n, data, (size_t)len);
        n += len;
        body[n++] = MEMOIZE;
    } else
        return -1;
    body[n++] = STOP;
    return n;
}

Py_ssize_t
quick_dumps(PyObject *obj, char *out)
{
    Py_ssize_t n;
    if (!g_quick)
        return -1;
    /* write the body where a framed pickle has it, then close up if unframed */
    n = quick_body(obj, out + HEADER + FRAME_HEADER);
    if (n < 0)
        return -1;
    out[0] = PROTO;
    out[1] = (char)PyLong_AsLong(g_protocol);
    if (n < FRAME_SIZE_MIN) {
        memmove(out + HEADER, out + HEADER + FRAME_HEADER, (size_t)n);
        return HEADER + n;
    }
    out[HEADER] = FRAME;
    put_le(out + HEADER + 1, (uint64_t)n, 8);
    return HEADER + FRAME_HEADER + n;
}

/* The object of a quick pickle's body, NULL (no error set) when body is not
 * exactly one we write. */
static PyObject *
quick_object(const char *body, Py_ssize_t n)
{
    Py_ssize_t len;
    PyObject *obj;
    if (n < 2 || body[n - 1] != STOP)
        return NULL;
    n--;
    switch (body[0]) {
    case NONE:
        return n == 1 ? new_ref(Py_None) : NULL;
    case NEWTRUE:
        return n == 1 ? new_ref(Py_True) : NULL;
    case NEWFALSE:
        return n == 1 ? new_ref(Py_False) : NULL;
    case BININT1:
        return n == 2 ? PyLong_FromLong((long)get_le(body + 1, 1)) : NULL;
    case BININT2:
        return n == 3 ? PyLong_FromLong((long)get_le(body + 1, 2)) : NULL;
    case BININT:
        return n == 5 ? PyLong_FromLong((long)(int32_t)(uint32_t)get_le(body + 1, 4)) : NULL;
    case BINFLOAT:
        return n == 9 ? PyFloat_FromDouble(get_double(body + 1)) : NULL;
    case SHORT_BINBYTES:
    case SHORT_BINUNICODE:
        if (n < 3 || (len = (unsigned char)body[1]) != n - 3 || body[n - 1] != MEMOIZE)
            return NULL;
        if (body[0] == SHORT_BINBYTES)
            return PyBytes_FromStringAndSize(body + 2, len);
        obj = PyUnicode_DecodeUTF8(body + 2, len, "surrogatepass");
        if (obj == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            PyErr_Clear();      /* pickle.loads raises it, as it would */
        return obj;
    }
    return NULL;
}

PyObject *
quick_loads(const char *data, Py_ssize_t len)
{
    if (!g_quick || len < HEADER + 2 || data[0] != PROTO || data[1] < 4 || data[1] > 5)
        return NULL;
    data += HEADER;
    len -= HEADER;
    if (data[0] == FRAME) {
        if (len < FRAME_HEADER || get_le(data + 1, 8) != (uint64_t)(len - FRAME_HEADER))
            return NULL;
        data += FRAME_HEADER;
        len -= FRAME_HEADER;
    }
    return quick_object(data, len);
}

PyObject *
pickle_dumps(PyObject *obj)
{
    char out[QUICK_PICKLE_MAX];
    PyObject *call[3], *data;
    Py_ssize_t n = quick_dumps(obj, out);
    if (n >= 0)
        return PyBytes_FromStringAndSize(out, n);
    call[0] = NULL;
    call[1] = obj;
    call[2] = g_protocol;
    /* MPI.pickle's dumps, given the protocol unless that is None (mpi4py's cdumps) */
    data = PyObject_Vectorcall(g_dumps, call + 1, (g_protocol == Py_None ? 1 : 2) |
                               PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    if (data != NULL && !PyBytes_CheckExact(data)) {
        PyErr_Format(PyExc_TypeError, "MPI.pickle's dumps returned %.100s; it must return "
                     "bytes", Py_TYPE(data)->tp_name);
        Py_CLEAR(data);
    }
    return data;
}

PyObject *
pickle_loads(PyObject *data)
{
    if (PyBytes_CheckExact(data)) {
        PyObject *obj = quick_loads(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data));
        if (obj != NULL || PyErr_Occurred())
            return obj;
    }
    return PyObject_CallOneArg(g_loads, data);
}

static PyObject *
n_dumps(PyObject *m, PyObject *obj)
{
    return pickle_dumps(obj);
}

static PyObject *
n_loads(PyObject *m, PyObject *data)
{
    return pickle_loads(data);
}

/* pickle_setup(dumps, loads, protocol, pickles): MPI.pickle's functions and
 * protocol (None: dumps takes the object alone); pickles true when they are
 * pickle's own, whose pickles of the small kinds this file writes at protocols
 * 4 and 5 */
static PyObject *
n_pickle_setup(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    int pickles, overflow = 0;
    long protocol = 0;
    if (check_nargs("pickle_setup", nargs, 4) < 0)
        return NULL;
    if ((pickles = PyObject_IsTrue(args[3])) < 0)
        return NULL;
    if (PyLong_Check(args[2]))
        protocol = PyLong_AsLongAndOverflow(args[2], &overflow);
    Py_XSETREF(g_dumps, new_ref(args[0]));
    Py_XSETREF(g_loads, new_ref(args[1]));
    Py_XSETREF(g_protocol, new_ref(args[2]));
    g_quick = pickles && !overflow && (protocol == 4 || protocol == 5);
    Py_RETURN_NONE;
}

static PyMethodDef pickle_functions[] = {
    {"dumps", (PyCFunction)n_dumps, METH_O,
     "dumps(obj) -> bytes: pickle.dumps(obj, protocol), written here for the quick kinds."},
    {"loads", (PyCFunction)n_loads, METH_O,
     "loads(data) -> obj: pickle.loads(data), read here for the quick kinds."},
    {"pickle_setup", (PyCFunction)(void (*)(void))n_pickle_setup, METH_FASTCALL,
     "pickle_setup(dumps, loads, protocol, pickles): the pickle functions and protocol of messages."},
    {NULL}
};

int
msgpickle_init(PyObject *module)
{
    return PyModule_AddFunctions(module, pickle_functions);
}
