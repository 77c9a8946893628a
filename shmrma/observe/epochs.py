"""The timeline's epochs: when each rank's RMA calls on a window could reach
another rank, drawn as slices on tracks of their own beside the calls.

Read off each rank's calls on each window, in order (MPI-3.1 §11.5): a fence
epoch from one Fence to the next, an access epoch from Start to Complete, an
exposure epoch from Post to Wait, a lock from Lock to the Unlock of the same
rank, a lock of every rank from Lock_all to Unlock_all. An epoch still open
when the rank's records end (the last Fence of a program opens one that its
MODE_NOSUCCEED closes at once; a Post that Test ended) is not drawn.
"""
from .links import calls

# call -> (what it opens, what it closes): "lock" is per peer
OPENS = {"Win.Fence": "fence epoch", "Win.Start": "access epoch",
         "Win.Post": "exposure epoch", "Win.Lock": "lock", "Win.Lock_all": "lock_all"}
CLOSES = {"Win.Fence": "fence epoch", "Win.Complete": "access epoch",
          "Win.Wait": "exposure epoch", "Win.Unlock": "lock", "Win.Unlock_all": "lock_all"}


def epochs(parts, us):
    """The async events ("b" and "e") of every epoch of every rank."""
    out, number = [], 0
    for part in parts:
        open_now = {}
        for call in sorted(calls(part), key=lambda call: call.start):
            if call.object is None or call.object.kind != "win":
                continue
            key = (call.object.key, _which(CLOSES.get(call.name), call))
            if key[1] is not None and key in open_now:
                opened, name = open_now.pop(key)
                out += _slice(number, name, opened, call, us)
                number += 1
            what = _which(OPENS.get(call.name), call)
            if what is not None:
                open_now[(call.object.key, what)] = (call, _label(what, call))
    return out


def _which(kind, call):
    """The epoch a call opens or closes; a lock names its target."""
    if kind == "lock":
        return "lock on rank %d" % call.peer if call.peer >= 0 else None
    return kind


def _label(what, call):
    return "%s (%s)" % (what, call.object.name)


def _slice(number, name, opened, closed, us):
    """The epoch from the end of the call that opened it to the start of the one
    that closed it, on the thread that opened it."""
    common = {"name": name, "cat": "epoch", "id": "epoch%d" % number,
              "pid": opened.rank, "tid": opened.thread}
    return [dict(common, ph="b", ts=us(opened.end), args={"window": opened.object.name}),
            dict(common, ph="e", ts=us(closed.start))]
