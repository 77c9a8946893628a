/*
 * Point-to-point messages: the transport and MPI matching in C.
 *
 * The same protocol and interface as shmrma/mailbox.py's Mailbox (read its
 * docstring first): one single-producer, single-consumer ring per ordered pair
 * of ranks in the world segment, records of a 24-byte header and the payload
 * padded to 8 bytes, the receiver's doorbell bumped after every record.  A
 * payload larger than a quarter of the ring travels in a segment of its own,
 * which Python creates and reads (the callables `stage`, `fetch`, `discard`
 * given at construction): segments are shmrma/segments.py's business.
 * With the C engine a large payload streams through the pair's staging ring
 * instead, or, from SHMRMA_DIRECT_MIN bytes (off by default), the receiver
 * reads it from the sender's memory (see Direct).
 *
 * This file owns this process's matching state: the messages that arrived
 * before a receive wanted them (per source, in arrival order), the receives
 * posted before their message arrived (in posting order), and the sends that
 * wait for room in a full ring (per destination).  Every entry point holds the
 * rank's MPI lock (native.h) while it touches that state, so calls from several
 * threads happen one after the other: large copies, reads of another process's
 * memory and the Python callbacks let the GIL go midway, but not the lock.
 * The waits give it up.  What one thread completes that another may wait for
 * (a receive it posted, a send it queued) rings this rank's doorbell when
 * the lock is shared (unlock).
 */
#include "p2p.h"

/* The layout and codes shared with Python, set once by transport_setup()
 * from their one Python definition (job.py, mailbox.py, constants.py). */
static Py_ssize_t CHANNEL_HEADER, OFF_HEAD, OFF_TAIL, OFF_BLOCKED;
static int32_t FLAG_PICKLED, FLAG_IN_SEGMENT, FLAG_SYNC, SYNC_SHIFT, PAD_FLAG;
static int32_t FLAG_STAGED, FLAG_STAGING, FLAG_DIRECT;
static Py_ssize_t STAGING_HEADER;
static int32_t SUBCONTEXTS, SYNC_ACK, ANY_SOURCE, ANY_TAG, ERR_TRUNCATE;
static int32_t P2P, TAG_UB;
static double WAIT_SLICE;       /* how long a fast path waits before Python's checks */
static PyObject *g_miss;        /* what p2p_sendobj and p2p_recvobj answer when they miss */
static PyTypeObject *g_status_type; /* status.Status: the statuses fill_status fills */
static int g_setup_done = 0;

typedef struct {
    uint32_t length;            /* bytes of the record, header and padding included */
    int32_t flags;
    int32_t context;
    int32_t tag;
    uint64_t nbytes;            /* bytes of the message */
} Record;

/* A message held here: arrived and unexpected, or a send queued for room. */
typedef struct Msg {
    struct Msg *next;
    int32_t peer;               /* the source of an arrived message, the destination of a send */
    int32_t flags, context, tag;
    int64_t nbytes;
    Py_ssize_t len;             /* bytes in data: the payload, or a segment's name */
    int staged;                 /* a send whose payload waits for room in the staging ring */
    int64_t pushed;             /* the bytes of it in the staging ring so far */
    int direct;                 /* a send the receiver reads from this process: 1 its
                                 * record waits for room, 2 it waits for the reader */
    uint64_t read_at;           /* the staging head that says the receiver read it */
    Py_buffer view;             /* that payload when it is held rather than copied */
    int held;
    char data[];
} Msg;

/* A chunk of a staged message (a staged record's payload): where it lies in
 * the staging ring and in the message.  A message moves in chunks, so the
 * receiver copies one out while the sender copies the next one in. */
typedef struct {
    uint64_t start;             /* its position (bytes produced before it, skips included) */
    uint64_t span;              /* the bytes it takes there, padded */
    uint64_t offset;            /* where it goes in the message */
    uint64_t length;
} Staged;

/* A message the receiver copies straight from the sender's memory with
 * process_vm_readv (a staged record with FLAG_DIRECT): one copy.  It takes an
 * empty `span` of the staging ring's positions, so the receiver's head moving
 * past it tells the sender the buffer was read (or refused: see
 * STAGING_REFUSED) and the send can complete. */
typedef struct {
    Staged where;
    uint64_t address;           /* the payload in the sender's memory */
    int64_t pid;                /* the sender's */
} Direct;

/* The staging header's word, after the receiver's head, that the receiver sets
 * when it cannot read the sender's memory (EPERM, or SHMRMA_VM_READV=0): the
 * sender then streams that message through the staging ring, and every later
 * one to that receiver (detected once per pair). */
#define STAGING_REFUSED 8

/* A staged message whose chunks are still arriving, and where they go. */
typedef struct {
    struct Core *core;          /* the posted receive it matched (a reference), or */
    Msg *msg;                   /* the unexpected message it will be */
    char *into;                 /* where its bytes go (NULL: dropped, truncated) */
    int64_t received;
} Partial;

/* A pair's staging ring, which the sender creates at its first large message to
 * the receiver: a header (the receiver's head) and `size` bytes. */
typedef struct {
    char *base;                 /* NULL: none yet */
    uint64_t size;
    uint64_t tail;              /* the sender's: bytes produced */
    uint64_t head;              /* the sender's: the receiver's head as last read */
} Staging;

typedef struct {
    Msg *head, *tail;
} Queue;

/* A receive (mailbox.Core's counterpart). */
typedef struct Core {
    PyObject_HEAD
    struct Core *prev, *next;   /* the posted list */
    int posted;
    int32_t context, want_source, want_tag;
    PyObject *target;           /* the buffer, or None for an object receive */
    Py_buffer view;
    int has_view;
    int done;
    int32_t source, tag, flags, error;
    int64_t count;
    PyObject *payload;          /* an object receive's bytes */
} Core;

/* An unexpected message handed to Python (mailbox.Arrived's counterpart). */
typedef struct {
    PyObject_HEAD
    Msg *msg;                   /* owned; NULL once delivered */
} Arrived;

typedef struct {
    PyObject_HEAD
    char *base;                 /* the world segment */
    int me, n;
    Py_ssize_t channels, channel_bytes, ring_bytes, inline_max;
    Py_ssize_t ranks, rank_block, doorbell_offset;
    int32_t *doorbell;
    uint32_t seen_bell;
    int seen_valid;
    Queue *unexpected;          /* per source */
    Queue *queues;              /* per destination */
    uint64_t *tickets, *pushed; /* per destination */
    uint32_t *heads;            /* per destination: its head as last read (it only grows) */
    Py_ssize_t queued;
    Core *posted_head, *posted_tail;
    PyObject *stage, *fetch, *discard;
    Staging *staging_out;       /* per destination */
    Staging *staging_in;        /* per source */
    Partial *partial;           /* per source */
    uint64_t staging_bytes;     /* the capacity of a staging ring */
    uint64_t chunk_bytes;       /* the most a chunk of a staged message holds */
    Py_ssize_t direct_min;      /* the smallest held send a receiver reads directly */
    int read_peers;             /* this rank may read its senders' memory (SHMRMA_VM_READV) */
    PyObject *new_staging, *attach_staging;
    uint64_t events, events_rung;   /* receives completed, queued sends pushed; rung */
} Transport;

static PyTypeObject CoreType, ArrivedType, TransportType;


/* The transport of this process: the last one made (one per rank). */
static Transport *g_current = NULL;

/* An entry point's hold of the MPI lock: unlock() rings this rank's doorbell
 * when the call completed something since the last ring, so that another
 * thread waiting on the doorbell for it looks again. */
static inline void
lock(void)
{
    mpi_lock();
}

static inline void
unlock(Transport *t)
{
    if (t->events != t->events_rung) {
        t->events_rung = t->events;
        wake_threads(t->doorbell);
    }
    mpi_unlock();
}

/* ------------------------------------------------------------------ */
/* rings                                                                */
/* ------------------------------------------------------------------ */

static inline char *
channel(Transport *t, int src, int dst)
{
    return t->base + t->channels + ((Py_ssize_t)src * t->n + dst) * t->channel_bytes;
}

static inline int32_t *
doorbell_of(Transport *t, int rank)
{
    return (int32_t *)(t->base + t->ranks + rank * t->rank_block + t->doorbell_offset);
}

static inline uint32_t *
word(char *channel_base, Py_ssize_t offset)
{
    return (uint32_t *)(channel_base + offset);
}

static inline Py_ssize_t
padded(Py_ssize_t n)
{
    return (n + 7) & ~(Py_ssize_t)7;
}

/* Is there room in dest's ring for a record of `len` payload bytes? */
static int
ring_fits(Transport *t, int dest, Py_ssize_t len)
{
    char *ch = channel(t, t->me, dest);
    uint32_t size = (uint32_t)t->ring_bytes;
    uint32_t need = (uint32_t)(sizeof(Record) + padded(len));
    uint32_t tail = __atomic_load_n(word(ch, OFF_TAIL), __ATOMIC_RELAXED);
    uint32_t position = tail % size;
    uint32_t skip = size - position < need ? size - position : 0;
    /* the receiver's head line is read only when the ring looks full: reading
     * it for every record would pull it back and forth between the two cores */
    if ((uint64_t)(tail - t->heads[dest]) + skip + need > size) {
        t->heads[dest] = __atomic_load_n(word(ch, OFF_HEAD), SC);
        if ((uint64_t)(tail - t->heads[dest]) + skip + need > size)
            return 0;
    }
    return 1;
}

