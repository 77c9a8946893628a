/*
 * The predefined ops (shmrma/types/op.py) in C: the element-wise kernels of the
 * accumulates and the reductions, as numpy computes them, and the ops the C
 * paths know (RMA_OPS, in the order rma_setup() receives their Op objects).
 */
#include "types.h"

static const char *const op_names[N_OPS] = {
    "SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR",
    "LAND", "LOR", "LXOR", "REPLACE", "NO_OP"};
PyObject *g_ops[N_OPS];

/* --- element kernels: target[i] = incoming[i] op target[i], as numpy computes it --- */

/* One loop per (element type, op), all made by EACH from the op's expression
 * of a (incoming) and b (existing).  The buffers never overlap (the callers
 * check), hence restrict; elements move through memcpy because window memory
 * need not be aligned for T.  Whole blocks of BLOCK elements first: a loop of
 * a constant count is one that -O2 (GCC's very-cheap cost model) vectorizes. */
#define BLOCK 16
#define EACH_ONE(T, EXPR, k)                                                 \
    {                                                                        \
        T a, b, r;                                                           \
        memcpy(&a, first + (k) * sizeof(T), sizeof(T));                      \
        memcpy(&b, second + (k) * sizeof(T), sizeof(T));                     \
        r = (T)(EXPR);                                                       \
        memcpy(target + (k) * sizeof(T), &r, sizeof(T));                     \
    }
#define EACH(T, EXPR)                                                        \
    for (i = 0; i + BLOCK <= count; i += BLOCK)                              \
        for (j = 0; j < BLOCK; j++)                                          \
            EACH_ONE(T, EXPR, i + j)                                         \
    for (; i < count; i++)                                                   \
        EACH_ONE(T, EXPR, i)

/* -O2's vectorizer (GCC's very-cheap cost model) leaves a loop alone when it
 * would need a run-time check that its buffers do not overlap, and these must
 * take a fold into one of its operands (fold_all in place): the dynamic model
 * adds that check and runs SIMD (a 1 MiB float32 SUM Allreduce at 2 ranks:
 * scalar, 1.7x the time of the same bytes of float64).  Element by element as
 * before: no reassociation, so the results stay numpy's bit for bit. */
#if defined(__GNUC__) && !defined(__clang__)
#define VECTORIZED __attribute__((optimize("vect-cost-model=dynamic")))
#else
#define VECTORIZED
#endif

/* One kernel per element type and op: target = first op second, element by
 * element.  The accumulates combine with first = the origin's data and second
 * = target (combine_all); reductions fold with first = the fold of the ranks
 * so far and second = the next rank's part (fold_all, op.apply(fold, part)'s
 * order bit for bit), writing the fold in place or into a third buffer. */
#define KERNEL_PAIR(T, ...)                                                  \
    static VECTORIZED void                                                   \
    apply_##T(int op, const char *first, const char *second, char *target,   \
              Py_ssize_t count)                                              \
    {                                                                        \
        __VA_ARGS__                                                          \
    }

/* Integer arithmetic in the unsigned type U, so that it wraps as numpy's
 * does; logical ops give 0 or 1. */
#define INT_KERNEL(T, U)                                                     \
    KERNEL_PAIR(T, {                                                         \
        Py_ssize_t i, j;                                                     \
        switch (op) {                                                        \
        case OP_SUM: EACH(T, (U)a + (U)b) break;                             \
        case OP_PROD: EACH(T, (U)a * (U)b) break;                            \
        case OP_MAX: EACH(T, a > b ? a : b) break;                           \
        case OP_MIN: EACH(T, a < b ? a : b) break;                           \
        case OP_BAND: EACH(T, a & b) break;                                  \
        case OP_BOR: EACH(T, a | b) break;                                   \
        case OP_BXOR: EACH(T, a ^ b) break;                                  \
        case OP_LAND: EACH(T, a && b) break;                                 \
        case OP_LOR: EACH(T, a || b) break;                                  \
        case OP_LXOR: EACH(T, !a != !b) break;                               \
        case OP_REPLACE: EACH(T, a) break;                                   \
        }                                                                    \
    })

