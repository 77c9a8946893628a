/*
 * observe/observed.c serves observe/calls.py and observe/recorder.py: the
 * fast path of --trace and --profile.
 *
 * Observed wraps one public MPI method (calls.Call says its name and where
 * its peer, tag and data are among the arguments).  While a recorder runs
 * (observe_begin), a thread's outermost call is timed on CLOCK_MONOTONIC and
 * recorded: its call site (the calling frame's code and line) gets the call's
 * sums (count, total, min, max, bytes, time waiting) for --profile, and the
 * rank's events file, mapped by records.Writer, an 80-byte record for --trace.
 * What only Python knows (a new site's and a communicator's names, a new
 * thread's number, the bytes of a list-form message) is asked of the recorder
 * once, by calling back its methods; the sums go back to it at observe_end.
 * Everything here runs holding the GIL, which orders the threads' records; a
 * callback may let it go, so it comes before any table is touched.  Without
 * this extension, recorder.Recorder.call does the same in Python (the
 * differential test compares the two).
 */
#include "observe.h"
#include "structmember.h"

typedef struct {
    Py_ssize_t at;              /* position among the arguments (self first), -1: none */
    PyObject *name;             /* its keyword */
    PyObject *fallback;         /* its default, or NULL */
} Argument;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *method, *about;
    Argument peer, tag, to, to_tag, data, requests, group, counter_handle;
    int on_object, renames, posts, completes;   /* completes: a COMPLETES kind */
    int makes_counter;          /* Sync_ops_init, Sync_object_init */
} Observed;

/* The layout records.py defines (EVENT), checked at observe_begin. */
typedef struct {
    int64_t start, spent, wait_began, waited, nbytes;
    int32_t name, site, peer, tag, thread, target, to, to_tag;
    int64_t completed_by;
} Event;
_Static_assert(sizeof(Event) == 80, "records.EVENT is 80 bytes");

/* How a completion call says which requests it completed, by its name
 * (calls.Call.completes, its lowercase name; "" for other calls). */
enum { NOT_COMPLETING, WAIT, TEST, WAITALL, TESTALL, WAITANY, WAITSOME };
static const char *const COMPLETION_NAMES[] = {"", "wait", "test", "waitall", "testall",
                                               "waitany", "waitsome", NULL};

typedef struct {
    PyObject *code;             /* strong: its address is the key */
    Observed *call;             /* strong */
    int where, skip;            /* the call's instruction (its line before 3.11) */
    int32_t site, name;
    int64_t count, total, low, high, nbytes, waited;
} Site;

typedef struct { PyObject *object; int32_t number; } Target;
typedef struct { int32_t peer, where; int64_t ns; } Wait;

#define MAX_WAITS 4096

static PyObject *g_recorder;            /* NULL: nothing records */
static int g_profile;
static char *g_events;                  /* the first record, or NULL (no trace) */
static int64_t *g_dropped;
static int64_t g_capacity, g_next;
static Py_buffer g_map;
static int g_generation;                /* of the recorder: threads' numbers go stale */
static Site *g_sites;
static size_t g_site_cap, g_site_count;
static Target *g_targets;
static size_t g_target_cap, g_target_count;
static Wait g_waits[MAX_WAITS];
static int g_wait_count;
static __thread int t_in_call, t_thread, t_thread_generation;

static PyObject *s_nbytes;
static PyObject *g_request_event;       /* records.REQUEST_EVENT */
static PyObject *g_request_counter;     /* records.REQUEST_COUNTER */
static PyObject *s_kind, *s_zeroed, *s_waited_round;

/* The counters' signals that ended a wait, and the rounds that waited for one,
 * the completion calls found (the request's kind, the counter's number, the
 * event): handed to the recorder MAX_LINKS at a time, and the rest at
 * observe_end (a rank killed loses at most those arrows). */
#define MAX_LINKS 64
typedef struct { int64_t kind, counter, event; } Link;    /* records.LINK */
static Link g_links[MAX_LINKS];
static int g_link_count;
static int g_posted;        /* a request is followed (a receive, a counter's): completions look */

/* --- arguments ------------------------------------------------------------------ */

