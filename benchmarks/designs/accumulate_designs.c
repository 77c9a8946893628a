/* Candidate designs for shmrma's accumulate, side by side (issue 3).
 *
 * Plain C, no Python API: benchmarks/bench_accumulate_designs.py compiles it
 * with `cc -O2 -shared -fPIC` into a temporary directory and loads it with
 * ctypes.  Every design computes target[i] += incoming[i] over n elements of
 * float64 (etype 0) or int64 (etype 1):
 *
 *   A  per-element atomics: int64 through __atomic_fetch_add, float64 through
 *      a compare-exchange loop on the element's 64-bit word;
 *   B  one lock per target (what shmrma does): an int32 cell taken by CAS,
 *      spinning ACC_LOCK_SPIN times with the pause instruction, then sleeping
 *      on a futex (with a sleepers count beside the cell, as csrc/core/atomic.c's
 *      wait cells have); held around the whole plain loop;
 *   C  address-striped locks: the target split at multiples of `chunk` bytes
 *      (offset from the window base), each piece under
 *      stripe[(offset / chunk) % N_STRIPES], the same lock as B per stripe;
 *   N  no lock at all: the plain loop (the floor; wrong under concurrency).
 *
 * The plain loop is csrc/types/op.c's EACH: whole blocks of BLOCK = 16 elements,
 * moved through memcpy, which GCC vectorizes at -O2.
 *
 * The timing loops run here, in C, so no interpreter overhead is measured:
 * bench_reps times `reps` back-to-back calls; run_for meets the other process
 * at a barrier in the control segment and then calls for a fixed time.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SC __ATOMIC_SEQ_CST
#define BLOCK 16
#define ACC_LOCK_SPIN 256       /* as csrc/rma/calls.c */
#define N_STRIPES 64
#define LINE 64                 /* every lock on its own cache line */

enum { D_ATOMIC = 0, D_ONE_LOCK = 1, D_STRIPED = 2, D_NONE = 3 };
enum { E_F64 = 0, E_I64 = 1 };

/* Control segment: the one lock on line 0, the stripes on lines 1..64, the
 * start barrier on line 65. */
#define CTL_LOCK 0
#define CTL_STRIPE(k) (LINE * (1 + (k)))
#define CTL_BARRIER (LINE * (1 + N_STRIPES))
#define CTL_BYTES (LINE * (2 + N_STRIPES))

long ctl_bytes(void) { return CTL_BYTES; }
int n_stripes(void) { return N_STRIPES; }

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static inline int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ------------------------------------------------------------ the lock */

/* This process's count of acquires that found the lock held, and of futex
 * sleeps (run_for resets them; lock_stats reads them). */
static int64_t g_contended, g_sleeps;

void
lock_stats(int64_t *out)
{
    out[0] = g_contended;
    out[1] = g_sleeps;
}

/* cell[0]: 0 free, 1 held; cell[1]: processes asleep on cell[0]. */
static inline void
lock_acquire(int32_t *cell)
{
    uint32_t *sleepers = (uint32_t *)(cell + 1);
    int first = 1;
    for (;;) {
        int i;
        for (i = 0; i < ACC_LOCK_SPIN; i++) {
            int32_t expected = 0;
            if (__atomic_load_n(cell, SC) == 0 &&
                    __atomic_compare_exchange_n(cell, &expected, 1, 0, SC, SC))
                return;
            if (first) {
                g_contended++;
                first = 0;
            }
            cpu_relax();
        }
        g_sleeps++;
        __atomic_add_fetch(sleepers, 1, SC);
        if (__atomic_load_n(cell, SC) != 0)
            syscall(SYS_futex, cell, FUTEX_WAIT, 1, NULL, NULL, 0);
        __atomic_sub_fetch(sleepers, 1, SC);
    }
}

