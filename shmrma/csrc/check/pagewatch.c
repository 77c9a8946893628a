/* The race checker's watch on a rank's loads and stores of window memory
 * (shmrma/check/loads.py).
 *
 * Plain Python loads and stores cannot be intercepted, so the checker takes the
 * pages of a rank's window memory away from it (mprotect PROT_NONE) after each
 * of its synchronization calls; the first access to each page faults, and the
 * handler below notes the faulting address, whether it wrote (x86-64), and the
 * innermost Python frames (code object and instruction) of the thread, gives
 * the page back (read-only after a load, so that the first store faults too)
 * and lets the access go on.  At the rank's next synchronization call the
 * checker turns the notes into load and store records (check/loads.py,
 * check/stores.py) and takes the pages away again.  So a load is seen when it is
 * the first access to its page in an epoch, and a store when it is the first
 * store; their addresses are exact, and a store is seen whatever value it wrote.
 *
 * Only memory other ranks reach through their own mappings is watched (a
 * mapping's protection is its process's): a page taken away here does not
 * change how other ranks' RMA reach it.  Faults at any other address go to
 * the handler that was there before (Python's faulthandler, or the default).
 *
 * The frames are read from the interpreter's own structures (as faulthandler
 * does), not through calls that may allocate: a fault can interrupt code that
 * holds no GIL (a numpy loop).  Python 3.9 to 3.13; elsewhere no line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
#undef Py_BUILD_CORE
#define WITH_FRAMES 1
#elif PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>    /* Python 3.9, 3.10: the thread's PyFrameObject chain */
#define WITH_FRAME_OBJECTS 1
#endif
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#endif

#define MAX_REGIONS 64
#define MAX_FAULTS 4096
/* A page fault notes the 16 innermost frames: an RMA call that faulted filling a
 * buffer in window memory runs under several of shmrma's own, and its line is the
 * program's beyond them. The word watch keeps to the 8 innermost (WORD_FRAMES): an
 * access counts only where one of them names the buffer (check/origin.py), and the
 * calls filling it, from the program's line further out, must not. */
#define FRAMES 16
#define WORD_FRAMES 8

struct region {
    uintptr_t low, high;    /* whole pages; high == 0: a free slot */
    int armed;              /* its pages are taken away (some may be back) */
    long faults;            /* every fault since the last take, noted or not */
};

struct fault {
    uintptr_t address;
    int region, write, frames;
    long thread;                /* the faulting thread's id (gettid) */
    PyObject *code[FRAMES];     /* strong references, taken in the handler */
    int lasti[FRAMES];
};

static struct region regions[MAX_REGIONS];
static struct fault faults[MAX_FAULTS];
static volatile sig_atomic_t fault_count, lost, quiet;

/* Stepping (set_stepping), for a rank whose threads take part: a page given back
 * at a fault is taken away again right after the faulting instruction (the trap
 * flag makes the processor stop there with a SIGTRAP), so that every thread's
 * first access to it is seen, not only the first thread's; each thread's first
 * load and first store to a page since the last take are noted. At most
 * STEP_BUDGET steps between two arms, then the pages stay back as without it. */
#define STEP_BUDGET 4096
static volatile sig_atomic_t stepping, steps;
/* the pages the thread's current instruction was given (two: it may straddle) */
static __thread uintptr_t step_pages[2] __attribute__((tls_model("initial-exec")));
static struct sigaction previous;
static int installed;
static uintptr_t page_size;

static int region_of(uintptr_t address)
{
    for (int i = 0; i < MAX_REGIONS; i++)
        if (regions[i].high && address >= regions[i].low && address < regions[i].high)
            return i;
    return -1;
}

