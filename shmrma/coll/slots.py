"""The barrier slots of communicators in the world segment: each communicator of more
than one rank holds one (its counting barrier), claimed when it is made and given
back when its last member frees it."""
from ..core import atomic, errors, job


def claim_slot(world, members):
    """Find a free barrier slot and give it ``members`` references."""
    start = world.new_contexts(0) % job.MAX_COMM_SLOTS
    for offset in range(job.MAX_COMM_SLOTS):
        slot = (start + offset) % job.MAX_COMM_SLOTS
        if slot == job.WORLD_SLOT:
            continue
        address = world.slot_address(slot) + job.OFF_SLOT_REFS
        if atomic.cas32(address, 0, members) == 0:
            atomic.store32(world.slot_address(slot) + job.OFF_SLOT_COUNT, 0)
            atomic.store32(world.slot_address(slot) + job.OFF_SLOT_CHANNEL, 0)
            atomic.store32(world.slot_address(slot) + job.OFF_SLOT_AREA, 0)
            return slot
    errors.fail(errors.ERR_OTHER, "too many communicators alive at once (%d); free the ones "
                "you no longer need with comm.Free()" % job.MAX_COMM_SLOTS)


def release_slot(world, slot, references=1):
    """Give up ``references`` to the slot: True when they were its last."""
    address = world.slot_address(slot)
    left = atomic.fetch_add32(address + job.OFF_SLOT_REFS, -references) - references
    atomic.forget(address, job.SLOT_BYTES)  # the next communicator may take another slot
    return left == 0


def barrier_cells(state):
    """(arrival count, generation wait cell) of the communicator's counting barrier."""
    address = job.current().slot_address(state.slot)
    return address + job.OFF_SLOT_COUNT, address + job.OFF_SLOT_GENERATION


def slot_barrier(state):
    """Counting barrier on the communicator's slot: one native call when it opens fast."""
    size = len(state.ranks)
    if size == 1:
        return
    count_cell, generation_cell = barrier_cells(state)
    awaited = atomic.barrier_arrive(count_cell, generation_cell, size, job.WAIT_SLICE)
    if awaited is not None:
        job.wait_cell(generation_cell, awaited,
                      lambda: "Barrier on %s (%d ranks)" % (state.name or "a communicator",
                                                            size),
                      state.ranks)
