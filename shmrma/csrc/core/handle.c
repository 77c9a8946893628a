/*
 * The C bases of Python classes: HandleBase under the handle classes
 * (shmrma/core/handle.py), BufferExporter under Win (shmrma/rma/window.py) and
 * EmptyBufferInt under the buffer constants (shmrma/core/constants.py).
 */
#include "core.h"

static PyObject *g_no_args;    /* () */

/* object.__new__(type), the arguments left out: the __new__ of the C bases of
 * Python classes below (windows, handles). Unlike PyType_GenericNew, it prepares
 * the instance's attributes as for any Python class (CPython 3.11's inline
 * values), keeping attribute access and creation as fast as theirs. */
static PyObject *
plain_object_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    return PyBaseObject_Type.tp_new(type, g_no_args, NULL);
}

/* --- the buffer protocol of windows --- */

/* A base class whose instances export the buffer of their tomemory(): Win
 * derives from it, so memoryview(win) and numpy.frombuffer(win) work before
 * Python 3.12's __buffer__.  The view holds the memory object, not the
 * window. */
static int
exporter_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    int rc;
    PyObject *memory = PyObject_CallMethod(self, "tomemory", NULL);
    if (memory == NULL)
        return -1;
    rc = PyObject_GetBuffer(memory, view, flags);
    Py_DECREF(memory);
    return rc;
}

static PyBufferProcs exporter_as_buffer = {exporter_getbuffer, NULL};

static PyTypeObject BufferExporterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.BufferExporter",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Base class exporting the buffer of self.tomemory().",
    .tp_as_buffer = &exporter_as_buffer,
    .tp_new = plain_object_new,
};

/* --- the buffer constants --- */

/* The base of MPI.BOTTOM, IN_PLACE and BUFFER_AUTOMATIC (shmrma/core/constants.py):
 * an int whose buffer is empty and of no object, as mpi4py's constants export
 * theirs (memoryview(MPI.BOTTOM).nbytes == 0, .obj is None). tp_base (int) is
 * set when the module is made. */
static int
empty_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, NULL, NULL, 0, 0, flags);
}

static PyBufferProcs empty_as_buffer = {empty_getbuffer, NULL};

static PyTypeObject EmptyBufferIntType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.EmptyBufferInt",
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "An int exporting an empty buffer of no object (mpi4py's BOTTOM...).",
    .tp_as_buffer = &empty_as_buffer,
};

/* --- the construction protocol of handle classes --- */

/* The base of mpi4py-style handle classes (Request, Info, Datatype...): its
 * __new__ takes and ignores the arguments of any constructor, as mpi4py's
 * classes' __cinit__ take the handle to copy, so a subclass's
 * ``def __new__(cls, request=None): return MPI.Request.__new__(cls, request)``
 * works; the subclass's __init__ (inherited) copies the handle.  Being C,
 * this __new__ costs nothing on the runtime's own constructions (a request
 * per Isend/Irecv), which a Python __new__ would slow by ~60 ns. */
static PyTypeObject HandleBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.HandleBase",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Base class whose __new__ ignores its arguments (mpi4py's __cinit__ "
              "protocol; __init__ takes the handle to copy).",
    .tp_new = plain_object_new,
};

int
handle_init(PyObject *module)
{
    /* PyModule_AddType (3.9+) readies the type and adds it under its short name */
    if ((g_no_args = PyTuple_New(0)) == NULL)
        return -1;
    EmptyBufferIntType.tp_base = &PyLong_Type;
    if (PyModule_AddType(module, &BufferExporterType) < 0 ||
            PyModule_AddType(module, &HandleBaseType) < 0 ||
            PyModule_AddType(module, &EmptyBufferIntType) < 0)
        return -1;
    return 0;
}