/* Write one record into dest's ring; 0 when there is no room. */
static int
push(Transport *t, int dest, int32_t flags, int32_t context, int32_t tag, int64_t nbytes,
     const char *data, Py_ssize_t len)
{
    char *ch = channel(t, t->me, dest), *ring = ch + CHANNEL_HEADER;
    uint32_t size = (uint32_t)t->ring_bytes;
    uint32_t need = (uint32_t)(sizeof(Record) + padded(len));
    uint32_t tail = __atomic_load_n(word(ch, OFF_TAIL), __ATOMIC_RELAXED);
    uint32_t position = tail % size;
    uint32_t skip = size - position < need ? size - position : 0;
    Record *record;

    if (!ring_fits(t, dest, len))
        return 0;
    if (skip) {
        if (skip >= sizeof(Record)) {
            record = (Record *)(ring + position);
            record->length = skip;
            record->flags = PAD_FLAG;
        }
        position = 0;
    }
    record = (Record *)(ring + position);
    record->length = need;
    record->flags = flags;
    record->context = context;
    record->tag = tag;
    record->nbytes = (uint64_t)nbytes;
    memcpy(record + 1, data, (size_t)len);
    if (flags & FLAG_IN_SEGMENT)    /* the receiver reads the name up to the zeros */
        memset((char *)(record + 1) + len, 0, need - sizeof(Record) - (size_t)len);
    __atomic_store_n(word(ch, OFF_TAIL), tail + skip + need, SC);
    cell_bump(doorbell_of(t, dest));
    return 1;
}

static Msg *
new_msg(int32_t peer, int32_t flags, int32_t context, int32_t tag, int64_t nbytes,
        const char *data, Py_ssize_t len)
{
    Msg *m = PyMem_Malloc(sizeof(Msg) + (size_t)len);
    if (m == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    m->next = NULL;
    m->peer = peer;
    m->flags = flags;
    m->context = context;
    m->tag = tag;
    m->nbytes = nbytes;
    m->len = len;
    m->staged = m->held = m->direct = 0;
    m->pushed = 0;
    m->read_at = 0;
    memcpy(m->data, data, (size_t)len);
    return m;
}

static void
free_msg(Msg *m)
{
    if (m->held)
        PyBuffer_Release(&m->view);
    PyMem_Free(m);
}

/* --- staging rings: large payloads, copied in by the sender, out by the receiver --- */

static inline uint64_t *
staging_head(Staging *s)
{
    return (uint64_t *)s->base;
}

static inline char *
staging_data(Staging *s, uint64_t position)
{
    return s->base + STAGING_HEADER + position % s->size;
}

static inline uint64_t
padded64(uint64_t n)
{
    return (n + 63) & ~(uint64_t)63;
}

static void
copy_large(char *into, const char *from, size_t n)
{
    if (n >= 64 * 1024) {
        Py_BEGIN_ALLOW_THREADS
        memcpy(into, from, n);
        Py_END_ALLOW_THREADS
    }
    else
        memcpy(into, from, n);
}

/* Copy the next chunk of a staged message into dest's staging ring and push
 * its record; 0 when the ring or the staging ring has no room (nothing then
 * changed).  *pushed counts the message's bytes in the staging ring so far. */
static int
push_chunk(Transport *t, int dest, int32_t flags, int32_t context, int32_t tag,
           const char *payload, int64_t nbytes, int64_t *pushed)
{
    Staging *s = &t->staging_out[dest];
    uint64_t length = (uint64_t)(nbytes - *pushed) < t->chunk_bytes ?
        (uint64_t)(nbytes - *pushed) : t->chunk_bytes;
    uint64_t span = padded64(length);
    uint64_t position = s->tail % s->size;
    uint64_t skip = s->size - position < span ? s->size - position : 0;
    Staged where;
    if (s->tail + skip + span - s->head > s->size) {
        s->head = __atomic_load_n(staging_head(s), SC);
        if (s->tail + skip + span - s->head > s->size)
            return 0;
    }
    if (!ring_fits(t, dest, sizeof(Staged)))
        return 0;
    where.start = s->tail + skip;
    where.span = span;
    where.offset = (uint64_t)*pushed;
    where.length = length;
    copy_large(staging_data(s, where.start), payload + *pushed, (size_t)length);
    push(t, dest, flags | FLAG_STAGED, context, tag, nbytes, (const char *)&where,
         sizeof(where));
    s->tail = where.start + span;
    *pushed += (int64_t)length;
    return 1;
}

/* Push chunks of a staged message while there is room: is all of it in? */
static int
push_chunks(Transport *t, int dest, int32_t flags, int32_t context, int32_t tag,
            const char *payload, int64_t nbytes, int64_t *pushed)
{
    while (*pushed < nbytes)
        if (!push_chunk(t, dest, flags, context, tag, payload, nbytes, pushed))
            return 0;
    return 1;
}

static inline uint64_t *
staging_refused(Staging *s)
{
    return (uint64_t *)(s->base + STAGING_REFUSED);
}

/* The empty span of the staging ring's positions a direct record takes. */
#define DIRECT_SPAN 64

/* Push m's direct record to dest (its payload stays here, held), then answer
 * whether the receiver has read it.  A receiver that cannot read this process's
 * memory gives the span back with its refusal: the message, already matched
 * there, then streams through the staging ring. */
static int
push_direct(Transport *t, int dest, Msg *m)
{
    Staging *s = &t->staging_out[dest];
    if (m->direct == 1) {
        Direct d;
        if (s->tail + DIRECT_SPAN - s->head > s->size) {
            s->head = __atomic_load_n(staging_head(s), SC);
            if (s->tail + DIRECT_SPAN - s->head > s->size)
                return 0;
        }
        if (!ring_fits(t, dest, sizeof(Direct)))
            return 0;
        d.where.start = s->tail;    /* spans are multiples of 64: no skip */
        d.where.span = DIRECT_SPAN;
        d.where.offset = 0;
        d.where.length = (uint64_t)m->nbytes;
        d.address = (uint64_t)(uintptr_t)m->view.buf;
        d.pid = (int64_t)getpid();
        push(t, dest, m->flags | FLAG_STAGED | FLAG_DIRECT, m->context, m->tag, m->nbytes,
             (const char *)&d, sizeof(d));
        s->tail += DIRECT_SPAN;
        m->read_at = s->tail;
        m->direct = 2;
    }
    s->head = __atomic_load_n(staging_head(s), SC);
    if (s->head < m->read_at)
        return 0;
    if (!__atomic_load_n(staging_refused(s), SC))
        return 1;
    m->direct = 0;
    m->staged = 1;
    m->pushed = 0;
    return push_chunks(t, dest, m->flags, m->context, m->tag, m->view.buf, m->nbytes,
                       &m->pushed);
}

/* Push a queued send: its record, its direct record (and wait for its reader),
 * or its staged payload and records. */
static int
push_queued(Transport *t, int dest, Msg *m)
{
    if (m->direct)
        return push_direct(t, dest, m);
    if (m->staged)
        return push_chunks(t, dest, m->flags, m->context, m->tag,
                           m->held ? m->view.buf : m->data, m->nbytes, &m->pushed);
    return push(t, dest, m->flags, m->context, m->tag, m->nbytes, m->data, m->len);
}

static void
append(Queue *q, Msg *m)
{
    m->next = NULL;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
}

static Msg *
pop(Queue *q)
{
    Msg *m = q->head;
    if (m) {
        q->head = m->next;
        if (q->head == NULL)
            q->tail = NULL;
    }
    return m;
}

/* Push dest's queued sends while there is room; out of room, flag the channel
 * so the receiver rings our doorbell once it made room, and look once more. */
static void
flush_queue(Transport *t, int dest)
{
    Queue *q = &t->queues[dest];
    int flagged = 0;
    while (q->head) {
        Msg *m = q->head;
        if (push_queued(t, dest, m)) {
            free_msg(pop(q));
            t->queued--;
            t->pushed[dest]++;
            t->events++;
        }
        else if (flagged)
            return;
        else {
            __atomic_store_n(word(channel(t, t->me, dest), OFF_BLOCKED), 1u, SC);
            flagged = 1;
        }
    }
}

/* Queue m behind dest's earlier sends and push what fits: its ticket. */
static int64_t
enqueue(Transport *t, int dest, Msg *m)
{
    append(&t->queues[dest], m);
    t->queued++;
    t->tickets[dest]++;
    flush_queue(t, dest);
    return (int64_t)t->tickets[dest];
}

/* A record to dest, in the ring or queued behind earlier ones: 0 when it went
 * into the ring, else its ticket; -1 with an exception on failure. */
static int64_t
send_record(Transport *t, int dest, int32_t flags, int32_t context, int32_t tag,
            int64_t nbytes, const char *data, Py_ssize_t len)
{
    Msg *m;
    if (t->queues[dest].head == NULL && push(t, dest, flags, context, tag, nbytes, data, len))
        return 0;
    if ((m = new_msg(dest, flags, context, tag, nbytes, data, len)) == NULL)
        return -1;
    return enqueue(t, dest, m);
}

/* Make dest's staging ring (Python creates the segment) and announce it to dest
 * in a record of its own, ahead of any payload staged there: 0, or 1 when there
 * is no room for one in /dev/shm (the message then travels in a segment of its
 * own, which may fit), -1 with an exception. */
static int
open_staging(Transport *t, int dest)
{
    Staging *s = &t->staging_out[dest];
    PyObject *made = PyObject_CallFunction(t->new_staging, "i", dest);
    PyObject *address, *name;
    void *base;
    unsigned long long size;
    if (made == NULL)
        return -1;
    if (made == Py_None) {
        Py_DECREF(made);
        return 1;
    }
    if (!PyArg_ParseTuple(made, "OKO!", &address, &size, &PyBytes_Type, &name)) {
        Py_DECREF(made);
        return -1;
    }
    base = PyLong_AsVoidPtr(address);
    if (base == NULL || send_record(t, dest, FLAG_STAGING, 0, 0, PyBytes_GET_SIZE(name),
                                    PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name)) < 0) {
        Py_DECREF(made);
        return -1;
    }
    Py_DECREF(made);
    s->base = base;
    s->size = size;
    s->tail = s->head = 0;
    return 0;
}