static PyObject *
argument(Argument *a, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (a->at < 0)
        return NULL;
    if (a->at < nargs)
        return args[a->at];
    if (kwnames != NULL) {
        Py_ssize_t i, n = PyTuple_GET_SIZE(kwnames);
        for (i = 0; i < n; i++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, i);
            if (key == a->name || PyUnicode_Compare(key, a->name) == 0)
                return args[nargs + i];
        }
    }
    return a->fallback;
}

/* A rank or tag: -1 when absent, negative (ANY_SOURCE, PROC_NULL) or not a number. */
static int32_t
integer(PyObject *value)
{
    long long v;
    if (value == NULL || !PyLong_Check(value)) {
        PyObject *index;
        if (value == NULL || value == Py_None || !(index = PyNumber_Index(value))) {
            PyErr_Clear();
            return -1;
        }
        v = PyLong_AsLongLong(index);
        Py_DECREF(index);
    } else {
        v = PyLong_AsLongLong(value);
    }
    if (v == -1 && PyErr_Occurred())
        PyErr_Clear();
    return v < 0 || v > INT32_MAX ? -1 : (int32_t)v;
}

static int64_t
as_int64(PyObject *value)
{
    long long v;
    if (value == NULL) {
        PyErr_Clear();
        return -1;
    }
    v = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (v == -1 && PyErr_Occurred())
        PyErr_Clear();
    return v;
}

/* The bytes of a call's data: an array's nbytes at once; a list form asks Python. */
static int64_t
data_bytes(PyObject *data)
{
    if (data == NULL || data == Py_None)
        return -1;
    if (!PyList_Check(data) && !PyTuple_Check(data) && PyObject_CheckBuffer(data)) {
        PyObject *nbytes = PyObject_GetAttr(data, s_nbytes);
        if (nbytes != NULL)
            return as_int64(nbytes);
        PyErr_Clear();
    }
    return as_int64(PyObject_CallMethod(g_recorder, "message_bytes", "O", data));
}

/* --- the recorder's tables ---------------------------------------------------------- */

/* Where in its code a frame is: the instruction, which costs nothing to read (its
 * line is looked up once, for a new site); before 3.11, the line. */
static int
where_in(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#else
    return PyFrame_GetLineNumber(frame);
#endif
}

