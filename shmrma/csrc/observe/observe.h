/*
 * csrc/observe/: the fast path of --trace and --profile (shmrma/observe/).
 *
 *   observed.c   observe/calls.py, observe/recorder.py   Observed, the wrapper
 *                of a public MPI method that times each outermost call, and
 *                the recorder's core: the per-call-site sums and the trace's
 *                records, written where the rank maps its events file.
 *
 * The time a call waits comes from the wait policy (core/atomic.c counts it
 * in t_wait_began and t_waited_ns while g_observe_waits is set).
 */
#ifndef SHMRMA_OBSERVE_H
#define SHMRMA_OBSERVE_H

#include "../core/core.h"
#include "../rma/rma.h"

int observe_init(PyObject *module);

#endif