/* A large payload to dest through the staging ring: 0 when it went in, else
 * its ticket (the payload held when `hold`, else copied); -1 on failure. */
static int64_t
send_staged(Transport *t, int dest, int32_t flags, int32_t context, int32_t tag,
            PyObject *data, Py_buffer *view, int hold)
{
    Msg *m;
    int64_t pushed = 0;
    int direct = hold && view->len >= t->direct_min &&
        !__atomic_load_n(staging_refused(&t->staging_out[dest]), SC);
    if (!direct && t->queues[dest].head == NULL &&
            push_chunks(t, dest, flags, context, tag, view->buf, view->len, &pushed))
        return 0;
    if ((m = new_msg(dest, flags, context, tag, view->len, view->buf,
                     hold ? 0 : view->len)) == NULL)
        return -1;
    m->staged = !direct;
    m->direct = direct;
    m->pushed = pushed;     /* the chunks pushed already */
    if (hold) {
        if (PyObject_GetBuffer(data, &m->view, PyBUF_C_CONTIGUOUS) < 0) {
            PyMem_Free(m);
            return -1;
        }
        m->held = 1;
    }
    return enqueue(t, dest, m);
}

/* ------------------------------------------------------------------ */
/* matching                                                             */
/* ------------------------------------------------------------------ */

static inline int
matches(int32_t context, int32_t source, int32_t tag, int32_t want_context,
        int32_t want_source, int32_t want_tag)
{
    return context == want_context && (want_source == ANY_SOURCE || want_source == source) &&
        (want_tag == ANY_TAG || want_tag == tag);
}

static void
unpost(Transport *t, Core *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        t->posted_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        t->posted_tail = c->prev;
    c->prev = c->next = NULL;
    c->posted = 0;
}

static void
post(Transport *t, Core *c)
{
    Py_INCREF(c);
    c->prev = t->posted_tail;
    c->next = NULL;
    if (t->posted_tail)
        t->posted_tail->next = c;
    else
        t->posted_head = c;
    t->posted_tail = c;
    c->posted = 1;
}

/* Complete c with a message whose payload (or segment name) is data[:len];
 * acknowledges a synchronous send.  -1 with an exception on failure (c is
 * then complete with ERR_OTHER's status left to Python: it raises the error). */
static int
complete(Transport *t, Core *c, int32_t source, int32_t flags, int32_t context, int32_t tag,
         int64_t nbytes, const char *data, Py_ssize_t len)
{
    int staged = (flags & FLAG_IN_SEGMENT) != 0, rc = 0;
    PyObject *name = NULL, *result;
    if (flags & FLAG_SYNC) {
        int32_t ack = context - context % SUBCONTEXTS + SYNC_ACK;
        if (send_record(t, source, 0, ack, flags >> SYNC_SHIFT, 0, "", 0) < 0)
            return -1;
    }
    c->source = source;
    c->tag = tag;
    c->flags = flags;
    c->count = nbytes;
    if (staged && (name = PyBytes_FromStringAndSize(data, len)) == NULL)
        rc = -1;
    else if (!c->has_view) {
        if (staged)
            result = PyObject_CallFunction(t->fetch, "OL", name, (long long)nbytes);
        else
            result = PyBytes_FromStringAndSize(data, (Py_ssize_t)nbytes);
        Py_XSETREF(c->payload, result);
        rc = result == NULL ? -1 : 0;
    }
    else if (nbytes > c->view.len) {
        c->error = ERR_TRUNCATE;
        if (staged) {
            result = PyObject_CallFunction(t->discard, "OL", name, (long long)nbytes);
            rc = result == NULL ? -1 : 0;
            Py_XDECREF(result);
        }
    }
    else if (staged) {
        result = PyObject_CallFunction(t->fetch, "OLO", name, (long long)nbytes, c->target);
        rc = result == NULL ? -1 : 0;
        Py_XDECREF(result);
    }
    else
        copy_large(c->view.buf, data, (size_t)nbytes);
    Py_XDECREF(name);
    /* done last: the thread that waits for it reads the payload once it sees done
     * (a copy and a fetch let the GIL go) */
    c->done = 1;
    t->events++;
    return rc;
}

/* A record that arrived from source: to the first posted receive it matches,
 * else to the unexpected messages. */
static int
arrived(Transport *t, int32_t source, int32_t flags, int32_t context, int32_t tag,
        int64_t nbytes, const char *data, Py_ssize_t len)
{
    Core *c;
    Msg *m;
    int rc;
    for (c = t->posted_head; c; c = c->next)
        if (matches(context, source, tag, c->context, c->want_source, c->want_tag)) {
            unpost(t, c);
            rc = complete(t, c, source, flags, context, tag, nbytes, data, len);
            Py_DECREF(c);
            return rc;
        }
    if ((m = new_msg(source, flags, context, tag, nbytes, data, len)) == NULL)
        return -1;
    append(&t->unexpected[source], m);
    return 0;
}

/* A source announced its staging ring: map it (Python unlinks its name then). */
static int
attach_staging(Transport *t, int source, const char *name, Py_ssize_t len)
{
    Staging *s = &t->staging_in[source];
    PyObject *made = PyObject_CallFunction(t->attach_staging, "y#", name, len);
    PyObject *address;
    unsigned long long size;
    void *base;
    if (made == NULL)
        return -1;
    if (!PyArg_ParseTuple(made, "OK", &address, &size) ||
            (base = PyLong_AsVoidPtr(address)) == NULL) {
        Py_DECREF(made);
        return -1;
    }
    Py_DECREF(made);
    s->base = base;
    s->size = size;
    return 0;
}

/* A message that arrived whole as an unexpected one: to a receive posted while
 * its chunks were arriving, if one matches, else to the unexpected messages. */
static int
settle(Transport *t, int source, Msg *m)
{
    Core *c;
    int rc;
    for (c = t->posted_head; c; c = c->next)
        if (matches(m->context, source, m->tag, c->context, c->want_source, c->want_tag)) {
            unpost(t, c);
            rc = complete(t, c, source, m->flags, m->context, m->tag, m->nbytes, m->data,
                          m->len);
            Py_DECREF(c);
            free_msg(m);
            return rc;
        }
    append(&t->unexpected[source], m);
    return 0;
}

/* The first chunk of a staged message: to the first posted receive it matches
 * (checked for truncation, a synchronous send acknowledged), else to an
 * unexpected message made to hold it all. */