static size_t
site_slot(PyObject *code, int where, Observed *call)
{
    size_t h = ((uintptr_t)code >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (size_t)where * 0xC2B2AE3D27D4EB4Full ^ ((uintptr_t)call >> 4);
    return h ^ (h >> 29);
}

static Site *
find_site(PyObject *code, int where, Observed *call)
{
    size_t i;
    if (g_site_cap == 0)
        return NULL;
    for (i = site_slot(code, where, call) & (g_site_cap - 1);; i = (i + 1) & (g_site_cap - 1)) {
        Site *s = &g_sites[i];
        if (s->code == NULL)
            return NULL;
        if (s->code == code && s->where == where && s->call == call)
            return s;
    }
}

static int
grow_sites(void)
{
    size_t i, cap = g_site_cap ? g_site_cap * 2 : 256;
    Site *fresh = PyMem_Calloc(cap, sizeof(Site)), *old = g_sites;
    if (fresh == NULL)
        return -1;
    for (i = 0; i < g_site_cap; i++) {
        size_t j;
        if (old[i].code == NULL)
            continue;
        for (j = site_slot(old[i].code, old[i].where, old[i].call) & (cap - 1);
                fresh[j].code != NULL; j = (j + 1) & (cap - 1))
            ;
        fresh[j] = old[i];
    }
    g_sites = fresh;
    g_site_cap = cap;
    PyMem_Free(old);
    return 0;
}

/* The site of a call from (code, where): asks the recorder for its numbers once
 * (several instructions of one line are one site there). */
static Site *
site_of(PyFrameObject *frame, PyObject *code, int where, Observed *call)
{
    Site *s = find_site(code, where, call);
    PyObject *numbers;
    size_t i;
    int skip = 0;
    int32_t site = -1, name = -1;
    if (s != NULL)
        return s;
    numbers = PyObject_CallMethod(g_recorder, "site_numbers", "OiO", code,
                                  PyFrame_GetLineNumber(frame), call->about);
    if (numbers == NULL)
        return NULL;
    if (numbers == Py_None)
        skip = 1;
    else if (!PyArg_ParseTuple(numbers, "ii", &site, &name)) {
        Py_DECREF(numbers);
        return NULL;
    }
    Py_DECREF(numbers);
    if (g_recorder == NULL || (s = find_site(code, where, call)) != NULL)
        return s;       /* ended, or another thread added it meanwhile */
    if ((g_site_count + 1) * 2 > g_site_cap && grow_sites() < 0)
        return NULL;
    for (i = site_slot(code, where, call) & (g_site_cap - 1); g_sites[i].code != NULL;
            i = (i + 1) & (g_site_cap - 1))
        ;
    s = &g_sites[i];
    Py_INCREF(code);
    Py_INCREF(call);
    *s = (Site){code, call, where, skip, site, name, 0, 0, INT64_MAX, 0, 0, 0};
    g_site_count++;
    return s;
}

/* This thread's number in the trace (asked of the recorder once per thread). */
static int32_t
thread_number(void)
{
    PyObject *number;
    if (t_thread_generation == g_generation)
        return t_thread;
    number = PyObject_CallMethod(g_recorder, "thread_number", NULL);
    t_thread = (int32_t)as_int64(number);
    t_thread_generation = g_generation;
    return t_thread;
}

/* The number of the name of the communicator or window a call was made on;
 * Set_name asks again. */
static int32_t
target_number(Observed *call, PyObject *target)
{
    size_t i;
    int32_t number;
    if (target == NULL)
        return -1;
    for (i = ((uintptr_t)target >> 4) & (g_target_cap - 1); g_target_cap &&
            g_targets[i].object != NULL; i = (i + 1) & (g_target_cap - 1))
        if (g_targets[i].object == target && !call->renames)
            return g_targets[i].number;
    number = (int32_t)as_int64(PyObject_CallMethod(g_recorder, "target_number", "O",
                                                   target));
    if (g_recorder == NULL)
        return number;
    if ((g_target_count + 1) * 2 > g_target_cap) {
        size_t j, cap = g_target_cap ? g_target_cap * 2 : 64;
        Target *fresh = PyMem_Calloc(cap, sizeof(Target));
        if (fresh == NULL)
            return number;
        for (j = 0; j < g_target_cap; j++) {
            size_t k;
            if (g_targets[j].object == NULL)
                continue;
            for (k = ((uintptr_t)g_targets[j].object >> 4) & (cap - 1);
                    fresh[k].object != NULL; k = (k + 1) & (cap - 1))
                ;
            fresh[k] = g_targets[j];
        }
        PyMem_Free(g_targets);
        g_targets = fresh;
        g_target_cap = cap;
    }
    for (i = ((uintptr_t)target >> 4) & (g_target_cap - 1); g_targets[i].object != NULL &&
            g_targets[i].object != target; i = (i + 1) & (g_target_cap - 1))
        ;
    if (g_targets[i].object == NULL) {
        Py_INCREF(target);
        g_targets[i].object = target;
        g_target_count++;
    }
    g_targets[i].number = number;
    return number;
}

static void
waited_on(int32_t peer, int32_t where, int64_t ns)
{
    int i;
    for (i = 0; i < g_wait_count; i++)
        if (g_waits[i].peer == peer && g_waits[i].where == where) {
            g_waits[i].ns += ns;
            return;
        }
    if (g_wait_count < MAX_WAITS)
        g_waits[g_wait_count++] = (Wait){peer, where, ns};
}

/* --- a call's record ------------------------------------------------------------------ */

/* Record a call; the number of its event in the trace, or -1 (none kept). */
static int64_t
record(Observed *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
       int64_t start, int64_t end)
{
    PyFrameObject *frame = PyEval_GetFrame();
    PyObject *code, *target;
    int64_t began = t_wait_began, waited = t_waited_ns, nbytes, spent = end - start;
    int32_t peer, tag, to = -1, to_tag = -1, thread = 0, on = -1;
    Site *s;
    int where;

    t_wait_began = t_waited_ns = 0;
    if (frame == NULL)
        return -1;
    code = (PyObject *)PyFrame_GetCode(frame);
    where = where_in(frame);
    s = site_of(frame, code, where, o);
    Py_DECREF(code);
    if (s == NULL || s->skip)
        return -1;
    nbytes = data_bytes(argument(&o->data, args, nargs, kwnames));
    peer = integer(argument(&o->peer, args, nargs, kwnames));
    tag = integer(argument(&o->tag, args, nargs, kwnames));
    if (g_events != NULL && o->to.at >= 0) {
        to = integer(argument(&o->to, args, nargs, kwnames));
        to_tag = integer(argument(&o->to_tag, args, nargs, kwnames));
    }
    target = o->on_object && nargs > 0 ? args[0] : NULL;
    if (g_events != NULL || (waited && peer >= 0))
        on = target_number(o, target);
    if (g_events != NULL)
        thread = thread_number();
    if (g_recorder == NULL || (s = find_site(code, where, o)) == NULL)
        return -1;      /* a callback ended the recorder: the site is gone */
    if (g_profile) {
        s->count++;
        s->total += spent;
        if (spent < s->low)
            s->low = spent;
        if (spent > s->high)
            s->high = spent;
        if (nbytes > 0)
            s->nbytes += nbytes;
        if (waited) {
            s->waited += waited;
            waited_on(peer >= 0 ? peer : -1, peer >= 0 ? on : s->name, waited);
        }
    }
    if (g_events != NULL) {
        int64_t index = g_next++;
        if (index < g_capacity) {
            ((Event *)g_events)[index] = (Event){start, spent, waited ? began : 0, waited,
                                                 nbytes, s->name, s->site, peer, tag, thread,
                                                 on, to, to_tag, -1};
            return index;
        }
        *g_dropped = index + 1 - g_capacity;
    }
    return -1;
}

/* A counter's request completed: a Sync_ops signal that took the counter to 0,
 * or a Sync_object round that waited for one, is a link (the flag goes). */
static void hand_links(void);

static void
counter_completed(PyObject *request, PyObject *counter, int64_t index)
{
    PyObject *kind = PyObject_GetAttr(request, s_kind), *flag = NULL, *name;
    long k = kind ? PyLong_AsLong(kind) : -1;
    Py_XDECREF(kind);
    name = k == SYNC_OPS ? s_zeroed : k == SYNC_OBJECT ? s_waited_round : NULL;
    if (name != NULL && (flag = PyObject_GetAttr(request, name)) != NULL &&
            PyObject_IsTrue(flag) == 1 && PyObject_SetAttr(request, name, Py_False) == 0) {
        if (g_link_count == MAX_LINKS)
            hand_links();
        g_links[g_link_count].kind = (int)k;
        g_links[g_link_count].counter = PyLong_AsLongLong(counter);
        g_links[g_link_count].event = index;
        g_link_count++;
    }
    Py_XDECREF(flag);
    PyErr_Clear();
}

/* A completed request that was a posted receive's: its event gets the number
 * of the event that completed it (the first one; the mark goes). A counter's
 * request: counter_completed. */
static void
completed(PyObject *request, int64_t index)
{
    PyObject *dict = PyObject_GenericGetDict(request, NULL), *number;
    if (dict == NULL) {
        PyErr_Clear();
        return;
    }
    number = PyDict_GetItemWithError(dict, g_request_event);
    if (number != NULL) {
        long long posted = PyLong_AsLongLong(number);
        if (posted >= 0 && posted < g_next && posted < g_capacity &&
                ((Event *)g_events)[posted].completed_by < 0)
            ((Event *)g_events)[posted].completed_by = index;
        PyDict_DelItem(dict, g_request_event);
    } else if ((number = PyDict_GetItemWithError(dict, g_request_counter)) != NULL) {
        counter_completed(request, number, index);
    }
    PyErr_Clear();
    Py_DECREF(dict);
}

/* The links found so far, as records.LINK records in a bytes; emptied. */
static PyObject *
take_links(void)
{
    PyObject *links = PyBytes_FromStringAndSize((const char *)g_links,
                                                g_link_count * (Py_ssize_t)sizeof(Link));
    g_link_count = 0;
    return links;
}

/* Hand the links found to the recorder (recorder.counter_links). */
static void
hand_links(void)
{
    PyObject *links = take_links(), *done;
    done = links ? PyObject_CallMethod(g_recorder, "counter_links", "O", links) : NULL;
    Py_XDECREF(done);
    Py_XDECREF(links);
    PyErr_Clear();
}

/* Whether a Test's result says it completed: True, or (True, ...). */
static int
flagged(PyObject *result)
{
    int flag;
    if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) > 0)
        result = PyTuple_GET_ITEM(result, 0);
    flag = PyObject_IsTrue(result);
    if (flag < 0)
        PyErr_Clear();
    return flag > 0;
}

