/*
 * csrc/p2p/: point-to-point messages in C (the C side of shmrma/p2p/).
 *
 *   transport.c   the point-to-point transport and MPI matching, and the fast
 *                 paths of the point-to-point calls (p2p/transport.py)
 *   request.c     what the requests completed in C share with MPI.Request:
 *                 the Wait/Test helpers (p2p/request.py)
 *
 * This header declares what they share with each other and with the layers
 * above: the requests' helpers and the core of communicators.
 */
#ifndef SHMRMA_P2P_H
#define SHMRMA_P2P_H

#include "../types/types.h"

/* --- requests (request.c) ------------------------------------------------------- */

/* A request's Wait or Test in C takes no status: does the call pass none? */
int no_status(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
/* method(self, *args, **kwnames): the Python path of a request's Wait or Test
 * (at most the status argument). */
PyObject *request_python_path(PyObject *method, PyObject *self, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames);

/* --- communicators (transport.c) ------------------------------------------------ */

/* A collective area as this rank maps it (coll/area.py); base NULL: not yet. */
typedef struct {
    char *base;
    Py_ssize_t slot;            /* data bytes of each slot */
    uint32_t seq;               /* steps taken on it so far (mod 2**32) */
    uint32_t target;            /* the area's counter once every arrival of step seq is in */
    uint32_t clear;             /* every member finished reading the steps up to this one */
} AreaCore;

/* What the fast paths need of a communicator: its context, members and
 * collective areas.  p2p/communicator.py's CommState derives from it. */
typedef struct {
    PyObject_HEAD
    int32_t context;            /* the communicator's context (sub-contexts derive) */
    int32_t size, world_size;
    int32_t world_rank;         /* this process's */
    int32_t *ranks;             /* world rank of each member; NULL until bound */
    int32_t *to_rank;           /* member rank of each world rank, or -1 */
    int freed;
    AreaCore areas[2];          /* the small and the large collective area */
} CommCore;

extern PyTypeObject CommCoreType;

/* --- this folder's parts of the module ---------------------------------------- */

int transport_init(PyObject *module);

#endif
