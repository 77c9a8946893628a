/*
 * The rings of point-to-point messages: how a record travels from one rank to
 * another, both ends (the C engine of p2p/transport.py, whose docstring tells
 * the protocol; its Mailbox is the Python twin).
 *
 * One single-producer, single-consumer ring per ordered pair of ranks in the
 * world segment (core/job.py lays them out): records of a 24-byte header and
 * the payload padded to 8 bytes, the receiver's doorbell bumped after every
 * record.  A send that finds no room waits in this rank's queue for its
 * destination, pushed again at every progress.  A payload larger than a
 * quarter of the ring streams through the pair's staging ring in chunks, or,
 * from SHMRMA_DIRECT_MIN bytes (off by default), the receiver reads it from
 * the sender's memory (see Direct); when /dev/shm has no room for a staging
 * ring it travels in a segment of its own, which Python creates and reads
 * (core/segments.py).  The receiving end drains the rings into matching
 * (p2p/matching.c).  The callers hold the rank's MPI lock (p2p/transport.c).
 */
#include "p2p.h"

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

/* --- the sending end: records into the pair's ring, or queued for room --------- */

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
int
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

/* Push dest's queued sends while there is room; out of room, flag the channel
 * so the receiver rings our doorbell once it made room, and look once more. */
void
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
int64_t
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
int
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
int64_t
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

/* --- the receiving end ----------------------------------------------------- */

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
int
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
int
progress(Transport *t, int32_t *bell_out)
{
    uint32_t bell = (uint32_t)__atomic_load_n(t->doorbell, SC);
    int source, dest, rc = 0, live;
    if (!t->seen_valid || bell != t->seen_bell) {
        t->seen_bell = bell;
        t->seen_valid = 1;
        live = (int)__atomic_load_n(t->taken, __ATOMIC_ACQUIRE);
        if (live > t->n)
            live = t->n;
        for (source = 0; source < live && rc == 0; source++)
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