/* The requests a completion call completed, by its kind. */
static void
completed_by_call(int kind, PyObject *given, PyObject *result, int64_t index)
{
    PyObject *all, *item;
    Py_ssize_t i, n;
    if (given == NULL)
        return;
    if (kind == WAIT || (kind == TEST && flagged(result))) {
        completed(given, index);
        return;
    }
    if (kind == TEST || (kind == TESTALL && !flagged(result)) ||
            !(all = PySequence_Fast(given, "requests")))
        goto done;
    n = PySequence_Fast_GET_SIZE(all);
    if (kind == WAITALL || kind == TESTALL) {
        for (i = 0; i < n; i++)
            completed(PySequence_Fast_GET_ITEM(all, i), index);
    } else if (kind == WAITANY) {
        item = PyTuple_Check(result) && PyTuple_GET_SIZE(result) ? PyTuple_GET_ITEM(result, 0)
               : result;
        i = PyLong_Check(item) ? PyLong_AsSsize_t(item) : -1;
        if (i >= 0 && i < n)
            completed(PySequence_Fast_GET_ITEM(all, i), index);
    } else if (kind == WAITSOME && PyList_Check(result)) {
        Py_ssize_t k;
        for (k = 0; k < PyList_GET_SIZE(result); k++) {
            item = PyList_GET_ITEM(result, k);
            i = PyLong_Check(item) ? PyLong_AsSsize_t(item) : -1;
            if (i >= 0 && i < n)
                completed(PySequence_Fast_GET_ITEM(all, i), index);
        }
    }
    Py_DECREF(all);
done:
    PyErr_Clear();
}