static inline void
lock_release(int32_t *cell)
{
    __atomic_store_n(cell, 0, SC);
    if (__atomic_load_n((uint32_t *)(cell + 1), SC) != 0)
        syscall(SYS_futex, cell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ------------------------------------------------------------ the plain loop */

#define EACH_ONE(T, k)                                                       \
    {                                                                        \
        T a, b, r;                                                           \
        memcpy(&a, incoming + (k) * sizeof(T), sizeof(T));                   \
        memcpy(&b, target + (k) * sizeof(T), sizeof(T));                     \
        r = (T)(a + b);                                                      \
        memcpy(target + (k) * sizeof(T), &r, sizeof(T));                     \
    }
#define EACH(T)                                                              \
    for (i = 0; i + BLOCK <= count; i += BLOCK)                              \
        for (j = 0; j < BLOCK; j++)                                          \
            EACH_ONE(T, i + j)                                               \
    for (; i < count; i++)                                                   \
        EACH_ONE(T, i)

static void
plain_f64(const char *restrict incoming, char *restrict target, int64_t count)
{
    int64_t i, j;
    EACH(double)
}

static void
plain_i64(const char *restrict incoming, char *restrict target, int64_t count)
{
    int64_t i, j;
    EACH(uint64_t)              /* unsigned: wraps as numpy's int64 does */
}

static inline void
plain(int etype, const char *incoming, char *target, int64_t count)
{
    if (etype == E_F64)
        plain_f64(incoming, target, count);
    else
        plain_i64(incoming, target, count);
}

/* ------------------------------------------------------------ per-element atomics */

static void
atomic_i64(const char *incoming, char *target, int64_t count)
{
    const int64_t *in = (const int64_t *)incoming;
    int64_t *t = (int64_t *)target;
    int64_t i;
    for (i = 0; i < count; i++)
        __atomic_fetch_add(&t[i], in[i], SC);
}

static void
atomic_f64(const char *incoming, char *target, int64_t count)
{
    const double *in = (const double *)incoming;
    uint64_t *t = (uint64_t *)target;
    int64_t i;
    for (i = 0; i < count; i++) {
        uint64_t old = __atomic_load_n(&t[i], __ATOMIC_RELAXED), new;
        do {
            double v;
            memcpy(&v, &old, sizeof v);
            v += in[i];
            memcpy(&new, &v, sizeof new);
        } while (!__atomic_compare_exchange_n(&t[i], &old, new, 1, SC, __ATOMIC_RELAXED));
    }
}

/* ------------------------------------------------------------ one call */

/* One accumulate-class call under `design`.  ctl: the control segment;
 * base: the window's first byte (stripes are chosen by offset from it, which
 * is the same in every process whatever the mapping address); chunk: the
 * stripe size in bytes, a multiple of 8. */
__attribute__((noinline)) void
accumulate(int design, int etype, const char *incoming, char *target, int64_t count,
           char *ctl, const char *base, int64_t chunk)
{
    switch (design) {
    case D_ATOMIC:
        if (etype == E_F64)
            atomic_f64(incoming, target, count);
        else
            atomic_i64(incoming, target, count);
        break;
    case D_ONE_LOCK: {
        int32_t *cell = (int32_t *)(ctl + CTL_LOCK);
        lock_acquire(cell);
        plain(etype, incoming, target, count);
        lock_release(cell);
        break;
    }
    case D_STRIPED: {
        int64_t off = target - base, end = off + count * 8;
        while (off < end) {
            int64_t stop = (off / chunk + 1) * chunk, n;
            int32_t *cell = (int32_t *)(ctl + CTL_STRIPE((off / chunk) % N_STRIPES));
            if (stop > end)
                stop = end;
            n = (stop - off) / 8;
            lock_acquire(cell);
            plain(etype, incoming, (char *)base + off, n);
            lock_release(cell);
            incoming += n * 8;
            off = stop;
        }
        break;
    }
    case D_NONE:
        plain(etype, incoming, target, count);
        break;
    }
}

/* ------------------------------------------------------------ timing loops */

/* Nanoseconds taken by `reps` back-to-back calls. */
int64_t
bench_reps(int design, int etype, const char *incoming, char *target, int64_t count,
           int64_t reps, char *ctl, const char *base, int64_t chunk)
{
    int64_t r, t0 = now_ns();
    for (r = 0; r < reps; r++)
        accumulate(design, etype, incoming, target, count, ctl, base, chunk);
    return now_ns() - t0;
}

/* Wait until `nproc` processes have arrived at the control segment's barrier
 * (Python zeroes it before forking).  -1 when they have not within
 * BARRIER_TIMEOUT_NS (the other process died). */
#define BARRIER_TIMEOUT_NS 20000000000LL

static int
barrier(char *ctl, int nproc)
{
    int32_t *c = (int32_t *)(ctl + CTL_BARRIER);
    long spins = 0;
    int64_t t0 = now_ns();
    __atomic_add_fetch(c, 1, SC);
    while (__atomic_load_n(c, SC) < nproc) {
        cpu_relax();
        if (++spins % 1024 == 0) {
            sched_yield();
            if (now_ns() - t0 > BARRIER_TIMEOUT_NS)
                return -1;
        }
    }
    return 0;
}

/* Meet the other processes at the barrier, then call for `duration_ns`
 * (checking the clock every `check_every` calls).  Returns the number of
 * calls (-1: nobody came to the barrier); *elapsed_ns gets their time. */
int64_t
run_for(int design, int etype, const char *incoming, char *target, int64_t count,
        int64_t duration_ns, int64_t check_every, char *ctl, const char *base,
        int64_t chunk, int nproc, int64_t *elapsed_ns)
{
    int64_t calls = 0, t0, t;
    g_contended = g_sleeps = 0;
    if (barrier(ctl, nproc) < 0)
        return -1;
    t0 = now_ns();
    do {
        int64_t k;
        for (k = 0; k < check_every; k++)
            accumulate(design, etype, incoming, target, count, ctl, base, chunk);
        calls += check_every;
        t = now_ns();
    } while (t - t0 < duration_ns);
    *elapsed_ns = t - t0;
    return calls;
}
