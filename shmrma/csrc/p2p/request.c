/*
 * What the requests completed in C (rma/counters.c, rma/winbarrier.c,
 * coll/nonblocking.c) share with shmrma/p2p/request.py: Wait and Test take the C
 * path only without a status, and hand every other call to the Python methods.
 */
#include "p2p.h"

int
no_status(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) &&
        (nargs == 0 || args[0] == Py_None);
}

PyObject *
request_python_path(PyObject *method, PyObject *self, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *call[3];
    Py_ssize_t i, total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (total > 1) {
        PyErr_SetString(PyExc_TypeError, "Wait()/Test() take at most one argument (status)");
        return NULL;
    }
    call[0] = NULL;
    call[1] = self;
    for (i = 0; i < total; i++)
        call[2 + i] = args[i];
    return PyObject_Vectorcall(method, call + 1, (1 + nargs) | PY_VECTORCALL_ARGUMENTS_OFFSET,
                               kwnames);
}