/* A posted receive's request gets its event's number; a call that completes
 * requests marks those receives' events with its own (the arrows end there);
 * a Post's or Start's group goes to the names file (recorder.group_named). */
static void
follow_requests(Observed *o, int64_t index, PyObject *result, PyObject *const *args,
                Py_ssize_t nargs, PyObject *kwnames)
{
    if (o->posts) {
        PyObject *number = PyLong_FromLongLong(index);
        if (number == NULL || PyObject_SetAttr(result, g_request_event, number) < 0)
            PyErr_Clear();      /* a request that takes no attribute: no arrow */
        else
            g_posted = 1;
        Py_XDECREF(number);
    } else if (o->completes && g_posted) {      /* none followed: nothing to look for */
        completed_by_call(o->completes, o->requests.at >= 0 ?
                          argument(&o->requests, args, nargs, kwnames) :
                          nargs > 0 ? args[0] : NULL, result, index);
    } else if (o->makes_counter) {              /* a counter's request: follow it */
        PyObject *handle = argument(&o->counter_handle, args, nargs, kwnames);
        PyObject *done = PyObject_CallMethod(g_recorder, "counter_made", "OO", result,
                                             handle ? handle : Py_None);
        Py_XDECREF(done);
        PyErr_Clear();
        g_posted = 1;
    } else if (o->group.at >= 0) {              /* a Post's or Start's group */
        PyObject *group = argument(&o->group, args, nargs, kwnames);
        PyObject *done = group == NULL ? NULL : PyObject_CallMethod(
            g_recorder, "group_named", "LO", (long long)index, group);
        Py_XDECREF(done);
        PyErr_Clear();
    }
}

