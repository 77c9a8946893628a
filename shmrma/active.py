"""Active target synchronization: Fence (MPI-3.1 §11.5.1).

Every RMA call is complete when it returns, so a Fence is a memory fence
plus a barrier over the window's group; it is always a barrier, even with
MODE_NOPRECEDE (A34, lessons 17).
"""
from . import atomic
from .assertions import MODE_NOPRECEDE, MODE_NOSUCCEED, checked


class ActiveTarget:
    """Mixin of Win."""

    def Fence(self, assertion=0):
        state = self._s
        assertion = checked(assertion, "Fence")
        state.epoch.before_fence(bool(assertion & MODE_NOPRECEDE))
        atomic.fence()
        state.comm.Barrier()
        state.epoch.after_fence(bool(assertion & MODE_NOSUCCEED))
