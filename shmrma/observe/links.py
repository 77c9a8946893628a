"""The timeline's arrows: which call on one rank let a call on another return.

- A synchronizing collective (a barrier, a fence, an allreduce...): every rank
  of the group returns only after the last one arrived, so the arrows go from
  the last arrival's call to each other rank's. Collectives on a communicator
  or window come in the same order on every member (MPI-3.1 §5.13), so the
  k-th of them on each rank are one collective; the group is named by the
  context id all its members share (recorder._object_of).
- A message: from the send to the receive that matched it, or for a
  nonblocking receive to the Wait, Test... that completed its request. Messages
  between two ranks on one communicator with one tag are matched in the order
  sent, by receives in the order posted (the non-overtaking rule, MPI-3.1
  §3.5), so the k-th such send pairs with the k-th such receive. Where that
  cannot be told for sure (a wildcard receive, a matched probe, a persistent or
  partitioned request, sends or receives from several threads), no arrow is
  drawn: a missing arrow, never a wrong one.
- An exposure epoch: from a Post to the Start on each origin it released, the
  k-th Post naming an origin matching that origin's k-th Start naming it.
- A counter of the proposal: from the signal that took it to 0 to the Wait or
  Test that returned from the round of its Sync_object request that waited.
"""
import collections

from . import records

Call = collections.namedtuple(
    "Call", "index rank thread start end name peer tag object to to_tag")

SYNCHRONIZING = frozenset("Comm." + name for name in (
    "Barrier", "barrier", "Allreduce", "allreduce", "Allgather", "allgather", "Allgatherv",
    "Alltoall", "alltoall", "Alltoallv", "Alltoallw", "Reduce_scatter",
    "Reduce_scatter_block")) | {"Win.Fence", "Win.Barrier"}
SENDS = frozenset("Comm." + name for name in (
    "Send", "Isend", "Ssend", "Issend", "Bsend", "Ibsend", "Rsend", "Irsend", "send",
    "isend", "ssend", "issend", "bsend", "ibsend"))
RECEIVES = frozenset(("Comm.Recv", "Comm.Irecv", "Comm.recv", "Comm.irecv"))
BOTH = frozenset(("Comm.Sendrecv", "Comm.Sendrecv_replace", "Comm.sendrecv"))
BLOCKING = frozenset(("Comm.Recv", "Comm.recv")) | BOTH
# calls that send or take messages in ways the records do not follow
UNFOLLOWED = frozenset("Comm." + name for name in (
    "Mprobe", "mprobe", "Improbe", "improbe", "Send_init", "Bsend_init", "Ssend_init",
    "Rsend_init", "Recv_init", "Psend_init", "Precv_init", "Isendrecv",
    "Isendrecv_replace"))


# the window calls that open and close epochs (epochs.py)
EPOCH_CALLS = frozenset("Win." + name for name in (
    "Fence", "Start", "Complete", "Post", "Wait", "Lock", "Unlock", "Lock_all",
    "Unlock_all"))
FOLLOWED = SYNCHRONIZING | SENDS | RECEIVES | BOTH | UNFOLLOWED | EPOCH_CALLS


def calls(part):
    """The part's calls that arrows or epochs follow, on communicators and
    windows, in the order recorded (only those: a long run records millions)."""
    out = []
    followed = {number for number, text in enumerate(part.strings) if text in FOLLOWED}
    for index, fields in enumerate(part.events):
        if fields[NAME] not in followed:
            continue
        found = part.object(fields[TARGET])
        if found is not None and found.kind in ("comm", "win"):
            out.append(_call(part, index, fields, found))
    return out


def call_at(part, index):
    """Event ``index`` of the part as a Call (its object None)."""
    return _call(part, index, part.events[index], None)


def _call(part, index, fields, found):
    (start, spent, _, _, _, name, _, peer, tag, thread, _, to, to_tag, _) = fields
    return Call(index, part.rank, thread, start, start + spent, part.string(name), peer,
                tag, found, to, to_tag)


NAME, TARGET = 5, 10    # the call name's and the object's fields in records.EVENT


def flows(parts, us):
    """The flow events (Chrome's "s" and "f") of every arrow; ``us(ns)`` gives a
    timestamp."""
    seen = {part.rank: calls(part) for part in parts}
    by_rank = {part.rank: part for part in parts}
    groups = {part.rank: part.groups for part in parts}
    arrows = (_collective_arrows(seen) + _message_arrows(seen, by_rank)
              + _exposure_arrows(seen, groups) + _counter_arrows(parts))
    out = []
    for number, (kind, source, target) in enumerate(arrows):
        out.append({"name": kind, "cat": "flow", "ph": "s", "id": number, "pid": source.rank,
                    "tid": source.thread, "ts": us(source.start) + 0.001})
        out.append({"name": kind, "cat": "flow", "ph": "f", "bp": "e", "id": number,
                    "pid": target.rank, "tid": target.thread, "ts": us(target.end) - 0.001})
    return out