static PyObject *
observed_vectorcall(Observed *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *result, *type, *value, *traceback;
    int64_t start, end;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);

    /* timed even before a recorder runs: a singleton's first call starts it */
    if (t_in_call)
        return PyObject_Vectorcall(o->method, args, nargsf, kwnames);
    t_in_call = 1;
    t_wait_began = t_waited_ns = 0;     /* waits outside a call are nobody's */
    start = now_ns();
    result = PyObject_Vectorcall(o->method, args, nargsf, kwnames);
    end = now_ns();
    if (g_recorder != NULL) {
        int64_t index;
        PyErr_Fetch(&type, &value, &traceback);     /* the call's own error, kept */
        index = record(o, args, nargs, kwnames, start, end);
        if (index >= 0 && result != NULL && g_recorder != NULL &&
                (o->posts || o->completes || o->group.at >= 0 || o->makes_counter))
            follow_requests(o, index, result, args, nargs, kwnames);
        if (PyErr_Occurred())
            PyErr_WriteUnraisable(o->about);
        PyErr_Restore(type, value, traceback);
    }
    t_in_call = 0;
    return result;
}

/* --- the Observed type ------------------------------------------------------------- */

static int
argument_of(PyObject *about, const char *attribute, PyObject *defaults, Argument *a)
{
    PyObject *where = PyObject_GetAttrString(about, attribute);
    a->at = -1;
    a->name = a->fallback = NULL;
    if (where == NULL)
        return -1;
    if (where != Py_None) {
        PyObject *name;
        if (!PyArg_ParseTuple(where, "nU", &a->at, &name)) {
            Py_DECREF(where);
            return -1;
        }
        Py_INCREF(name);
        a->name = name;
        a->fallback = PyDict_GetItemWithError(defaults, name);
        if (a->fallback == NULL && PyErr_Occurred()) {
            Py_DECREF(where);
            return -1;
        }
        Py_XINCREF(a->fallback);
    }
    Py_DECREF(where);
    return 0;
}

static int
flag_of(PyObject *about, const char *attribute)
{
    PyObject *value = PyObject_GetAttrString(about, attribute);
    int flag;
    if (value == NULL)
        return -1;
    flag = PyObject_IsTrue(value);
    Py_DECREF(value);
    return flag;
}

static int
completion_of(PyObject *about)
{
    PyObject *value = PyObject_GetAttrString(about, "completes");
    int kind;
    if (value == NULL)
        return -1;
    for (kind = 0; COMPLETION_NAMES[kind] != NULL; kind++)
        if (PyUnicode_Check(value) &&
                PyUnicode_CompareWithASCIIString(value, COMPLETION_NAMES[kind]) == 0)
            break;
    Py_DECREF(value);
    if (COMPLETION_NAMES[kind] == NULL) {
        PyErr_SetString(PyExc_ValueError, "Observed: completes must name a completion");
        return -1;
    }
    return kind;
}

static PyObject *
observed_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *method, *about, *defaults;
    Observed *o;
    if (!PyArg_ParseTuple(args, "OO:Observed", &method, &about))
        return NULL;
    if (!(defaults = PyObject_GetAttrString(about, "defaults")))
        return NULL;
    o = (Observed *)type->tp_alloc(type, 0);
    if (o == NULL) {
        Py_DECREF(defaults);
        return NULL;
    }
    o->vectorcall = (vectorcallfunc)observed_vectorcall;
    Py_INCREF(method);
    Py_INCREF(about);
    o->method = method;
    o->about = about;
    if (argument_of(about, "peer", defaults, &o->peer) < 0 ||
            argument_of(about, "tag", defaults, &o->tag) < 0 ||
            argument_of(about, "to", defaults, &o->to) < 0 ||
            argument_of(about, "to_tag", defaults, &o->to_tag) < 0 ||
            argument_of(about, "data", defaults, &o->data) < 0 ||
            argument_of(about, "requests", defaults, &o->requests) < 0 ||
            argument_of(about, "group", defaults, &o->group) < 0 ||
            argument_of(about, "counter_handle", defaults, &o->counter_handle) < 0 ||
            (o->makes_counter = flag_of(about, "makes_counter")) < 0 ||
            (o->posts = flag_of(about, "posts")) < 0 ||
            (o->completes = completion_of(about)) < 0 ||
            (o->on_object = flag_of(about, "on_object")) < 0 ||
            (o->renames = flag_of(about, "renames")) < 0) {
        Py_DECREF(defaults);
        Py_DECREF(o);
        return NULL;
    }
    Py_DECREF(defaults);
    return (PyObject *)o;
}

