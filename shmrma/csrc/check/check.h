/*
 * csrc/check/: the race checker's C parts (the C side of shmrma/check/), two
 * extension modules apart from shmrma._native, each optional: without them the
 * checker runs its Python and numpy paths.
 *
 *   racecheck.c   shmrma._racecheck: the access log (check/accesses.py), the
 *                 store finder (check/stores.py), the vector clocks
 *                 (check/clock.py) and the call sites of accesses
 *                 (check/report.py)
 *   pagewatch.c   shmrma._pagewatch: the watch on a rank's loads of its own
 *                 window memory (check/loads.py); it stands alone
 *
 * This header is what shmrma._racecheck takes from the rest: the wait cell's
 * wake-up (core/core.h).
 */
#ifndef SHMRMA_CHECK_H
#define SHMRMA_CHECK_H

#include "../core/core.h"

#endif