/* numpy's maximum and minimum: a NaN in either operand wins, a tie gives b. */
#define FLOAT_KERNEL(T)                                                      \
    KERNEL_PAIR(T, {                                                         \
        Py_ssize_t i, j;                                                     \
        switch (op) {                                                        \
        case OP_SUM: EACH(T, a + b) break;                                   \
        case OP_PROD: EACH(T, a * b) break;                                  \
        case OP_MAX: EACH(T, isnan(a) || a > b ? a : b) break;               \
        case OP_MIN: EACH(T, isnan(a) || a < b ? a : b) break;               \
        case OP_REPLACE: EACH(T, a) break;                                   \
        }                                                                    \
    })

INT_KERNEL(int8_t, uint8_t)
INT_KERNEL(uint8_t, uint8_t)
INT_KERNEL(int16_t, uint16_t)
INT_KERNEL(uint16_t, uint16_t)
INT_KERNEL(int32_t, uint32_t)
INT_KERNEL(int64_t, uint64_t)
INT_KERNEL(uint32_t, uint32_t)
INT_KERNEL(uint64_t, uint64_t)
FLOAT_KERNEL(float)
FLOAT_KERNEL(double)

/* The dispatchers over element type x op: combine_all (accumulates: the old
 * target bytes go to result first when it is not NULL, then the target is
 * combined; NO_OP leaves it) and fold_all (reductions). */
#define DISPATCH(etype, op, first, second, target, nbytes)                               \
    switch (etype) {                                                                     \
    case E_I8: apply_int8_t(op, first, second, target, nbytes); break;                   \
    case E_U8: apply_uint8_t(op, first, second, target, nbytes); break;                  \
    case E_I16: apply_int16_t(op, first, second, target, nbytes / 2); break;             \
    case E_U16: apply_uint16_t(op, first, second, target, nbytes / 2); break;            \
    case E_I32: apply_int32_t(op, first, second, target, nbytes / 4); break;             \
    case E_I64: apply_int64_t(op, first, second, target, nbytes / 8); break;             \
    case E_U32: apply_uint32_t(op, first, second, target, nbytes / 4); break;            \
    case E_U64: apply_uint64_t(op, first, second, target, nbytes / 8); break;            \
    case E_F32: apply_float(op, first, second, target, nbytes / (Py_ssize_t)sizeof(float)); break; \
    case E_F64: apply_double(op, first, second, target, nbytes / (Py_ssize_t)sizeof(double)); break;\
    }

void
combine_all(int etype, int op, const char *incoming, char *target, char *result,
            Py_ssize_t nbytes)
{
    if (result != NULL)
        memcpy(result, target, (size_t)nbytes);
    if (op == OP_NO_OP)
        return;
    DISPATCH(etype, op, incoming, target, target, nbytes)
}

void
fold_all(int etype, int op, const char *fold, const char *part, char *into, Py_ssize_t nbytes)
{
    DISPATCH(etype, op, fold, part, into, nbytes)
}

/* The op's index when it is one of the registered predefined ops and is
 * defined on the element type for this kind of call (R44, R52, op.py's
 * table); -1 otherwise. */
int
op_code(PyObject *op, int etype, int fetches)
{
    int i;
    for (i = 0; i < N_OPS; i++)
        if (g_ops[i] == op)
            break;
    if (i == N_OPS || (i == OP_NO_OP && !fetches))
        return -1;
    if (IS_INT(etype))
        return i;
    if (IS_FLOAT(etype) && (i <= OP_MIN || i >= OP_REPLACE))
        return i;
    return -1;
}

static PyObject *
op_name_tuple(void)
{
    PyObject *names = PyTuple_New(N_OPS);
    int i;
    if (names == NULL)
        return NULL;
    for (i = 0; i < N_OPS; i++) {
        PyObject *name = PyUnicode_FromString(op_names[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    return names;
}

int
op_init(PyObject *module)
{
    return PyModule_AddObject(module, "RMA_OPS", op_name_tuple());
}