static void
observed_dealloc(Observed *o)
{
    Argument *all[] = {&o->peer, &o->tag, &o->to, &o->to_tag, &o->data, &o->requests,
                       &o->group, &o->counter_handle};
    size_t i;
    for (i = 0; i < 8; i++) {
        Py_XDECREF(all[i]->name);
        Py_XDECREF(all[i]->fallback);
    }
    Py_XDECREF(o->method);
    Py_XDECREF(o->about);
    Py_TYPE(o)->tp_free((PyObject *)o);
}

/* Bound as a function is: an instance's method, or, under classmethod, the class's. */
static PyObject *
observed_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
observed_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

static PyObject *
observed_getattro(Observed *o, PyObject *name)
{
    /* __doc__, __name__, __wrapped__... are the method's: help() and
     * inspect.signature see the call itself */
    static const char *const as_method[] = {"__doc__", "__name__", "__qualname__",
                                            "__module__", "__text_signature__", NULL};
    PyObject *found;
    int i;
    if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
        Py_INCREF(o->method);
        return o->method;
    }
    for (i = 0; as_method[i] != NULL; i++)
        if (PyUnicode_CompareWithASCIIString(name, as_method[i]) == 0)
            return PyObject_GetAttr(o->method, name);
    found = PyObject_GenericGetAttr((PyObject *)o, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(o->method, name);
}

static PyMemberDef observed_members[] = {
    {"about", T_OBJECT, offsetof(Observed, about), READONLY, "the calls.Call it records"},
    {NULL}
};

static PyTypeObject ObservedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Observed",
    .tp_doc = "Observed(method, about): method, timed and recorded as the call about "
              "(observe/calls.py) while a recorder runs.",
    .tp_basicsize = sizeof(Observed),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = observed_new,
    .tp_dealloc = (destructor)observed_dealloc,
    .tp_descr_get = observed_get,
    .tp_call = observed_call,
    .tp_getattro = (getattrofunc)observed_getattro,
    .tp_vectorcall_offset = offsetof(Observed, vectorcall),
    .tp_members = observed_members,
};

/* --- begin and end ----------------------------------------------------------------- */

static void
forget_tables(void)
{
    size_t i;
    for (i = 0; i < g_site_cap; i++)
        if (g_sites[i].code != NULL) {
            Py_DECREF(g_sites[i].code);
            Py_DECREF(g_sites[i].call);
        }
    for (i = 0; i < g_target_cap; i++)
        Py_XDECREF(g_targets[i].object);
    PyMem_Free(g_sites);
    PyMem_Free(g_targets);
    g_sites = NULL;
    g_targets = NULL;
    g_site_cap = g_site_count = g_target_cap = g_target_count = 0;
    g_wait_count = 0;
    if (g_events != NULL)
        PyBuffer_Release(&g_map);
    g_events = NULL;
    g_dropped = NULL;
    g_next = g_posted = g_link_count = 0;
    Py_CLEAR(g_recorder);
}

static PyObject *
n_observe_begin(PyObject *m, PyObject *args)
{
    PyObject *recorder, *events, *attribute, *counter_attribute;
    Py_ssize_t header, event, dropped_at, capacity, link;
    int profile;
    if (!PyArg_ParseTuple(args, "OpOnnnnUUn:observe_begin", &recorder, &profile, &events,
                          &capacity, &header, &event, &dropped_at, &attribute,
                          &counter_attribute, &link))
        return NULL;
    if (link != sizeof(Link)) {
        PyErr_Format(PyExc_ValueError, "observe_begin: links of %zd bytes, expected %zu "
                     "(records.LINK and Link differ)", link, sizeof(Link));
        return NULL;
    }
    if (event != sizeof(Event)) {
        PyErr_Format(PyExc_ValueError, "observe_begin: records of %zd bytes, expected %zu "
                     "(records.EVENT and Event differ)", event, sizeof(Event));
        return NULL;
    }
    forget_tables();
    if (events != Py_None) {
        if (PyObject_GetBuffer(events, &g_map, PyBUF_WRITABLE) < 0)
            return NULL;
        if (g_map.len < header + capacity * event || dropped_at + 8 > header) {
            PyBuffer_Release(&g_map);
            PyErr_SetString(PyExc_ValueError, "observe_begin: the events map is too small");
            return NULL;
        }
        g_events = (char *)g_map.buf + header;
        g_dropped = (int64_t *)((char *)g_map.buf + dropped_at);
        g_capacity = capacity;
    }
    Py_INCREF(recorder);
    g_recorder = recorder;
    Py_INCREF(attribute);
    Py_XSETREF(g_request_event, attribute);
    Py_INCREF(counter_attribute);
    Py_XSETREF(g_request_counter, counter_attribute);
    g_profile = profile;
    g_generation++;
    g_observe_waits = 1;
    Py_RETURN_NONE;
}

