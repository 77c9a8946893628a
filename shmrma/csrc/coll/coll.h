/*
 * csrc/coll/: collectives in C (the C side of shmrma/coll/).
 *
 *   area.c      the blocking collectives on the communicator's collective
 *               areas (coll/area.py's protocol, for coll/blocking.py)
 *   channel.c   the nonblocking collectives on the communicator's channel
 *               (coll/channel.py's protocol, for coll/nonblocking.py)
 *
 * They stand on the communicators' core (p2p/p2p.h) and share nothing else.
 */
#ifndef SHMRMA_COLL_H
#define SHMRMA_COLL_H

#include "../p2p/p2p.h"

/* --- this folder's parts of the module ---------------------------------------- */

int area_init(PyObject *module);
int channel_init(PyObject *module);

#endif
