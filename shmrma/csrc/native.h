/*
 * shmrma's C sources: the table of contents.
 *
 * The C sources mirror the Python packages of shmrma/ (the layers, bottom up:
 * core < types < p2p < coll < comm < rma < io < check, observe): each C file serves a
 * Python module, its twin, and lies in the folder of the twin's package.  A
 * file is named after the Python module it serves, or, where that module's C
 * side holds more than one concept, after the concept it holds (no C file
 * passes 1000 lines); each opens with a comment on its protocol or role.  Each
 * folder has one header, which lists its files and declares what they share.
 * comm/, io/ and run/ have no C part.
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
 *   p2p/transport.c      p2p/transport.py    the Transport, this process's
 *                                            point-to-point engine, and what
 *                                            it shares with Python
 *   p2p/rings.c          p2p/transport.py    the rings: records from rank to
 *                                            rank, queued sends, staging
 *                                            rings, direct reads
 *   p2p/matching.c       p2p/transport.py    MPI matching: posted receives,
 *                                            unexpected messages
 *   p2p/communicator.c   p2p/communicator.py CommCore, the core of
 *                                            communicators
 *   p2p/calls.c          p2p/transport.py    the point-to-point fast paths
 *                                            (Send, Recv... of comm/comm.py)
 *   p2p/request.c        p2p/request.py      the Wait/Test helpers of the
 *                                            requests completed in C
 *
 *   coll/coll.h          collectives
 *   coll/area.c          coll/area.py        the collective areas' protocol,
 *                                            Bcast, the objects' collectives
 *   coll/reductions.c    coll/blocking.py    Allreduce, Reduce, Scan... on
 *                                            the collective areas
 *   coll/parts.c         coll/blocking.py    Gather, Scatter, Alltoall... on
 *                                            the collective areas
 *   coll/channel.c       coll/channel.py     the channel of the nonblocking
 *                                            collectives, ChannelCore
 *   coll/nonblocking.c   coll/nonblocking.py the nonblocking collectives
 *                                            started in C, NbcOp
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
 *   observe/observe.h    --trace and --profile
 *   observe/observed.c   observe/calls.py    Observed, the wrapper of an MPI
 *                        observe/recorder.py call, and the recorder's core
 *
 * The race checker's two modules, apart (csrc/check/check.h):
 *
 *   check/racecheck.c    check/accesses.py   shmrma._racecheck: the module,
 *                                            the access log, call sites
 *   check/stores.c       check/stores.py     the store finder (in _racecheck)
 *   check/clock.c        check/clock.py      the vector clocks (in _racecheck)
 *   check/pagewatch.c    check/loads.py      shmrma._pagewatch: the load watch
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
#include "observe/observe.h"

#endif