/* The sums, and stop: ([(site, name, count, total, min, max, bytes, waited)...],
 * [(peer, where, ns)...], events written, the counters' links not handed yet). */
static PyObject *
n_observe_end(PyObject *m, PyObject *unused)
{
    PyObject *sites = PyList_New(0), *waits = PyList_New(0), *result = NULL;
    PyObject *links = take_links();
    size_t i;
    int w;
    if (sites == NULL || waits == NULL)
        goto done;
    for (i = 0; i < g_site_cap; i++) {
        Site *s = &g_sites[i];
        PyObject *item;
        if (s->code == NULL || s->skip || s->count == 0)
            continue;
        item = Py_BuildValue("(iiLLLLLL)", s->site, s->name, (long long)s->count,
                             (long long)s->total, (long long)s->low, (long long)s->high,
                             (long long)s->nbytes, (long long)s->waited);
        if (item == NULL || PyList_Append(sites, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    for (w = 0; w < g_wait_count; w++) {
        PyObject *item = Py_BuildValue("(iiL)", g_waits[w].peer, g_waits[w].where,
                                       (long long)g_waits[w].ns);
        if (item == NULL || PyList_Append(waits, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    if (links != NULL)
        result = Py_BuildValue("(OOLO)", sites, waits, (long long)g_next, links);
done:
    Py_XDECREF(sites);
    Py_XDECREF(waits);
    Py_XDECREF(links);
    forget_tables();
    g_observe_waits = 0;
    return result;
}

/* Set a method on a class whose attributes Python keeps read-only (a C
 * extension's type, as mpi4py's classes are): the mpi backend's --profile
 * wraps mpi4py's methods so.  The type stays read-only to the program. */
static PyObject *
n_set_class_attribute(PyObject *m, PyObject *args)
{
    PyTypeObject *type;
    PyObject *name, *value;
    int result;
    if (!PyArg_ParseTuple(args, "O!UO:set_class_attribute", &PyType_Type, &type, &name,
                          &value))
        return NULL;
#ifdef Py_TPFLAGS_IMMUTABLETYPE
    {
        unsigned long immutable = type->tp_flags & Py_TPFLAGS_IMMUTABLETYPE;
        type->tp_flags &= ~Py_TPFLAGS_IMMUTABLETYPE;
        result = PyObject_SetAttr((PyObject *)type, name, value);
        type->tp_flags |= immutable;
    }
#else
    result = PyDict_SetItem(type->tp_dict, name, value);
    PyType_Modified(type);
#endif
    if (result < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef observe_methods[] = {
    {"set_class_attribute", n_set_class_attribute, METH_VARARGS,
     "set_class_attribute(type, name, value): setattr(type, name, value), also on a "
     "C extension's type, which stays read-only to others."},
    {"observe_begin", n_observe_begin, METH_VARARGS,
     "observe_begin(recorder, profile, events_map, capacity, header_size, event_size, "
     "dropped_offset, request_attribute, counter_attribute, link_size): record the "
     "Observed calls for recorder (observe/recorder.py)."},
    {"observe_end", n_observe_end, METH_NOARGS,
     "observe_end() -> (sites' sums, waits, events written, links): stop recording."},
    {NULL}
};

int
observe_init(PyObject *module)
{
    if (!(s_nbytes = PyUnicode_InternFromString("nbytes")) ||
            !(s_kind = PyUnicode_InternFromString("_kind")) ||
            !(s_zeroed = PyUnicode_InternFromString("_zeroed")) ||
            !(s_waited_round = PyUnicode_InternFromString("_waited_round")))
        return -1;
    if (PyModule_AddType(module, &ObservedType) < 0)
        return -1;
    return PyModule_AddFunctions(module, observe_methods);
}