def _collective_arrows(seen):
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for rank, found in seen.items():
        for call in found:
            if call.object and call.name in SYNCHRONIZING and len(call.object.ranks) > 1:
                group = (call.object.kind, call.object.key, tuple(call.object.ranks))
                groups[group][rank].append(call)
    arrows = []
    for members in groups.values():
        ranks = next(iter(members.values()))[0].object.ranks
        if sorted(members) != sorted(ranks):
            continue        # a member recorded none (killed before): nothing to line up
        for together in zip(*(members[rank] for rank in ranks)):
            if len({call.name for call in together}) != 1:
                break       # not one collective: the program is wrong, or records are lost
            last = max(together, key=lambda call: call.start)
            arrows += [("last arrival", last, call) for call in together if call is not last]
    return arrows


def _message_arrows(seen, by_rank):
    sends, receives = collections.defaultdict(list), collections.defaultdict(list)
    unfollowed = set()
    for rank, found in seen.items():
        for call in found:
            if call.object is None:
                continue
            if call.name in UNFOLLOWED:
                unfollowed.add(_context(call))
            for kind, peer, tag in _message_parts(call):
                world = _world(call.object, peer)
                if kind == "receive" and (world is None or tag < 0):
                    unfollowed.add((_context(call), rank))      # a wildcard: stop here
                elif world is not None and tag >= 0:
                    pair = (rank, world) if kind == "send" else (world, rank)
                    (sends if kind == "send" else receives)[
                        (_context(call), tag) + pair].append(call)
    arrows = []
    for key, sent in sends.items():
        taken = receives.get(key, [])
        context, destination = key[0], key[3]
        if (context in unfollowed or (context, destination) in unfollowed
                or len({c.thread for c in sent}) > 1 or len({c.thread for c in taken}) > 1):
            continue
        for send, receive in zip(sent, taken):
            end = _where_it_ended(receive, by_rank)
            if end is not None:
                arrows.append(("message", send, end))
    return arrows


def _exposure_arrows(seen, groups):
    """From each Post to the Start it released: the k-th Post of a target whose
    group holds an origin matches that origin's k-th Start whose group holds the
    target (MPI-3.1 §11.5.2)."""
    posts, starts = collections.defaultdict(list), collections.defaultdict(list)
    for rank, found in seen.items():
        for call in found:
            members = groups[rank].get(call.index)
            if call.object is None or members is None:
                continue
            for other in members:
                if call.name == "Win.Post":
                    posts[(_context(call), rank, other)].append(call)
                elif call.name == "Win.Start":
                    starts[(_context(call), other, rank)].append(call)
    return [("post", post, start) for key, posted in posts.items()
            for post, start in zip(posted, starts.get(key, []))]


def _counter_arrows(parts):
    """From each counter signal that took its counter to 0 to the Wait or Test
    that returned from the round it ended. Each such signal ends one round that
    waited, in order; the signals of different ranks are ordered by their calls,
    so a counter's arrows stop where two of those calls overlap in time."""
    signals, rounds = collections.defaultdict(list), collections.defaultdict(list)
    for part in parts:
        for kind, counter, event in part.links:
            name = part.counters.get(counter)
            if name is not None and event < len(part.events):
                found = signals if kind == records.SIGNAL else rounds
                found[name].append(call_at(part, event))
    arrows = []
    for name, sent in signals.items():
        sent.sort(key=lambda call: call.start)
        waited = sorted(rounds.get(name, []), key=lambda call: call.start)
        for k, (signal, ended) in enumerate(zip(sent, waited)):
            if (k and sent[k - 1].end > signal.start) or signal.start > ended.end:
                break       # not sure which came first: no arrow from here on
            arrows.append(("signal", signal, ended))
    return arrows


def _where_it_ended(receive, by_rank):
    """The call a receive returned from: itself when blocking, else the call that
    completed its request (a Wait, a Waitall...), when the records say."""
    if receive.name in BLOCKING:
        return receive
    part = by_rank[receive.rank]
    completed = part.completed_by.get(receive.index)
    return call_at(part, completed) if completed is not None and completed < len(
        part.events) else None


def _message_parts(call):
    """("send" or "receive", peer, tag) of each message the call sends or takes."""
    if call.name in SENDS:
        return [("send", call.peer, call.tag)]
    if call.name in RECEIVES:
        return [("receive", call.peer, call.tag)]
    if call.name in BOTH:
        return [("receive", call.peer, call.tag), ("send", call.to, call.to_tag)]
    return []


def _context(call):
    """What tells a communicator's messages from every other's: its context id
    and its members (a context id is used again once its communicator is freed)."""
    return call.object.key, tuple(call.object.ranks)


def _world(found, peer):
    """The world rank of rank ``peer`` of the object's group, or None."""
    return found.ranks[peer] if 0 <= peer < len(found.ranks) else None
