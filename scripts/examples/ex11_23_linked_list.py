"""MPI-3.1 Example 11.23: a distributed linked list in a dynamic window.

Elements come from Alloc_mem and are attached; an element is [value, next rank,
next address]. Appending takes the tail's `next rank` with Compare_and_swap
(nil = -1), then writes `next address` with Accumulate(REPLACE); a rank that loses
the race chases the new tail with Get_accumulate(NO_OP) + Flush. Rank 0 then walks
the list: 1 + size * NUM_ELEMS elements (R14-R20, R50, R141).
    shmrma-run -n 4 scripts/examples/ex11_23_linked_list.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
NUM_ELEMS = 10
NIL = -1
VALUE, NEXT_RANK, NEXT_ADDRESS = 0, 8, 16          # byte offsets in an element
I64 = MPI.INT64_T     # every buffer typed I64 like the target (R45): numpy int64 alone is LONG
win = MPI.Win.Create_dynamic(comm=comm)
memories = []


def new_element(value):
    memory = MPI.Alloc_mem(24)
    np.frombuffer(memory, dtype="i8")[:] = (value, NIL, NIL)
    win.Attach(memory)
    memories.append(memory)
    return MPI.Get_address(memory)


def read(owner, address):
    value = np.zeros(1, "i8")
    win.Get_accumulate([None, 0, I64], [value, I64], owner, (address, 1, I64), op=MPI.NO_OP)
    win.Flush(owner)
    return int(value[0])


head = comm.bcast(new_element(-1) if rank == 0 else None, root=0)
tail_rank, tail_address = 0, head
win.Lock_all()
for k in range(NUM_ELEMS):
    mine = new_element(rank * 1000 + k)
    while True:
        previous = np.zeros(1, "i8")
        win.Compare_and_swap([np.array([rank], "i8"), I64], [np.array([NIL], "i8"), I64],
                             [previous, I64], tail_rank, MPI.Aint_add(tail_address, NEXT_RANK))
        win.Flush(tail_rank)
        if previous[0] == NIL:                          # we own the tail's next pointer
            win.Accumulate([np.array([mine], "i8"), I64], tail_rank,
                           (MPI.Aint_add(tail_address, NEXT_ADDRESS), 1, I64),
                           op=MPI.REPLACE)
            win.Flush(tail_rank)
            tail_rank, tail_address = rank, mine
            break
        next_address = NIL                              # chase: wait for its address
        while next_address == NIL:
            next_address = read(tail_rank, MPI.Aint_add(tail_address, NEXT_ADDRESS))
        tail_rank, tail_address = int(previous[0]), next_address
comm.Barrier()
if rank == 0:
    count, owner, address, seen = 0, 0, head, []
    while owner != NIL:
        seen.append(read(owner, address + VALUE))
        count += 1
        owner, address = (read(owner, address + NEXT_RANK),
                          read(owner, address + NEXT_ADDRESS))
    assert count == 1 + size * NUM_ELEMS, count
    for r in range(size):                               # each rank's elements in order
        own = [v for v in seen if v >= 0 and v // 1000 == r]
        assert own == sorted(own) and len(own) == NUM_ELEMS, own
win.Unlock_all()
comm.Barrier()
for memory in memories:
    win.Detach(memory)
win.Free()
for memory in memories:
    MPI.Free_mem(memory)
print("rank %d: Example 11.23 ok" % rank)
