/*
 * csrc/types/: data as the C paths take it (the C side of shmrma/types/).
 *
 *   buffers.c     buffer operands (C-contiguous buffers of a plain native
 *                 format) and the vector messages of the collectives
 *                 (types/buffers.py)
 *   op.c          the predefined ops' element-wise kernels, as numpy computes
 *                 them, and the ops the C paths know (types/op.py)
 *   msgpickle.c   the pickles of the objects small messages carry most often,
 *                 written and read byte for byte as pickle does
 *                 (types/msgpickle.py)
 *
 * This header declares what the communication paths take from them.
 */
#ifndef SHMRMA_TYPES_H
#define SHMRMA_TYPES_H

#include "../core/core.h"

/* --- buffer operands (buffers.c) and reduction kernels (op.c) ------------------ */

static inline int
overlap(const void *a, Py_ssize_t na, const void *b, Py_ssize_t nb)
{
    return (const char *)a < (const char *)b + nb && (const char *)b < (const char *)a + na;
}

/* The ops the kernels know, in the order rma_setup() receives them. */
enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_BAND, OP_BOR, OP_BXOR,
       OP_LAND, OP_LOR, OP_LXOR, OP_REPLACE, OP_NO_OP, N_OPS };
extern PyObject *g_ops[N_OPS];

/* Element types.  E_RAW is any other known format: copied, never combined. */
enum { E_RAW, E_I8, E_U8, E_I16, E_U16, E_I32, E_I64, E_U32, E_U64, E_F32, E_F64 };

#define IS_INT(e) ((e) >= E_I8 && (e) <= E_U64)
#define IS_FLOAT(e) ((e) == E_F32 || (e) == E_F64)

/* A buffer argument and its element type.  view.buf and view.len are the
 * message's bytes (message_get narrows them to its count and displacement);
 * operand_release gives the exporter back the view it made. */
typedef struct {
    Py_buffer view;
    char code;                  /* the typecode; 0: no format, or a datatype without one */
    int etype;
    int datatype;               /* the MPI datatype, an index of datatypes_setup's table
                                 * (a buffer's own: its format's); -1 unknown */
    Py_ssize_t count;           /* items of the message */
    Py_ssize_t extent;          /* bytes of one (its datatype's extent) */
    void *whole;                /* the exporter's view.buf and view.len */
    Py_ssize_t whole_len;
} Operand;

/* A C-contiguous buffer with a known format whose item size agrees; -1 (no
 * error set) otherwise. */
int operand_get(PyObject *obj, int writable, Operand *o);
void operand_release(Operand *o);
/* A message (types/buffers.py's message): a buffer operand_get takes, or
 * [buf, datatype], [buf, count], [buf, count, datatype], [buf, (count, displ),
 * datatype], [buf, count, displ, datatype] with ints >= 0 (or None) and a
 * predefined datatype datatypes_setup named: the buffer into *o, its view
 * narrowed to the message's bytes (with `blocks` > 1, a collective's: the
 * count is one block's).  -1 (no error set): a miss, nothing held, for the
 * Python path to do or refuse. */
int message_get(PyObject *msg, int writable, int blocks, Operand *o);

/* A rank's part of a buffer, in bytes. */
typedef struct {
    Py_ssize_t at, len;
} Span;

/* The predefined datatypes a message may name: a sequence of (datatype,
 * extent > 0, typecode), and the datatype a buffer format means as a sequence
 * of (format, datatype), "" for none (types/buffers.py's _predefined_datatypes
 * and _format_datatypes).  -1 with an error set. */
int set_datatypes(PyObject *triples, PyObject *formats);
/* A vector message's counts (or, `displs`, its displacements) into each span's
 * len (at), in items: an int for every rank (the displacements' stride) or a
 * list or tuple of an int per rank, each >= 0.  -1 (no error set): a miss. */
int per_rank(PyObject *obj, int n, Span *spans, int displs);
/* A vector collective's message (types/buffers.py's vector_message) in the
 * forms C takes (see buffers.c): the buffer into *op, each of the n ranks'
 * parts into spans.  -1 (no error set): a miss, nothing held. */
int vector_get(PyObject *msg, int writable, int n, Operand *op, Span *spans);

/* A call's send and receive buffers, each there or not. */
typedef struct {
    Operand send, recv;
    int has_send, has_recv;
} Pair;

static inline void
pair_release(Pair *p)
{
    if (p->has_send)
        operand_release(&p->send);
    if (p->has_recv)
        operand_release(&p->recv);
    p->has_send = p->has_recv = 0;
}

/* Do the two buffers share bytes? */
static inline int
pair_overlaps(Pair *p)
{
    return overlap(p->send.view.buf, p->send.view.len, p->recv.view.buf, p->recv.view.len);
}

/* target[i] = incoming[i] op target[i] over nbytes, the old target bytes to
 * result first when not NULL. */
void combine_all(int etype, int op, const char *incoming, char *target, char *result,
                 Py_ssize_t nbytes);
/* into = fold op part over nbytes: a reduction folding one rank's part into the
 * fold of the ranks before it (types/op.py's apply(fold, part) order, bit for
 * bit); into may be fold itself. */
void fold_all(int etype, int op, const char *fold, const char *part, char *into,
              Py_ssize_t nbytes);
/* The op's index when it is a registered predefined op defined on etype for
 * this kind of call, -1 otherwise. */
int op_code(PyObject *op, int etype, int fetches);

/* --- pickles of objects in messages (msgpickle.c) ------------------------------- */

#define QUICK_PICKLE_MAX 288    /* the longest pickle quick_dumps writes */

/* obj's pickle into out[:QUICK_PICKLE_MAX] when obj is of a kind written here
 * (int32, float, bool, None, str and bytes up to 255 bytes): its length, else
 * -1 with no error set. */
Py_ssize_t quick_dumps(PyObject *obj, char *out);
/* The object pickled in data[:len] when it is a pickle quick_dumps writes;
 * NULL with no error set otherwise (pickle.loads then reads it). */
PyObject *quick_loads(const char *data, Py_ssize_t len);
/* pickle.dumps(obj, protocol) and pickle.loads(data), quick where they can be */
PyObject *pickle_dumps(PyObject *obj);
PyObject *pickle_loads(PyObject *data);

/* --- this folder's parts of the module ---------------------------------------- */

int buffers_init(PyObject *module);
int op_init(PyObject *module);
int msgpickle_init(PyObject *module);

#endif