static int
start_staged(Transport *t, int source, Record *r, Partial *p)
{
    Core *c;
    int64_t nbytes = (int64_t)r->nbytes;
    int32_t flags = r->flags & ~(FLAG_STAGED | FLAG_DIRECT);
    memset(p, 0, sizeof(*p));
    for (c = t->posted_head; c; c = c->next)
        if (matches(r->context, source, r->tag, c->context, c->want_source, c->want_tag))
            break;
    if (c == NULL) {
        if ((p->msg = new_msg(source, flags, r->context, r->tag, nbytes, "", 0)) == NULL)
            return -1;
        p->msg = PyMem_Realloc(p->msg, sizeof(Msg) + (size_t)nbytes);
        if (p->msg == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->msg->len = nbytes;
        p->into = p->msg->data;
        return 0;
    }
    unpost(t, c);
    p->core = c;        /* the posted list's reference */
    if ((flags & FLAG_SYNC) && send_record(t, source, 0, r->context - r->context % SUBCONTEXTS +
                                           SYNC_ACK, flags >> SYNC_SHIFT, 0, "", 0) < 0)
        return -1;
    c->source = source;
    c->tag = r->tag;
    c->flags = flags;
    c->count = nbytes;
    if (!c->has_view) {
        if ((c->payload = PyBytes_FromStringAndSize(NULL, nbytes)) == NULL)
            return -1;
        p->into = PyBytes_AS_STRING(c->payload);
    }
    else if (nbytes > c->view.len)
        c->error = ERR_TRUNCATE;    /* its chunks are dropped */
    else
        p->into = c->view.buf;
    return 0;
}

/* Give a staged record's room back in source's staging ring (up to `position`);
 * a sender waiting for room, or for its direct record to be read, goes on at
 * once: it copies the next chunk in while this rank copies the following ones out. */
static void
give_back(Transport *t, int source, uint64_t position)
{
    char *ch = channel(t, source, t->me);
    __atomic_store_n(staging_head(&t->staging_in[source]), position, SC);
    if (__atomic_load_n(word(ch, OFF_BLOCKED), SC) &&
            __atomic_exchange_n(word(ch, OFF_BLOCKED), 0u, SC))
        cell_bump(doorbell_of(t, source));
}

/* `length` more bytes of source's partial message are in: the last completes
 * the receive or queues the unexpected message. */
static int
received_part(Transport *t, int source, int64_t length, int64_t nbytes)
{
    Partial *p = &t->partial[source];
    int rc = 0;
    p->received += length;
    if (p->received < nbytes)
        return 0;
    if (p->core != NULL) {
        p->core->done = 1;
        t->events++;
        Py_DECREF(p->core);
    }
    else
        rc = settle(t, source, p->msg);
    memset(p, 0, sizeof(*p));
    return rc;
}

/* A chunk of a message staged by source: copied where the message goes, its
 * room in the staging ring given back.  (The first chunk starts the message,
 * unless a direct record the receiver could not read did.) */
static int
arrived_staged(Transport *t, int source, Record *r)
{
    Staging *s = &t->staging_in[source];
    Partial *p = &t->partial[source];
    Staged where;
    int rc = 0;
    memcpy(&where, r + 1, sizeof(where));
    if (p->core == NULL && p->msg == NULL)
        rc = start_staged(t, source, r, p);
    if (rc == 0 && p->into != NULL)
        copy_large(p->into + where.offset, staging_data(s, where.start), (size_t)where.length);
    give_back(t, source, where.start + where.span);
    if (rc < 0)
        return rc;
    return received_part(t, source, (int64_t)where.length, (int64_t)r->nbytes);
}

/* Copy n bytes at `address` in process pid to `into`: 0, else the errno. */
static int
read_peer(char *into, int64_t pid, uint64_t address, size_t n)
{
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    while (n > 0) {
        struct iovec here = {into, n}, there = {(void *)(uintptr_t)address, n};
        ssize_t moved = process_vm_readv((pid_t)pid, &here, 1, &there, 1, 0);
        if (moved <= 0) {
            error = moved < 0 ? errno : EIO;
            break;
        }
        into += moved;
        address += (uint64_t)moved;
        n -= (size_t)moved;
    }
    Py_END_ALLOW_THREADS
    return error;
}

/* A direct record from source: the message is matched (or made unexpected), then
 * copied straight from the sender's memory and the sender told it was read.
 * Refused (EPERM, or SHMRMA_VM_READV=0), the refusal is published with the
 * span given back and the matched message waits for its staged chunks.  Any
 * other failure (the sender died) leaves the record unacknowledged: the job's
 * abort checks end the waits. */
static int
arrived_direct(Transport *t, int source, Record *r)
{
    Staging *s = &t->staging_in[source];
    Partial *p = &t->partial[source];
    Direct d;
    int rc, error = 0;
    memcpy(&d, r + 1, sizeof(d));
    if ((rc = start_staged(t, source, r, p)) < 0) {
        give_back(t, source, d.where.start + d.where.span);
        return rc;
    }
    if (p->into != NULL)
        error = t->read_peers ? read_peer(p->into, d.pid, d.address, (size_t)d.where.length)
                              : EPERM;
    if (error == EPERM || error == EACCES) {
        __atomic_store_n(staging_refused(s), 1, SC);
        give_back(t, source, d.where.start + d.where.span);
        return 0;
    }
    if (error)
        return 0;
    give_back(t, source, d.where.start + d.where.span);
    return received_part(t, source, (int64_t)d.where.length, (int64_t)r->nbytes);
}

/* Take every record source has put into our ring. */
static int
drain(Transport *t, int source)
{
    char *ch = channel(t, source, t->me), *ring = ch + CHANNEL_HEADER;
    uint32_t size = (uint32_t)t->ring_bytes;
    uint32_t tail = __atomic_load_n(word(ch, OFF_TAIL), SC);
    uint32_t head = __atomic_load_n(word(ch, OFF_HEAD), __ATOMIC_RELAXED);
    int rc = 0;
    if (head == tail)
        return 0;       /* (a record's bytes are read only after its tail was seen) */
    while (head != tail) {
        uint32_t position = head % size;
        Record *r;
        if (size - position < sizeof(Record)) {
            head += size - position;
            continue;
        }
        r = (Record *)(ring + position);
        head += r->length;
        if (r->flags == PAD_FLAG)
            continue;
        if (r->flags & FLAG_STAGING)
            rc = attach_staging(t, source, (const char *)(r + 1), (Py_ssize_t)r->nbytes);
        else if (r->flags & FLAG_DIRECT)
            rc = arrived_direct(t, source, r);
        else if (r->flags & FLAG_STAGED)
            rc = arrived_staged(t, source, r);
        else {
            const char *data = (const char *)(r + 1);
            Py_ssize_t len = (r->flags & FLAG_IN_SEGMENT) ?
                (Py_ssize_t)strnlen(data, r->length - sizeof(Record)) : (Py_ssize_t)r->nbytes;
            rc = arrived(t, source, r->flags, r->context, r->tag, (int64_t)r->nbytes, data, len);
        }
        if (rc < 0)
            break;          /* the rest waits for the next progress */
    }
    __atomic_store_n(word(ch, OFF_HEAD), head, SC);
    if (__atomic_exchange_n(word(ch, OFF_BLOCKED), 0u, SC))
        cell_bump(doorbell_of(t, source));
    return rc;
}

/* Drain the rings when the doorbell rang since last time, push queued sends;
 * the doorbell value read first (wait on it for anything newer). */
static int
progress(Transport *t, int32_t *bell_out)
{
    uint32_t bell = (uint32_t)__atomic_load_n(t->doorbell, SC);
    int source, dest, rc = 0;
    if (!t->seen_valid || bell != t->seen_bell) {
        t->seen_bell = bell;
        t->seen_valid = 1;
        for (source = 0; source < t->n && rc == 0; source++)
            rc = drain(t, source);
        if (rc < 0)
            t->seen_valid = 0;  /* drain every ring again next time */
    }
    if (t->queued)
        for (dest = 0; dest < t->n; dest++)
            if (t->queues[dest].head)
                flush_queue(t, dest);
    if (bell_out)
        *bell_out = (int32_t)bell;
    return rc;
}

/* The first unexpected message matching, per source in arrival order; with
 * remove, taken out of the queue (and *prev_out unused). */
static Msg *
find(Transport *t, int32_t context, int32_t source, int32_t tag, int remove)
{
    int first = source == ANY_SOURCE ? 0 : source;
    int last = source == ANY_SOURCE ? t->n - 1 : source;
    int s;
    for (s = first; s <= last; s++) {
        Queue *q = &t->unexpected[s];
        Msg *m, *prev = NULL;
        for (m = q->head; m; prev = m, m = m->next)
            if (matches(m->context, m->peer, m->tag, context, source, tag)) {
                if (remove) {
                    if (prev)
                        prev->next = m->next;
                    else
                        q->head = m->next;
                    if (q->tail == m)
                        q->tail = prev;
                    m->next = NULL;
                }
                return m;
            }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Core                                                                 */
/* ------------------------------------------------------------------ */

static Core *
new_core(int32_t context, int32_t source, int32_t tag, PyObject *target)
{
    Core *c = PyObject_New(Core, &CoreType);
    if (c == NULL)
        return NULL;
    c->prev = c->next = NULL;
    c->posted = 0;
    c->context = context;
    c->want_source = source;
    c->want_tag = tag;
    c->has_view = 0;
    c->done = 0;
    c->source = c->tag = ANY_SOURCE;
    c->flags = c->error = 0;
    c->count = 0;
    c->payload = NULL;
    Py_INCREF(target);
    c->target = target;
    if (target != Py_None) {
        if (PyObject_GetBuffer(target, &c->view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
            Py_DECREF(c);
            return NULL;
        }
        c->has_view = 1;
    }
    return c;
}

static void
core_dealloc(Core *c)
{
    if (c->has_view)
        PyBuffer_Release(&c->view);
    Py_XDECREF(c->target);
    Py_XDECREF(c->payload);
    PyObject_Free(c);
}

static PyObject *
core_get_done(Core *c, void *closure)
{
    return PyBool_FromLong(c->done);
}

static PyObject *
core_get_payload(Core *c, void *closure)
{
    PyObject *payload = c->payload ? c->payload : Py_None;
    Py_INCREF(payload);
    return payload;
}

static PyObject *
core_get_capacity(Core *c, void *closure)
{
    return PyLong_FromSsize_t(c->has_view ? c->view.len : 0);
}

static PyGetSetDef core_getset[] = {
    {"capacity", (getter)core_get_capacity, NULL, "the target's bytes", NULL},
    {"done", (getter)core_get_done, NULL, "the receive completed", NULL},
    {"payload", (getter)core_get_payload, NULL, "an object receive's bytes", NULL},
    {NULL}
};

static PyMemberDef core_members[] = {
    {"context", T_INT, offsetof(Core, context), READONLY, "the sub-context received on"},
    {"want_source", T_INT, offsetof(Core, want_source), READONLY,
     "the world rank received from, or ANY_SOURCE"},
    {"want_tag", T_INT, offsetof(Core, want_tag), READONLY, "the tag, or ANY_TAG"},
    {"target", T_OBJECT, offsetof(Core, target), READONLY, "the buffer, or None"},
    {"source", T_INT, offsetof(Core, source), READONLY, "the sender's world rank"},
    {"tag", T_INT, offsetof(Core, tag), READONLY, "the message's tag"},
    {"flags", T_INT, offsetof(Core, flags), READONLY, "the record's flags"},
    {"error", T_INT, offsetof(Core, error), READONLY, "ERR_TRUNCATE, or 0"},
    {"count", T_LONGLONG, offsetof(Core, count), READONLY, "the message's bytes"},
    {NULL}
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Core",
    .tp_basicsize = sizeof(Core),
    .tp_dealloc = (destructor)core_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A receive of the C transport (mailbox.Core's counterpart).",
    .tp_members = core_members,
    .tp_getset = core_getset,
};

/* ------------------------------------------------------------------ */
/* Arrived                                                              */
/* ------------------------------------------------------------------ */

static PyObject *
new_arrived(Msg *m)
{
    Arrived *a = PyObject_New(Arrived, &ArrivedType);
    if (a == NULL) {
        PyMem_Free(m);
        return NULL;
    }
    a->msg = m;
    return (PyObject *)a;
}

static void
arrived_dealloc(Arrived *a)
{
    PyMem_Free(a->msg);
    PyObject_Free(a);
}

static Msg *
arrived_msg(Arrived *a)
{
    if (a->msg == NULL)
        PyErr_SetString(PyExc_ValueError, "the message was delivered already");
    return a->msg;
}

#define ARRIVED_FIELD(name, expr)                                      \
    static PyObject *                                                  \
    arrived_get_##name(Arrived *a, void *closure)                      \
    {                                                                  \
        Msg *m = arrived_msg(a);                                       \
        return m ? (expr) : NULL;                                      \
    }

ARRIVED_FIELD(source, PyLong_FromLong(m->peer))
ARRIVED_FIELD(context, PyLong_FromLong(m->context))
ARRIVED_FIELD(tag, PyLong_FromLong(m->tag))
ARRIVED_FIELD(flags, PyLong_FromLong(m->flags))
ARRIVED_FIELD(nbytes, PyLong_FromLongLong(m->nbytes))
ARRIVED_FIELD(inline_, PyBytes_FromStringAndSize(m->data, m->len))

static PyGetSetDef arrived_getset[] = {
    {"source", (getter)arrived_get_source, NULL, "the sender's world rank", NULL},
    {"context", (getter)arrived_get_context, NULL, "the sub-context", NULL},
    {"tag", (getter)arrived_get_tag, NULL, "the tag", NULL},
    {"flags", (getter)arrived_get_flags, NULL, "the record's flags", NULL},
    {"nbytes", (getter)arrived_get_nbytes, NULL, "the message's bytes", NULL},
    {"inline", (getter)arrived_get_inline_, NULL,
     "the payload, or the name of the segment holding it", NULL},
    {NULL}
};

static PyTypeObject ArrivedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Arrived",
    .tp_basicsize = sizeof(Arrived),
    .tp_dealloc = (destructor)arrived_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A message that arrived before a receive wanted it (mailbox.Arrived's "
              "counterpart).",
    .tp_getset = arrived_getset,
};

/* ------------------------------------------------------------------ */
/* Transport                                                            */
/* ------------------------------------------------------------------ */

static PyObject *
transport_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"base", "me", "nranks", "channels", "channel_bytes",
                             "ring_bytes", "ranks", "rank_block", "doorbell_offset",
                             "stage", "fetch", "discard", "staging_bytes", "chunk_bytes",
                             "new_staging", "attach_staging", "direct_min", "read_peers", NULL};
    Transport *t;
    PyObject *base_obj, *stage, *fetch, *discard, *new_staging, *attach_staging;
    void *base;
    int me, n;
    Py_ssize_t channels, channel_bytes, ring_bytes, ranks, rank_block, doorbell_offset;
    unsigned long long staging_bytes, chunk_bytes;
    Py_ssize_t direct_min;
    int read_peers;
    if (!g_setup_done) {
        PyErr_SetString(PyExc_RuntimeError, "Transport(): call transport_setup() first");
        return NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oiinnnnnn$OOOKKOOnp:Transport", kwlist,
                                     &base_obj, &me, &n, &channels, &channel_bytes,
                                     &ring_bytes, &ranks, &rank_block, &doorbell_offset,
                                     &stage, &fetch, &discard, &staging_bytes, &chunk_bytes,
                                     &new_staging, &attach_staging, &direct_min,
                                     &read_peers))
        return NULL;
    if (!(base = get_addr(base_obj, 64, "Transport")))
        return NULL;
    if (n < 1 || me < 0 || me >= n || ring_bytes < 1024 || (ring_bytes & (ring_bytes - 1))) {
        PyErr_SetString(PyExc_ValueError, "Transport(): bad rank, size or ring");
        return NULL;
    }
    t = (Transport *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->base = base;
    t->me = me;
    t->n = n;
    t->channels = channels;
    t->channel_bytes = channel_bytes;
    t->ring_bytes = ring_bytes;
    t->inline_max = ring_bytes / 4;
    t->direct_min = direct_min;
    t->read_peers = read_peers;
    t->ranks = ranks;
    t->rank_block = rank_block;
    t->doorbell_offset = doorbell_offset;
    t->doorbell = doorbell_of(t, me);
    t->unexpected = PyMem_Calloc((size_t)n, sizeof(Queue));
    t->queues = PyMem_Calloc((size_t)n, sizeof(Queue));
    t->tickets = PyMem_Calloc((size_t)n, sizeof(uint64_t));
    t->pushed = PyMem_Calloc((size_t)n, sizeof(uint64_t));
    t->heads = PyMem_Calloc((size_t)n, sizeof(uint32_t));
    t->staging_out = PyMem_Calloc((size_t)n, sizeof(Staging));
    t->staging_in = PyMem_Calloc((size_t)n, sizeof(Staging));
    t->partial = PyMem_Calloc((size_t)n, sizeof(Partial));
    if (!t->unexpected || !t->queues || !t->tickets || !t->pushed || !t->heads ||
            !t->staging_out || !t->staging_in || !t->partial) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    Py_INCREF(stage);
    Py_INCREF(fetch);
    Py_INCREF(discard);
    t->stage = stage;
    t->fetch = fetch;
    t->discard = discard;
    Py_INCREF(new_staging);
    Py_INCREF(attach_staging);
    t->new_staging = new_staging;
    t->attach_staging = attach_staging;
    t->staging_bytes = staging_bytes;
    t->chunk_bytes = chunk_bytes;
    g_current = t;
    return (PyObject *)t;
}

static void
free_queue(Queue *q)
{
    Msg *m;
    while ((m = pop(q)) != NULL)
        free_msg(m);
}

static void
transport_dealloc(Transport *t)
{
    int i;
    if (g_current == t)
        g_current = NULL;
    while (t->posted_head) {
        Core *c = t->posted_head;
        unpost(t, c);
        Py_DECREF(c);
    }
    for (i = 0; t->unexpected && i < t->n; i++)
        free_queue(&t->unexpected[i]);
    for (i = 0; t->queues && i < t->n; i++)
        free_queue(&t->queues[i]);
    PyMem_Free(t->unexpected);
    PyMem_Free(t->queues);
    PyMem_Free(t->tickets);
    PyMem_Free(t->pushed);
    PyMem_Free(t->heads);
    PyMem_Free(t->staging_out);
    PyMem_Free(t->staging_in);
    for (i = 0; t->partial && i < t->n; i++) {
        Py_XDECREF(t->partial[i].core);
        PyMem_Free(t->partial[i].msg);
    }
    PyMem_Free(t->partial);
    Py_XDECREF(t->new_staging);
    Py_XDECREF(t->attach_staging);
    Py_XDECREF(t->stage);
    Py_XDECREF(t->fetch);
    Py_XDECREF(t->discard);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* An int argument that must be a rank of the world. */
static int
world_rank(Transport *t, PyObject *obj, int any, int32_t *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if ((v < 0 || v >= t->n) && !(any && v == ANY_SOURCE)) {
        PyErr_Format(PyExc_ValueError, "world rank %ld outside 0..%d", v, t->n - 1);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static int
int32_arg(PyObject *obj, int32_t *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int32_t)v;
    return 0;
}

/* A large message to this rank itself: delivered here at once (to a posted
 * receive, else kept as an unexpected message), once everything sent to self
 * before it is in the matching engine, so it overtakes nothing. */
static int64_t
send_to_self(Transport *t, int32_t flags, int32_t context, int32_t tag, Py_buffer *view)
{
    while (1) {
        if (drain(t, t->me) < 0)
            return -1;
        if (t->queues[t->me].head == NULL)
            break;
        flush_queue(t, t->me);      /* the ring is empty: earlier sends go into it */
    }
    return arrived(t, t->me, flags, context, tag, view->len, view->buf, view->len) < 0 ? -1 : 0;
}

/* What send() answers for a send_record/send_staged result. */
static PyObject *
ticket_of(int64_t ticket)
{
    if (ticket < 0)
        return NULL;
    if (ticket == 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(ticket);
}

/* A message of view's bytes (data's) to dest, the lock held: 0 when it went in,
 * else its ticket; -1 with an exception on failure. */
static int64_t
send_payload(Transport *t, int32_t dest, int32_t context, int32_t tag, int32_t flags,
             PyObject *data, Py_buffer *view, int hold)
{
    PyObject *name;
    int64_t ticket;
    if (view->len > t->inline_max && dest == t->me)
        return send_to_self(t, flags, context, tag, view);
    if (view->len > t->inline_max && t->staging_out[dest].base == NULL &&
            open_staging(t, dest) < 0)
        return -1;
    if (view->len > t->inline_max && t->staging_out[dest].base != NULL)
        return send_staged(t, dest, flags, context, tag, data, view, hold);
    if (view->len <= t->inline_max)
        return send_record(t, dest, flags, context, tag, view->len, view->buf, view->len);
    /* no room in /dev/shm for a staging ring: a segment of its own */
    name = PyObject_CallFunctionObjArgs(t->stage, data, NULL);
    if (name == NULL || !PyBytes_Check(name)) {
        if (name && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "stage() must return bytes");
        Py_XDECREF(name);
        return -1;
    }
    ticket = send_record(t, dest, flags | FLAG_IN_SEGMENT, context, tag, view->len,
                         PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name));
    Py_DECREF(name);
    return ticket;
}

/* send(dest, context, tag, data, flags[, hold]) -> None (in the ring) or a
 * ticket.  A payload larger than a quarter of the ring streams through the
 * pair's staging ring in chunks (held, not copied, while it waits for room
 * when `hold`: the caller completes its request only once sent); to this
 * rank itself it is delivered at once; when /dev/shm has no room for a staging
 * ring, it travels in a segment of its own. */
static PyObject *
t_send(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t dest, context, tag, flags;
    Py_buffer view;
    int64_t ticket;
    int hold = 0;
    if (nargs == 6 && (hold = PyObject_IsTrue(args[5])) < 0)
        return NULL;
    if ((nargs != 6 && check_nargs("send", nargs, 5) < 0) ||
            world_rank(t, args[0], 0, &dest) < 0 || int32_arg(args[1], &context) < 0 ||
            int32_arg(args[2], &tag) < 0 || int32_arg(args[4], &flags) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[3], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    lock();
    ticket = send_payload(t, dest, context, tag, flags, args[3], &view, hold);
    unlock(t);
    PyBuffer_Release(&view);
    return ticket_of(ticket);
}

/* sent(dest, ticket) -> bool */
static PyObject *
t_sent(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t dest;
    long long ticket;
    int sent;
    if (check_nargs("sent", nargs, 2) < 0 || world_rank(t, args[0], 0, &dest) < 0)
        return NULL;
    ticket = PyLong_AsLongLong(args[1]);
    if (ticket == -1 && PyErr_Occurred())
        return NULL;
    lock();
    sent = t->pushed[dest] >= (uint64_t)ticket;
    unlock(t);
    return PyBool_FromLong(sent);
}

static PyObject *
t_queued_dests(Transport *t, PyObject *unused)
{
    PyObject *result = PyList_New(0), *rank;
    int dest;
    if (result == NULL)
        return NULL;
    lock();
    for (dest = 0; dest < t->n; dest++)
        if (t->queues[dest].head) {
            if ((rank = PyLong_FromLong(dest)) == NULL || PyList_Append(result, rank) < 0) {
                Py_XDECREF(rank);
                Py_CLEAR(result);
                break;
            }
            Py_DECREF(rank);
        }
    unlock(t);
    if (result != NULL)
        Py_SETREF(result, PyList_AsTuple(result));
    return result;
}

static PyObject *
t_progress(Transport *t, PyObject *unused)
{
    int32_t bell;
    int rc;
    lock();
    rc = progress(t, &bell);
    unlock(t);
    return rc < 0 ? NULL : PyLong_FromLong(bell);
}

/* irecv(context, source, tag, target) -> Core, matched now or posted */
static PyObject *
t_irecv(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t context, source, tag;
    Core *c;
    Msg *m;
    int rc;
    if (check_nargs("irecv", nargs, 4) < 0 || int32_arg(args[0], &context) < 0 ||
            world_rank(t, args[1], 1, &source) < 0 || int32_arg(args[2], &tag) < 0)
        return NULL;
    if ((c = new_core(context, source, tag, args[3])) == NULL)
        return NULL;
    lock();
    rc = progress(t, NULL);
    if (rc == 0 && (m = find(t, context, source, tag, 1)) != NULL) {
        rc = complete(t, c, m->peer, m->flags, m->context, m->tag, m->nbytes, m->data,
                      m->len);
        PyMem_Free(m);
    }
    else if (rc == 0)
        post(t, c);
    unlock(t);
    if (rc < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static PyObject *
t_cancel(Transport *t, PyObject *core)
{
    Core *c = (Core *)core;
    int posted;
    if (!PyObject_TypeCheck(core, &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "cancel(): expecting a Core");
        return NULL;
    }
    lock();
    posted = c->posted;
    if (posted)
        unpost(t, c);
    unlock(t);
    if (posted)
        Py_DECREF(c);
    return PyBool_FromLong(posted);
}

/* find(context, source, tag, remove) -> Arrived or None */
static PyObject *
t_find(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t context, source, tag;
    int remove;
    Msg *m;
    if (check_nargs("find", nargs, 4) < 0 || int32_arg(args[0], &context) < 0 ||
            world_rank(t, args[1], 1, &source) < 0 || int32_arg(args[2], &tag) < 0 ||
            (remove = PyObject_IsTrue(args[3])) < 0)
        return NULL;
    lock();
    m = find(t, context, source, tag, remove);
    if (m != NULL && !remove)
        m = new_msg(m->peer, m->flags, m->context, m->tag, m->nbytes, m->data, m->len);
    unlock(t);
    if (m != NULL)
        return new_arrived(m);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* deliver(arrived, target) -> Core completed by the message */
static PyObject *
t_deliver(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    Arrived *a;
    Msg *m;
    Core *c;
    int rc;
    if (check_nargs("deliver", nargs, 2) < 0)
        return NULL;
    if (!PyObject_TypeCheck(args[0], &ArrivedType)) {
        PyErr_SetString(PyExc_TypeError, "deliver(): expecting an Arrived");
        return NULL;
    }
    a = (Arrived *)args[0];
    if ((m = arrived_msg(a)) == NULL)
        return NULL;
    if ((c = new_core(m->context, ANY_SOURCE, ANY_TAG, args[1])) == NULL)
        return NULL;
    a->msg = NULL;
    lock();
    rc = complete(t, c, m->peer, m->flags, m->context, m->tag, m->nbytes, m->data, m->len);
    unlock(t);
    PyMem_Free(m);
    if (rc < 0) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

/* wait_core(core, timeout) -> bool: progress and wait until the core is done */
static PyObject *
t_wait_core(Transport *t, PyObject *const *args, Py_ssize_t nargs)
{
    Core *c;
    double timeout;
    int64_t deadline;
    int32_t bell, seen;
    int rc;
    if (check_nargs("wait_core", nargs, 2) < 0 ||
            get_timeout(args[1], "wait_core", &timeout) < 0)
        return NULL;
    if (!PyObject_TypeCheck(args[0], &CoreType)) {
        PyErr_SetString(PyExc_TypeError, "wait_core(): expecting a Core");
        return NULL;
    }
    c = (Core *)args[0];
    deadline = now_ns() + (int64_t)(timeout * 1e9);
    lock();
    for (;;) {
        int64_t left;
        if ((rc = progress(t, &bell)) < 0 || c->done)
            break;
        left = deadline - now_ns();
        if (left <= 0)
            break;
        if ((rc = wait_changed(t->doorbell, bell, left * 1e-9, &seen)) < 0)
            break;
    }
    unlock(t);
    return rc < 0 ? NULL : PyBool_FromLong(c->done);
}

static PyObject *
t_leftovers(Transport *t, PyObject *unused)
{
    PyObject *tags = PyList_New(0), *tag, *result;
    Py_ssize_t posted = 0;
    Core *c;
    int s;
    if (tags == NULL)
        return NULL;
    lock();
    for (s = 0; s < t->n && tags; s++) {
        Msg *m;
        for (m = t->unexpected[s].head; m; m = m->next) {
            if ((tag = PyLong_FromLong(m->tag)) == NULL || PyList_Append(tags, tag) < 0) {
                Py_XDECREF(tag);
                Py_CLEAR(tags);
                break;
            }
            Py_DECREF(tag);
        }
    }
    for (c = t->posted_head; c; c = c->next)
        posted++;
    unlock(t);
    if (tags == NULL)
        return NULL;
    result = Py_BuildValue("(On)", tags, posted);
    Py_DECREF(tags);
    return result;
}

static PyObject *
t_get_doorbell(Transport *t, void *closure)
{
    return PyLong_FromVoidPtr(t->doorbell);
}

#define TM(name, flags, doc) {#name, (PyCFunction)(void (*)(void))t_##name, flags, doc}

static PyMethodDef transport_methods[] = {
    TM(send, METH_FASTCALL, "send(dest, context, tag, data, flags[, hold]) -> None once "
       "in the ring, else a ticket for sent() (the data copied, or held with hold)."),
    TM(sent, METH_FASTCALL, "sent(dest, ticket) -> bool: the queued send is in the ring."),
    TM(queued_dests, METH_NOARGS, "queued_dests() -> the ranks queued sends wait to reach."),
    TM(progress, METH_NOARGS, "progress() -> the doorbell value read before draining."),
    TM(irecv, METH_FASTCALL, "irecv(context, source, tag, target) -> Core."),
    TM(cancel, METH_O, "cancel(core) -> bool: the posted receive was taken back."),
    TM(find, METH_FASTCALL, "find(context, source, tag, remove) -> Arrived or None."),
    TM(deliver, METH_FASTCALL, "deliver(arrived, target) -> Core completed by it."),
    TM(wait_core, METH_FASTCALL, "wait_core(core, timeout) -> bool: progress and wait "
       "until the core is done."),
    TM(leftovers, METH_NOARGS, "leftovers() -> (unexpected messages' tags, posted receives)."),
    {NULL}
};

static PyMemberDef transport_members[] = {
    {"queued", T_PYSSIZET, offsetof(Transport, queued), READONLY,
     "sends waiting for room in a ring"},
    {"inline_max", T_PYSSIZET, offsetof(Transport, inline_max), READONLY,
     "the largest payload that travels in the ring"},
    {"ring_bytes", T_PYSSIZET, offsetof(Transport, ring_bytes), READONLY,
     "the bytes of each ring"},
    {NULL}
};

static PyGetSetDef transport_getset[] = {
    {"doorbell", (getter)t_get_doorbell, NULL, "this rank's doorbell (a wait cell)", NULL},
    {NULL}
};

static PyTypeObject TransportType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.Transport",
    .tp_basicsize = sizeof(Transport),
    .tp_dealloc = (destructor)transport_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "This process's point-to-point transport and matching state (see "
              "shmrma/mailbox.py for the interface).",
    .tp_methods = transport_methods,
    .tp_members = transport_members,
    .tp_getset = transport_getset,
    .tp_new = transport_new,
};

/* ------------------------------------------------------------------ */
/* CommCore                                                             */
/* ------------------------------------------------------------------ */

static PyObject *
commcore_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* the subclass's arguments are its own: bind() gives the members */
    return type->tp_alloc(type, 0);
}

static void
commcore_dealloc(CommCore *c)
{
    PyMem_Free(c->ranks);
    PyMem_Free(c->to_rank);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* _bind(context, ranks, world_size, world_rank): the communicator's context and
 * members, and who this process is */
static PyObject *
commcore_bind(CommCore *c, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *seq;
    Py_ssize_t i, size;
    long context, world_size, world_rank;
    int32_t *ranks, *to_rank;
    if (check_nargs("_bind", nargs, 4) < 0)
        return NULL;
    context = PyLong_AsLong(args[0]);
    world_size = PyLong_AsLong(args[2]);
    world_rank = PyLong_AsLong(args[3]);
    if ((context == -1 || world_size == -1 || world_rank == -1) && PyErr_Occurred())
        return NULL;
    if (world_size < 1 || context < 0 || context > INT32_MAX / 16 || world_rank < 0 ||
            world_rank >= world_size) {
        PyErr_SetString(PyExc_ValueError, "_bind(): bad context, world size or rank");
        return NULL;
    }
    if ((seq = PySequence_Fast(args[1], "_bind(): ranks must be a sequence")) == NULL)
        return NULL;
    size = PySequence_Fast_GET_SIZE(seq);
    ranks = PyMem_Calloc(size ? (size_t)size : 1, sizeof(int32_t));
    to_rank = PyMem_Malloc((size_t)world_size * sizeof(int32_t));
    if (ranks == NULL || to_rank == NULL) {
        PyMem_Free(ranks);
        PyMem_Free(to_rank);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (i = 0; i < world_size; i++)
        to_rank[i] = -1;
    for (i = 0; i < size; i++) {
        long w = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (w < 0 || w >= world_size) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "_bind(): a rank outside the world");
            PyMem_Free(ranks);
            PyMem_Free(to_rank);
            Py_DECREF(seq);
            return NULL;
        }
        ranks[i] = (int32_t)w;
        to_rank[w] = (int32_t)i;
    }
    Py_DECREF(seq);
    PyMem_Free(c->ranks);
    PyMem_Free(c->to_rank);
    c->ranks = ranks;
    c->to_rank = to_rank;
    c->context = (int32_t)context;
    c->size = (int32_t)size;
    c->world_size = (int32_t)world_size;
    c->world_rank = (int32_t)world_rank;
    Py_RETURN_NONE;
}

/* _bind_area(large, address, slot): a collective area is mapped (collarea.py) */
static PyObject *
commcore_bind_area(CommCore *c, PyObject *const *args, Py_ssize_t nargs)
{
    int large;
    void *base;
    Py_ssize_t slot;
    if (check_nargs("_bind_area", nargs, 3) < 0 || (large = PyObject_IsTrue(args[0])) < 0)
        return NULL;
    if (!(base = get_addr(args[1], 64, "_bind_area")))
        return NULL;
    slot = PyLong_AsSsize_t(args[2]);
    if (slot == -1 && PyErr_Occurred())
        return NULL;
    if (slot < 64 || slot % 64) {
        PyErr_SetString(PyExc_ValueError, "_bind_area(): bad slot size");
        return NULL;
    }
    c->areas[large].base = base;
    c->areas[large].slot = slot;
    Py_RETURN_NONE;
}

/* _unbind_areas(): the areas are about to be unmapped */
static PyObject *
commcore_unbind_areas(CommCore *c, PyObject *unused)
{
    c->areas[0].base = c->areas[1].base = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef commcore_methods[] = {
    {"_bind", (PyCFunction)(void (*)(void))commcore_bind, METH_FASTCALL,
     "_bind(context, ranks, world_size, world_rank): the communicator the fast paths "
     "serve."},
    {"_bind_area", (PyCFunction)(void (*)(void))commcore_bind_area, METH_FASTCALL,
     "_bind_area(large, address, slot): a collective area of the communicator is mapped."},
    {"_unbind_areas", (PyCFunction)commcore_unbind_areas, METH_NOARGS,
     "_unbind_areas(): the collective areas are about to be unmapped."},
    {NULL}
};

static PyMemberDef commcore_members[] = {
    {"freed", T_INT, offsetof(CommCore, freed), 0, "the communicator was freed"},
    /* per collective area (collarea.py): its steps taken so far, the counter's
     * value once the last step's arrivals are in, and the last step every member
     * finished reading as far as this one knows (all mod 2**32) */
#define AREA_FIELD(name, which, field) \
    {name, T_UINT, offsetof(CommCore, areas[which].field), 0, "see collarea.Area"}
    AREA_FIELD("coll_seq", 0, seq), AREA_FIELD("large_seq", 1, seq),
    AREA_FIELD("coll_target", 0, target), AREA_FIELD("large_target", 1, target),
    AREA_FIELD("coll_clear", 0, clear), AREA_FIELD("large_clear", 1, clear),
#undef AREA_FIELD
    {NULL}
};

PyTypeObject CommCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shmrma._native.CommCore",
    .tp_basicsize = sizeof(CommCore),
    .tp_dealloc = (destructor)commcore_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "What the point-to-point fast paths know of a communicator (comm.CommState "
              "derives from it).",
    .tp_methods = commcore_methods,
    .tp_members = commcore_members,
    .tp_new = commcore_new,
};

/* ------------------------------------------------------------------ */
/* fast paths of the point-to-point calls                               */
/* ------------------------------------------------------------------ */

/*
 * Send, Recv, send, recv, Isend, Irecv and their kin in their common case,
 * under the fast path's contract (shmrma/fastpath.py): an int rank and tag
 * in range, a C-contiguous buffer of a plain format (or pickled bytes), a
 * payload that fits the ring.  Anything else misses (False) with nothing
 * touched, and comm.py's Python path does the call or raises its error.
 */

#define MISSING (-99)

static CommCore *
fast_comm(PyObject *state)
{
    CommCore *c = (CommCore *)state;
    if (!g_fast_enabled || g_current == NULL || !PyObject_TypeCheck(state, &CommCoreType) ||
            c->freed || c->ranks == NULL || c->world_size != g_current->n)
        return NULL;
    return c;
}

/* An exact int in low..high, or the wildcard; else MISSING. */
static int32_t
fast_int(PyObject *obj, long low, long high, int any, int32_t wildcard)
{
    long v;
    if (!PyLong_CheckExact(obj))
        return MISSING;
    v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return MISSING;
    }
    if (any && v == wildcard)
        return wildcard;
    return v >= low && v <= high ? (int32_t)v : MISSING;
}

/* A member rank (or ANY_SOURCE with any), else MISSING. */
static inline int32_t
fast_rank(CommCore *c, PyObject *obj, int any)
{
    return fast_int(obj, 0, c->size - 1, any, ANY_SOURCE);
}

/* A tag (or ANY_TAG with any), else MISSING. */
static inline int32_t
fast_tag(PyObject *obj, int any)
{
    return fast_int(obj, 0, TAG_UB, any, ANY_TAG);
}

/* The communicator, source and tag of a fast receive, and its buffer usable
 * (None: an object receive); 0, or -1 for a miss. */
static int
receive_args(PyObject *state, PyObject *buf, PyObject *source_obj, PyObject *tag_obj,
             CommCore **c, int32_t *source, int32_t *tag)
{
    Operand o;
    if (!(*c = fast_comm(state)) || (*source = fast_rank(*c, source_obj, 1)) == MISSING ||
            (*tag = fast_tag(tag_obj, 1)) == MISSING)
        return -1;
    if (buf != Py_None) {
        if (operand_get(buf, 1, &o) < 0)
            return -1;
        operand_release(&o);
    }
    return 0;
}

/* A fast send's record into the ring, when nothing waits before it and it fits:
 * whether it went in. */
static int
fast_push(Transport *t, int32_t world, int32_t flags, int32_t context, int32_t tag,
          const char *data, Py_ssize_t len)
{
    int pushed;
    if (len > t->inline_max)
        return 0;
    lock();
    pushed = t->queues[world].head == NULL &&
        push(t, world, flags, context * SUBCONTEXTS + P2P, tag, len, data, len);
    unlock(t);
    return pushed;
}

/* p2p_send(state, buf, dest, tag, flags) -> bool: the message is in the ring */
static PyObject *
n_p2p_send(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    Transport *t = g_current;
    int32_t dest, tag, world;
    long flags;
    Operand o;
    int pushed;
    const char *data;
    Py_ssize_t len;
    if (check_nargs("p2p_send", nargs, 5) < 0)
        return NULL;
    if (!(c = fast_comm(args[0])) || (dest = fast_rank(c, args[2], 0)) == MISSING ||
            (tag = fast_tag(args[3], 0)) == MISSING || (flags = plain_int(args[4])) < 0)
        Py_RETURN_FALSE;
    world = c->ranks[dest];
    if (PyBytes_CheckExact(args[1])) {
        data = PyBytes_AS_STRING(args[1]);
        len = PyBytes_GET_SIZE(args[1]);
        return PyBool_FromLong(fast_push(t, world, (int32_t)flags, c->context, tag, data,
                                         len));
    }
    if (operand_get(args[1], 0, &o) < 0)
        Py_RETURN_FALSE;
    pushed = fast_push(t, world, (int32_t)flags, c->context, tag, o.view.buf, o.view.len);
    operand_release(&o);
    return PyBool_FromLong(pushed);
}

/* p2p_sendobj(state, obj, dest, tag) -> True (sent), the pickled bytes (missed
 * after pickling: the Python path sends them), or MISS (missed before) */
static PyObject *
n_p2p_sendobj(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    Transport *t = g_current;
    int32_t dest, tag, world;
    char quick[QUICK_PICKLE_MAX];
    const char *pickled;
    Py_ssize_t len;
    PyObject *data = NULL;
    if (check_nargs("p2p_sendobj", nargs, 4) < 0)
        return NULL;
    if (!(c = fast_comm(args[0])) || (dest = fast_rank(c, args[2], 0)) == MISSING ||
            (tag = fast_tag(args[3], 0)) == MISSING) {
        Py_INCREF(g_miss);
        return g_miss;
    }
    if ((len = quick_dumps(args[1], quick)) >= 0)
        pickled = quick;
    else {
        data = pickle_dumps(args[1]);
        if (data == NULL || !PyBytes_CheckExact(data))
            return data;
        pickled = PyBytes_AS_STRING(data);
        len = PyBytes_GET_SIZE(data);
    }
    world = c->ranks[dest];
    if (fast_push(t, world, FLAG_PICKLED, c->context, tag, pickled, len)) {
        Py_XDECREF(data);
        Py_RETURN_TRUE;
    }
    return data != NULL ? data : PyBytes_FromStringAndSize(quick, len);
}

static PyObject *g_str_fields;

/* Is `status` None or a Status? Anything else is the Python path's to refuse,
 * before anything is received. */
static inline int
status_arg(PyObject *status)
{
    return status == Py_None ||
        (g_status_type != NULL && PyObject_TypeCheck(status, g_status_type));
}

/* Status._fill(source, tag, count) of a completed receive (status_arg passed),
 * written straight into the Status's five C ints (shmrma/status.py: MPICH's
 * MPI_Status layout). */
static int
fill_status(CommCore *c, PyObject *status, Core *core)
{
    PyObject *fields;
    Py_buffer view;
    int32_t *f;
    int rc;
    if (status == Py_None)
        return 0;
    if ((fields = PyObject_GetAttr(status, g_str_fields)) == NULL)
        return -1;
    rc = PyObject_GetBuffer(fields, &view, PyBUF_WRITABLE);
    Py_DECREF(fields);
    if (rc < 0)
        return -1;
    if (view.len < 5 * (Py_ssize_t)sizeof(int32_t)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "a Status holds five C ints");
        return -1;
    }
    f = (int32_t *)view.buf;
    f[0] = (int32_t)(uint32_t)((uint64_t)core->count & 0xFFFFFFFFu);   /* count_lo */
    f[1] = (int32_t)(((uint64_t)core->count >> 32) << 1);  /* count_hi, not cancelled */
    f[2] = c->to_rank[core->source];
    f[3] = core->tag;
    f[4] = 0;                                               /* MPI_SUCCESS */
    PyBuffer_Release(&view);
    return 0;
}

/* The receive of a fast call, matched or posted, and waited for during one
 * slice: NULL with an exception (nothing left posted), else the core. */
static Core *
fast_receive(CommCore *c, PyObject *target, int32_t source, int32_t tag, int wait)
{
    Transport *t = g_current;
    int32_t context = c->context * SUBCONTEXTS + P2P, bell, seen;
    int32_t world = source == ANY_SOURCE ? ANY_SOURCE : c->ranks[source];
    int64_t deadline;
    Msg *m;
    int rc;
    Core *core = new_core(context, world, tag, target);
    if (core == NULL)
        return NULL;
    lock();
    if ((rc = progress(t, &bell)) < 0)
        goto done;
    if ((m = find(t, context, world, tag, 1)) != NULL) {
        rc = complete(t, core, m->peer, m->flags, m->context, m->tag, m->nbytes, m->data,
                      m->len);
        PyMem_Free(m);
        goto done;
    }
    post(t, core);
    deadline = now_ns() + (int64_t)(WAIT_SLICE * 1e9);
    while (wait && !core->done) {
        int64_t left = deadline - now_ns();
        if (left <= 0)
            break;
        if ((rc = wait_changed(t->doorbell, bell, left * 1e-9, &seen)) < 0 ||
                (rc = progress(t, &bell)) < 0) {
            if (core->posted) {
                unpost(t, core);
                Py_DECREF(core);
            }
            break;
        }
    }
done:
    unlock(t);
    if (rc < 0) {
        Py_DECREF(core);
        return NULL;
    }
    return core;
}

/* p2p_recv(state, buf, source, tag, status) -> True (received, status
 * filled), False (missed), or the Core still to complete in Python (not yet
 * arrived after a slice, or an error to raise) */
static PyObject *
n_p2p_recv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    int32_t source, tag;
    Core *core;
    if (check_nargs("p2p_recv", nargs, 5) < 0)
        return NULL;
    if (args[1] == Py_None || !status_arg(args[4]) ||
            receive_args(args[0], args[1], args[2], args[3], &c, &source, &tag) < 0)
        Py_RETURN_FALSE;
    if ((core = fast_receive(c, args[1], source, tag, 1)) == NULL)
        return NULL;
    if (core->done && !core->error) {
        int rc = fill_status(c, args[4], core);
        Py_DECREF(core);
        if (rc < 0)
            return NULL;
        Py_RETURN_TRUE;
    }
    return (PyObject *)core;
}

/* p2p_recvobj(state, source, tag, status) -> the object, MISS (missed), or the
 * Core still to complete in Python */
static PyObject *
n_p2p_recvobj(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    int32_t source, tag;
    Core *core;
    PyObject *obj;
    if (check_nargs("p2p_recvobj", nargs, 4) < 0)
        return NULL;
    if (!status_arg(args[3]) ||
            receive_args(args[0], Py_None, args[1], args[2], &c, &source, &tag) < 0) {
        Py_INCREF(g_miss);
        return g_miss;
    }
    if ((core = fast_receive(c, Py_None, source, tag, 1)) == NULL)
        return NULL;
    if (!core->done)
        return (PyObject *)core;
    if (fill_status(c, args[3], core) < 0) {
        Py_DECREF(core);
        return NULL;
    }
    /* an empty message is None, as mpi4py loads it */
    if (core->count)
        obj = pickle_loads(core->payload);
    else {
        obj = Py_None;
        Py_INCREF(obj);
    }
    Py_DECREF(core);
    return obj;
}

/* p2p_irecv(state, buf, source, tag) -> the Core (matched or posted), or False */
static PyObject *
n_p2p_irecv(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    CommCore *c;
    int32_t source, tag;
    if (check_nargs("p2p_irecv", nargs, 4) < 0)
        return NULL;
    if (receive_args(args[0], args[1], args[2], args[3], &c, &source, &tag) < 0)
        Py_RETURN_FALSE;
    return (PyObject *)fast_receive(c, args[1], source, tag, 0);
}

/* transport_setup(**constants): the layout and codes, from their Python definitions. */
static PyObject *
n_transport_setup(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"channel_header", "off_head", "off_tail", "off_blocked",
                             "flag_pickled", "flag_in_segment", "flag_sync", "sync_shift",
                             "pad_flag", "subcontexts", "sync_ack", "any_source", "any_tag",
                             "err_truncate", "p2p", "tag_ub", "wait_slice",
                             "miss", "flag_staged", "flag_staging", "flag_direct",
                             "staging_header", "status_type", NULL};
    PyObject *miss, *status_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$nnnniiiiiiiiiiiidOiiinO!:transport_setup",
                                     kwlist,
                                     &CHANNEL_HEADER, &OFF_HEAD, &OFF_TAIL, &OFF_BLOCKED,
                                     &FLAG_PICKLED, &FLAG_IN_SEGMENT, &FLAG_SYNC, &SYNC_SHIFT,
                                     &PAD_FLAG, &SUBCONTEXTS, &SYNC_ACK, &ANY_SOURCE,
                                     &ANY_TAG, &ERR_TRUNCATE, &P2P, &TAG_UB, &WAIT_SLICE,
                                     &miss, &FLAG_STAGED,
                                     &FLAG_STAGING, &FLAG_DIRECT, &STAGING_HEADER,
                                     &PyType_Type, &status_type))
        return NULL;
    Py_INCREF(miss);
    Py_XSETREF(g_miss, miss);
    Py_INCREF(status_type);
    Py_XSETREF(g_status_type, (PyTypeObject *)status_type);
    g_setup_done = 1;
    Py_RETURN_NONE;
}

static PyMethodDef module_functions[] = {
    {"p2p_send", (PyCFunction)(void (*)(void))n_p2p_send, METH_FASTCALL,
     "p2p_send(state, buf, dest, tag, flags) -> bool: sent, or missed (nothing done)."},
    {"p2p_recv", (PyCFunction)(void (*)(void))n_p2p_recv, METH_FASTCALL,
     "p2p_recv(state, buf, source, tag, status) -> True, False (missed), or the Core "
     "to complete in Python."},
    {"p2p_recvobj", (PyCFunction)(void (*)(void))n_p2p_recvobj, METH_FASTCALL,
     "p2p_recvobj(state, source, tag, status) -> the object, MISS, or the Core."},
    {"p2p_sendobj", (PyCFunction)(void (*)(void))n_p2p_sendobj, METH_FASTCALL,
     "p2p_sendobj(state, obj, dest, tag) -> True (sent), the pickled bytes (the Python "
     "path sends them), or MISS."},
    {"p2p_irecv", (PyCFunction)(void (*)(void))n_p2p_irecv, METH_FASTCALL,
     "p2p_irecv(state, buf or None, source, tag) -> the Core, or False (missed)."},
    {"transport_setup", (PyCFunction)(void (*)(void))n_transport_setup,
     METH_VARARGS | METH_KEYWORDS,
     "transport_setup(**constants): the ring layout, record flags and codes the transport "
     "shares with Python."},
    {NULL}
};

static int
add_type(PyObject *module, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0)
        return -1;
    Py_INCREF(type);
    if (PyModule_AddObject(module, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

int
transport_init(PyObject *module)
{
    g_str_fields = PyUnicode_InternFromString("_fields");
    if (!g_str_fields)
        return -1;
    if (add_type(module, &CommCoreType, "CommCore") < 0 ||
            add_type(module, &CoreType, "Core") < 0 ||
            add_type(module, &ArrivedType, "Arrived") < 0 ||
            add_type(module, &TransportType, "Transport") < 0)
        return -1;
    return PyModule_AddFunctions(module, module_functions);
}
