/*
 * shmrma's C sources: the table of contents.
 *
 * The C sources mirror the Python packages of shmrma/ (the layers, bottom up:
 * core < types < p2p < coll < comm < rma < io < check): each C file serves one
 * Python module, its twin, in the folder of the twin's package, and each folder
 * has one header, which lists its files and declares what they share.  comm/,
 * io/ and launch/ have no C part.
 *
 * shmrma._native, one module built from these files:
 *
 *   native.c             makes the module and calls every file's init
 *                        (core/atomic.py and the modules that take fast paths
 *                        pick it; without it shmrma runs on core/_fallback.py)
 *
 *   core/core.h          atomics, wait cells, the wait policy, the MPI lock
 *   core/atomic.c        core/atomic.py      atomics, wait cells, the wait
 *                                            policy, the rank's MPI lock,
 *                                            argument parsing
 *   core/handle.c        core/handle.py      the C bases of handle classes,
 *                                            windows and buffer constants
 *
 *   types/types.h        buffer operands, reduction kernels, pickles
 *   types/buffers.c      types/buffers.py    buffer operands, vector messages
 *   types/op.c           types/op.py         the predefined ops' kernels
 *   types/msgpickle.c    types/msgpickle.py  the pickles of objects in messages
 *
 *   p2p/p2p.h            point-to-point messages, communicators, requests
 *   p2p/transport.c      p2p/transport.py    the transport and MPI matching,
 *                                            the point-to-point fast paths,
 *                                            the core of communicators
 *   p2p/request.c        p2p/request.py      the Wait/Test helpers of the
 *                                            requests completed in C
 *
 *   coll/coll.h          collectives
 *   coll/area.c          coll/area.py        the blocking collectives on the
 *                                            collective areas
 *   coll/channel.c       coll/channel.py     the nonblocking collectives on
 *                                            the channel
 *
 *   rma/rma.h            one-sided communication: the window table and the
 *                        synchronization objects
 *   rma/fastpath.c       rma/fastpath.py     the window table
 *   rma/calls.c          rma/calls.py        Put, Get, Accumulate..., Flush
 *   rma/passive.c        rma/passive.py      Lock, Unlock, Lock_all, Unlock_all
 *   rma/active.c         rma/active.py       Start, Complete, Post, Wait, Test
 *   rma/winbarrier.c     rma/winbarrier.py   Fence, Barrier, Ibarrier
 *   rma/counters.c       rma/counters.py     the synchronization counters'
 *                                            requests
 *
 * The race checker's two modules, apart (csrc/check/check.h):
 *
 *   check/racecheck.c    check/accesses.py, check/stores.py, check/clock.py:
 *                        shmrma._racecheck
 *   check/pagewatch.c    check/loads.py: shmrma._pagewatch
 *
 * A file includes the header of its folder, which includes the headers of the
 * layers below; this one includes them all, for native.c.  A helper of a hot
 * path that several files share is static inline in a header, so the compiler
 * inlines it in each file as it did when they were one.
 */
#ifndef SHMRMA_NATIVE_H
#define SHMRMA_NATIVE_H

#include "core/core.h"
#include "types/types.h"
#include "p2p/p2p.h"
#include "coll/coll.h"
#include "rma/rma.h"

#endif
