/*
 * shmrma._native: the C extension module.  Each file of shmrma/csrc/ holds one
 * concept and is named after the Python module it serves (csrc/native.h lists
 * them and declares what they share); each adds its functions, types and
 * constants to the module in its init, and this file makes the module and
 * calls them.  The fast paths (rma.c, passive.c, active.c, winbarrier.c,
 * counters.c, ...) serve shmrma/fastpath.py and the modules it names; the
 * fallback (shmrma/_fallback.py) has the atomic layer only: there every call
 * takes the Python path.
 */
#include "native.h"

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "shmrma._native",
    "Native atomic layer of shmrma: seq_cst atomics on raw addresses, "
    "futex wait cells, memcpy; the RMA fast path (see shmrma/fastpath.py).",
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
            table_init(mod) < 0 || rma_init(mod) < 0 || passive_init(mod) < 0 ||
            active_init(mod) < 0 || handle_init(mod) < 0 ||
            transport_init(mod) < 0 || collectives_init(mod) < 0 || pickles_init(mod) < 0 ||
            nbc_init(mod) < 0 || counters_init(mod) < 0 || winbarrier_init(mod) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    /* the assertions of the synchronization calls (shmrma/assertions.py) */
    if (PyModule_AddIntConstant(mod, "MODE_NOCHECK", MODE_NOCHECK) < 0 ||
            PyModule_AddIntConstant(mod, "MODE_NOPRECEDE", MODE_NOPRECEDE) < 0 ||
            PyModule_AddIntConstant(mod, "MODE_NOSUCCEED", MODE_NOSUCCEED) < 0 ||
            PyModule_AddIntConstant(mod, "ALL_MODES", ALL_MODES) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
