/*
 * shmrma._native: the C extension module.  Each file of shmrma/csrc/ holds one
 * concept and sits in the folder of the Python package it serves (native.h
 * lists them; each folder's header declares what its files share); each adds
 * its functions, types and constants to the module in its init, and this file
 * makes the module and calls them.  The fast paths (rma/calls.c, rma/passive.c,
 * rma/active.c, rma/winbarrier.c, rma/counters.c, ...) serve rma/fastpath.py
 * and the modules it names; the fallback (core/_fallback.py) has the atomic
 * layer only: there every call takes the Python path.
 */
#include "native.h"

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "shmrma._native",
    "Native atomic layer of shmrma: seq_cst atomics on raw addresses, "
    "futex wait cells, memcpy; the RMA fast path (see shmrma/rma/fastpath.py).",
    -1,
    NULL,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *mod = PyModule_Create(&native_module);
    if (mod == NULL)
        return NULL;
    if (atomic_init(mod) < 0 || buffers_init(mod) < 0 || op_init(mod) < 0 ||
            fastpath_init(mod) < 0 || rma_calls_init(mod) < 0 || passive_init(mod) < 0 ||
            active_init(mod) < 0 || handle_init(mod) < 0 ||
            communicator_init(mod) < 0 || matching_init(mod) < 0 || transport_init(mod) < 0 ||
            p2p_calls_init(mod) < 0 || area_init(mod) < 0 || reductions_init(mod) < 0 ||
            parts_init(mod) < 0 || msgpickle_init(mod) < 0 || channel_init(mod) < 0 ||
            nonblocking_init(mod) < 0 || counters_init(mod) < 0 || winbarrier_init(mod) < 0 ||
            observe_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