#if defined(__x86_64__)
#define TELLS_STORES 1      /* the fault's error code says whether it wrote */
static int wrote(void *context)
{
    return (((ucontext_t *)context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
}
#else
#define TELLS_STORES 0
static int wrote(void *context)
{
    (void)context;
    return 0;       /* not known: taken as a load */
}
#endif

static void note_frames(struct fault *f, int limit)
{
    f->frames = 0;
#ifdef WITH_FRAMES
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (ts == NULL)
        return;
#if PY_VERSION_HEX >= 0x030D0000
    _PyInterpreterFrame *frame = ts->current_frame;
#else
    _PyInterpreterFrame *frame = ts->cframe ? ts->cframe->current_frame : NULL;
#endif
    for (; frame != NULL && f->frames < limit; frame = frame->previous) {
        if (_PyFrame_IsIncomplete(frame))
            continue;
#if PY_VERSION_HEX >= 0x030D0000
        PyObject *code = frame->f_executable;
        if (code == NULL || !PyCode_Check(code))
            continue;
#else
        PyObject *code = (PyObject *)frame->f_code;
#endif
        Py_INCREF(code);
        f->code[f->frames] = code;
        f->lasti[f->frames++] = _PyInterpreterFrame_LASTI(frame);
    }
#elif defined(WITH_FRAME_OBJECTS)
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (ts == NULL)
        return;
    for (PyFrameObject *frame = ts->frame; frame != NULL && f->frames < limit;
         frame = frame->f_back) {
        PyObject *code = (PyObject *)frame->f_code;
        if (code == NULL)
            continue;
        Py_INCREF(code);
        f->code[f->frames] = code;
        /* in code units, as _PyInterpreterFrame_LASTI: 3.9 counts bytes, 3.10 units */
#if PY_VERSION_HEX >= 0x030A0000
        f->lasti[f->frames++] = frame->f_lasti;
#else
        f->lasti[f->frames++] = frame->f_lasti / (int)sizeof(_Py_CODEUNIT);
#endif
    }
#else
    (void)f;
#endif
}

static void note(uintptr_t address, int region, int write, long thread);
static int noted(uintptr_t page, int write, long thread);
static int step(uintptr_t page, void *context);
static int stepped(void *context);
static int install_trap(void);

static void on_fault(int signum, siginfo_t *info, void *context)
{
    uintptr_t address = (uintptr_t)info->si_addr;
    int region = info->si_code == SEGV_ACCERR ? region_of(address) : -1;
    if (region < 0 || !regions[region].armed) {
        /* not ours: the handler before takes it when the access faults again */
        sigaction(SIGSEGV, &previous, NULL);
        return;
    }
    uintptr_t page = address & ~(page_size - 1);
    int write = wrote(context);
    long thread = (long)syscall(SYS_gettid);      /* async-signal-safe */
    regions[region].faults++;
    if (stepping && !quiet && steps < STEP_BUDGET && step(page, context)) {
        if (!noted(page, write, thread))
            note(address, region, write, thread);
        return;
    }
    /* a page comes back read-only after a load, so its first store faults too, where
     * the processor tells a store from a load (quiet: the runtime's own access, all
     * back); elsewhere the page comes back whole, and only loads are seen */
    int both = quiet || write || !TELLS_STORES;
    mprotect((void *)page, page_size, both ? PROT_READ | PROT_WRITE : PROT_READ);
    if (!quiet)
        note(address, region, write, thread);
    (void)signum;
}

static void note(uintptr_t address, int region, int write, long thread)
{
    if (fault_count >= MAX_FAULTS) {
        lost++;
        return;
    }
    struct fault *f = &faults[fault_count];
    f->address = address;
    f->region = region;
    f->write = write;
    f->thread = thread;
    note_frames(f, FRAMES);
    fault_count++;
}

/* Whether the thread's load (or store) of the page is noted since the last take. */
static int noted(uintptr_t page, int write, long thread)
{
    for (int i = 0; i < fault_count; i++)
        if ((faults[i].address & ~(page_size - 1)) == page && faults[i].write == write
                && faults[i].thread == thread)
            return 1;
    return 0;
}

/* Give the page back for the faulting instruction only (x86-64's trap flag): 1, or
 * 0 where it cannot (the page then comes back as without stepping). */
static int step(uintptr_t page, void *context)
{
#if defined(__x86_64__)
    int at = step_pages[0] ? (step_pages[1] ? -1 : 1) : 0;
    if (at < 0 || mprotect((void *)page, page_size, PROT_READ | PROT_WRITE) < 0)
        return 0;
    step_pages[at] = page;
    steps++;
    ((ucontext_t *)context)->uc_mcontext.gregs[REG_EFL] |= 0x100;     /* TF */
    return 1;
#else
    (void)page;
    (void)context;
    return 0;
#endif
}

/* At the trap after a stepped instruction: its pages taken away again (where their
 * region still is), the trap flag cleared. Whether there was such a step. */
static int stepped(void *context)
{
#if defined(__x86_64__)
    if (!step_pages[0])
        return 0;
    for (int k = 0; k < 2; k++) {
        uintptr_t page = step_pages[k];
        step_pages[k] = 0;
        int region = page ? region_of(page) : -1;
        if (region >= 0 && regions[region].armed)
            mprotect((void *)page, page_size, PROT_NONE);
    }
    ((ucontext_t *)context)->uc_mcontext.gregs[REG_EFL] &= ~0x100;
    return 1;
#else
    (void)context;
    return 0;
#endif
}

/* Make `handler` signum's handler, the one before kept in *before: 0, or -1. */
static int take_signal(int signum, void (*handler)(int, siginfo_t *, void *),
                       struct sigaction *before)
{
    struct sigaction mine;
    memset(&mine, 0, sizeof(mine));
    mine.sa_sigaction = handler;
    mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&mine.sa_mask);
    return sigaction(signum, &mine, before);
}

static int install(void)
{
    struct sigaction now;
    if (sigaction(SIGSEGV, NULL, &now) < 0)
        return -1;
    if (installed && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fault)
        return 0;
    if (take_signal(SIGSEGV, on_fault, &previous) < 0)
        return -1;
    installed = 1;
    return 0;
}

static int protect(struct region *r, int prot)
{
    return mprotect((void *)r->low, r->high - r->low, prot);
}

/* watch(address, nbytes): watch the whole pages of the range (the first load and,
 * on x86-64, the first store to each page); its slot, -1 when no whole page lies
 * inside it, -2 when every slot is taken. */
static PyObject *watch(PyObject *self, PyObject *args)
{
    Py_ssize_t address, nbytes;
    if (!PyArg_ParseTuple(args, "nn", &address, &nbytes))
        return NULL;
    if (!page_size)
        page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t low = ((uintptr_t)address + page_size - 1) & ~(page_size - 1);
    uintptr_t high = ((uintptr_t)address + (uintptr_t)nbytes) & ~(page_size - 1);
    if (nbytes <= 0 || high <= low)
        return PyLong_FromLong(-1);
    if (install() < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    for (int i = 0; i < MAX_REGIONS; i++)
        if (!regions[i].high) {
            regions[i].low = low;
            regions[i].armed = 0;
            regions[i].faults = 0;
            regions[i].high = high;
            return PyLong_FromLong(i);
        }
    return PyLong_FromLong(-2);
}

static struct region *region_at(int i)
{
    if (i < 0 || i >= MAX_REGIONS || !regions[i].high) {
        PyErr_Format(PyExc_ValueError, "no watched region %d", i);
        return NULL;
    }
    return &regions[i];
}

static struct region *slot(PyObject *args)
{
    int i;
    return PyArg_ParseTuple(args, "i", &i) ? region_at(i) : NULL;
}

/* Give every page of the region back: 0, else -1 with errno. */
static int give_back(struct region *r)
{
    if (r->armed && protect(r, PROT_READ | PROT_WRITE) < 0)
        return -1;
    r->armed = 0;
    return 0;
}

/* arm(slot): take the region's pages away (again), so the next access to each
 * faults. */
static PyObject *arm(PyObject *self, PyObject *args)
{
    struct region *r = slot(args);
    if (r == NULL)
        return NULL;
    if (install() < 0 || protect(r, PROT_NONE) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    r->armed = 1;
    steps = 0;
    Py_RETURN_NONE;
}

/* arm_pages(slot, flags): take away the region's pages whose flag (a byte each,
 * bytes or bytearray) is set; the others stay. */
static PyObject *arm_pages(PyObject *self, PyObject *args)
{
    int i;
    Py_buffer flags;
    if (!PyArg_ParseTuple(args, "iy*", &i, &flags))
        return NULL;
    struct region *r = region_at(i);
    if (r == NULL) {
        PyBuffer_Release(&flags);
        return NULL;
    }
    const char *flag = flags.buf;
    Py_ssize_t pages = (Py_ssize_t)((r->high - r->low) / page_size);
    if (flags.len < pages)
        pages = flags.len;
    int failed = install() < 0;
    for (Py_ssize_t p = 0; p < pages && !failed; p++) {
        if (!flag[p])
            continue;
        Py_ssize_t end = p;
        while (end < pages && flag[end])
            end++;
        failed = mprotect((void *)(r->low + (uintptr_t)p * page_size),
                          (size_t)(end - p) * page_size, PROT_NONE) < 0;
        r->armed = 1;
        p = end;
    }
    PyBuffer_Release(&flags);
    if (failed)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

/* span(slot): (low, high), the addresses of the region's whole pages. */
static PyObject *span(PyObject *self, PyObject *args)
{
    struct region *r = slot(args);
    if (r == NULL)
        return NULL;
    return Py_BuildValue("(nn)", (Py_ssize_t)r->low, (Py_ssize_t)r->high);
}

/* disarm(slot): give every page of the region back. */
static PyObject *disarm(PyObject *self, PyObject *args)
{
    struct region *r = slot(args);
    if (r == NULL)
        return NULL;
    if (give_back(r) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

/* unwatch(slot): give the pages back and free the slot (before the memory goes). */
static PyObject *unwatch(PyObject *self, PyObject *args)
{
    struct region *r = slot(args);
    if (r == NULL)
        return NULL;
    if (give_back(r) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    r->high = 0;
    Py_RETURN_NONE;
}

/* set_quiet(flag): while set, faults give their page back unnoted (the runtime's
 * own accesses inside an RMA call); returns the flag before. */
static PyObject *set_quiet(PyObject *self, PyObject *args)
{
    int flag;
    if (!PyArg_ParseTuple(args, "p", &flag))
        return NULL;
    int before = quiet;
    quiet = flag;
    return PyBool_FromLong(before);
}

static PyObject *frames_of(struct fault *f)
{
    PyObject *list = PyList_New(0);
    for (int k = 0; list != NULL && k < f->frames; k++) {
        PyCodeObject *code = (PyCodeObject *)f->code[k];
        PyObject *item = Py_BuildValue("(Oi)", code->co_filename,
                                       PyCode_Addr2Line(code, f->lasti[k] * 2));
        if (item == NULL || PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

/* take(slot): the accesses noted in the region since the last take, as a list of
 * (address, [(file, line), ...] innermost first, wrote, thread id); the count of accesses
 * that found the notes full, and of the region's faults (noted or not), since the
 * last take. */
/* noted_for(thread): whether an access of the thread (its id, gettid) is noted and
 * not taken yet: its thread's clock is still needed to record it (check/threads.py
 * gives an ended thread's clock to another only when none is). */
static PyObject *noted_for(PyObject *self, PyObject *args)
{
    long thread;
    if (!PyArg_ParseTuple(args, "l", &thread))
        return NULL;
    int count = fault_count;
    for (int i = 0; i < count; i++)
        if (faults[i].thread == thread)
            Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* set_stepping(flag): step from now on (see stepping above) or not; whether it
 * can (x86-64, the trap handler installed). */
static PyObject *set_stepping(PyObject *self, PyObject *args)
{
    int flag;
    if (!PyArg_ParseTuple(args, "p", &flag))
        return NULL;
#if defined(__x86_64__)
    if (flag && install_trap() < 0)
        flag = 0;
    stepping = flag;
    return PyBool_FromLong(flag);
#else
    stepping = 0;
    return PyBool_FromLong(0);
#endif
}

static PyObject *take(PyObject *self, PyObject *args)
{
    struct region *r = slot(args);
    if (r == NULL)
        return NULL;
    int region = (int)(r - regions);
    PyObject *found = PyList_New(0);
    int count = fault_count, kept = 0;
    for (int i = 0; i < count; i++) {
        struct fault *f = &faults[i];
        if (f->region != region) {
            faults[kept++] = *f;
            continue;
        }
        if (found != NULL) {
            PyObject *frames = frames_of(f);
            PyObject *item = frames ? Py_BuildValue("(nNil)", (Py_ssize_t)f->address, frames,
                                                    f->write, f->thread)
                                    : NULL;
            if (item == NULL || PyList_Append(found, item) < 0)
                Py_CLEAR(found);
            Py_XDECREF(item);
        }
        for (int k = 0; k < f->frames; k++)
            Py_DECREF(f->code[k]);
    }
    fault_count = kept;
    long missed = lost, all = r->faults;
    lost = 0;
    r->faults = 0;
    if (found == NULL)
        return NULL;
    return Py_BuildValue("(Nll)", found, missed, all);
}

/* faults(slot): the region's faults since the last take, noted or not (none: every
 * page it took away is still away, so no access reached it). */
static PyObject *faults_of(PyObject *self, PyObject *args)
{
    struct region *r = slot(args);
    return r == NULL ? NULL : PyLong_FromLong(r->faults);
}

/* --- the word watch: hardware watchpoints on a call's result buffer -----------------
 *
 * An RMA call's result buffer is filled by the call until it completes at the
 * origin: a load or a store of it in between is a race, and so is another call
 * filling it (check/origin.py).  Those buffers are small and share their pages
 * with the interpreter's own objects, so a page cannot be taken away from them:
 * the watch asks the processor instead.  A perf breakpoint event
 * (perf_event_open, PERF_TYPE_BREAKPOINT) on each aligned word of the buffer's
 * start, at most HW_SLOTS of them per process (x86-64 has four debug registers
 * per thread), sends the thread a SIGTRAP (sigtrap) right after the first
 * instruction that loads or stores the word; the handler notes the frames (the
 * checker tells the program's accesses from the implementation's by them) and
 * disables the event.  The events are opened once and moved from word to word
 * (PERF_EVENT_IOC_MODIFY_ATTRIBUTES): about 2 us a watch, where opening one
 * costs 12.  Only the thread that made the first watch is watched.  Where perf
 * events are refused (perf_event_paranoid above 2, seccomp) hw_watch answers no
 * slot and the buffer goes unwatched. */

#define HW_SLOTS 4
#define HW_MAGIC 0x5348574bUL     /* in sig_data, above the slot's index */

struct hw_slot {
    int fd;                 /* the event, opened at the slot's first use; -1 before */
    int busy;               /* watching a word now */
    int len, hit;
    struct fault note;      /* the word's address; once hit, the access's frames */
};

static struct hw_slot hw[HW_SLOTS] = {{-1}, {-1}, {-1}, {-1}};
/* where an idle slot's event points, enabled: a word nothing ever loads or stores,
 * so moving the event (one ioctl) is all a watch or its end costs */
static volatile uint64_t idle_word;
static int hw_refused;          /* perf_event_open failed here once: no word watch */
static struct sigaction previous_trap;
static int trap_installed;

/* the siginfo of a TRAP_PERF SIGTRAP, as the kernel lays it out (glibc 2.36 names
 * no field of it): the address, then the event's sig_data */
struct perf_trap {
    int signo, errno_, code, pad;
    void *address;
    unsigned long data;
};

static void on_trap(int signum, siginfo_t *info, void *context)
{
    const struct perf_trap *trap = (const struct perf_trap *)info;
    unsigned long index = trap->data & 0xff;
    if (info->si_code != 6 /* TRAP_PERF */ && stepped(context))
        return;
    if (info->si_code != 6 /* TRAP_PERF */ || (trap->data >> 8) != HW_MAGIC ||
            index >= HW_SLOTS || hw[index].fd < 0) {
        /* not ours: the handler before takes it (a debugger's, or the default) */
        sigaction(SIGTRAP, &previous_trap, NULL);
        raise(signum);
        return;
    }
    struct hw_slot *slot = &hw[index];
    ioctl(slot->fd, PERF_EVENT_IOC_DISABLE, 0);
    if (!slot->busy || slot->hit)
        return;
    slot->hit = 1;
    note_frames(&slot->note, WORD_FRAMES);
}

static int install_trap(void)
{
    if (trap_installed)
        return 0;
    if (take_signal(SIGTRAP, on_trap, &previous_trap) < 0)
        return -1;
    trap_installed = 1;
    return 0;
}

#if defined(__linux__) && defined(__x86_64__)
/* Point slot i's event at [at, at + len), enabled (`enable`: it may have been
 * disabled by a hit): 0, or -1. */
static int hw_point(int i, uintptr_t at, int len, int enable)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_BREAKPOINT;
    attr.size = sizeof(attr);
    attr.bp_type = HW_BREAKPOINT_RW;
    attr.bp_addr = at;
    attr.bp_len = (uint64_t)len;
    attr.sample_period = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.sigtrap = 1;
    attr.remove_on_exec = 1;
    attr.sig_data = (HW_MAGIC << 8) | (unsigned long)i;
    if (hw[i].fd < 0) {
        hw[i].fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (hw[i].fd < 0)
            hw_refused = 1;
        return hw[i].fd < 0 ? -1 : 0;
    }
    if (ioctl(hw[i].fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &attr) < 0)
        return -1;
    return enable ? ioctl(hw[i].fd, PERF_EVENT_IOC_ENABLE, 0) : 0;
}
#endif

static void hw_release(struct hw_slot *slot)
{
#if defined(__linux__) && defined(__x86_64__)
    if (slot->busy && hw_point((int)(slot - hw), (uintptr_t)&idle_word, 8, slot->hit) < 0)
        ioctl(slot->fd, PERF_EVENT_IOC_DISABLE, 0);
#endif
    for (int k = 0; k < slot->note.frames; k++)
        Py_DECREF(slot->note.code[k]);
    slot->note.frames = slot->hit = slot->busy = 0;
}

/* hw_watch(address, nbytes): watch the aligned words of the range from its
 * start, as many as free slots allow; the slots' indices (a list, empty when none
 * is free or perf events are refused here). */
static PyObject *hw_watch(PyObject *self, PyObject *args)
{
    Py_ssize_t address, nbytes;
    PyObject *taken;
    if (!PyArg_ParseTuple(args, "nn", &address, &nbytes))
        return NULL;
    if ((taken = PyList_New(0)) == NULL)
        return NULL;
#if defined(__linux__) && defined(__x86_64__)
    uintptr_t at = (uintptr_t)address, end = (uintptr_t)address + (uintptr_t)nbytes;
    if (hw_refused || install_trap() < 0)
        return taken;
    for (int i = 0; i < HW_SLOTS && at < end; i++) {
        if (hw[i].busy)
            continue;
        int len = 8;        /* the largest aligned word at `at` inside the range */
        while (len > 1 && ((at % (uintptr_t)len) || at + (uintptr_t)len > end))
            len /= 2;
        hw[i].note.address = at;
        hw[i].len = len;
        hw[i].hit = hw[i].note.frames = 0;
        if (hw_point(i, at, len, 0) < 0)
            break;
        hw[i].busy = 1;
        PyObject *index = PyLong_FromLong(i);
        if (index == NULL || PyList_Append(taken, index) < 0) {
            Py_XDECREF(index);
            hw_release(&hw[i]);
            Py_DECREF(taken);
            return NULL;
        }
        Py_DECREF(index);
        at += (uintptr_t)len;
    }
#else
    (void)address;
    (void)nbytes;
#endif
    return taken;
}

/* hw_unwatch(slots): the accesses the slots saw, as a list of (address, length of
 * the word, [(file, line), ...] innermost first), and the slots freed. */
static PyObject *hw_unwatch(PyObject *self, PyObject *args)
{
    PyObject *slots, *found, *seq;
    if (!PyArg_ParseTuple(args, "O", &slots))
        return NULL;
    if ((seq = PySequence_Fast(slots, "hw_unwatch(): a sequence of slots")) == NULL)
        return NULL;
    found = PyList_New(0);
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
        long i = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k));
        if (i < 0 || i >= HW_SLOTS || !hw[i].busy)
            continue;
        if (hw[i].hit && found != NULL) {
            PyObject *frames = frames_of(&hw[i].note);
            PyObject *item = frames ? Py_BuildValue("(niN)", (Py_ssize_t)hw[i].note.address,
                                                    hw[i].len, frames) : NULL;
            if (item == NULL || PyList_Append(found, item) < 0)
                Py_CLEAR(found);
            Py_XDECREF(item);
        }
        hw_release(&hw[i]);
    }
    Py_DECREF(seq);
    if (found == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    return found;
}

static PyMethodDef methods[] = {
    {"watch", watch, METH_VARARGS, "watch(address, nbytes): a slot, or < 0"},
    {"arm", arm, METH_VARARGS, "arm(slot): take the pages away; the next access faults"},
    {"arm_pages", arm_pages, METH_VARARGS, "arm_pages(slot, flags): take the flagged pages"},
    {"span", span, METH_VARARGS, "span(slot): (low, high) addresses of the whole pages"},
    {"disarm", disarm, METH_VARARGS, "disarm(slot): give every page back"},
    {"unwatch", unwatch, METH_VARARGS, "unwatch(slot): give the pages back, free the slot"},
    {"set_quiet", set_quiet, METH_VARARGS, "set_quiet(flag): faults unnoted; the flag before"},
    {"faults", faults_of, METH_VARARGS, "faults(slot): its faults since the last take"},
    {"take", take, METH_VARARGS, "take(slot): ([(address, frames, wrote, thread)], lost, faults) since the last"},
    {"set_stepping", set_stepping, METH_VARARGS, "set_stepping(flag): every thread's first accesses seen; whether it can"},
    {"noted_for", noted_for, METH_VARARGS, "noted_for(thread): whether a note of that thread awaits its take"},
    {"hw_watch", hw_watch, METH_VARARGS, "hw_watch(address, nbytes): the slots watching"},
    {"hw_unwatch", hw_unwatch, METH_VARARGS, "hw_unwatch(slots): [(address, len, frames)]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "shmrma._pagewatch",
    "The race checker's page watch on a rank's loads of its window memory "
    "(shmrma/check/loads.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__pagewatch(void)
{
    return PyModule_Create(&module);
}
