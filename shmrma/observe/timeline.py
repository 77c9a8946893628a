"""The job's timeline as Chrome's trace-event JSON (the object form, with
``traceEvents``), which Perfetto (ui.perfetto.dev) and chrome://tracing open.

One process per rank (``rank R``), one track per thread of it; a complete
event per MPI call, named as the program wrote it, with its call site, peer,
tag, bytes and communicator or window; inside it, the time it spent waiting as
a ``wait`` slice saying for whom; the job's start on a process of its own, each
rank's start-up (from the job's start to the rank's), its run and its end.
Arrows (links.py) from a synchronizing collective's last arrival to every
other member's return, from a send to the receive it matched and from a Post
to the Start it released; each
window's epochs (epochs.py) on tracks of their own. Times are microseconds
from the job's start, on the clock every rank shares.
"""
import json

from . import records
from .epochs import epochs
from .links import flows

JOB_PROCESS = 1 << 20       # the launcher's process in the timeline, after any rank


def events(parts, job_started, statuses, nranks):
    """The trace events of every rank's part, one at a time; ``statuses`` says how
    each rank ended."""
    yield _meta(JOB_PROCESS, 0, "process_name", "job")
    yield _meta(JOB_PROCESS, 0, "process_sort_index", -1, key="sort_index")
    yield {"name": "job start", "ph": "i", "s": "p", "ts": 0.0, "pid": JOB_PROCESS,
           "tid": 0, "args": {"ranks": nranks}}
    for part in parts:
        yield from _rank_events(part, job_started, statuses.get(part.rank), nranks)

    def us(ns):
        return _us(ns - job_started)
    yield from flows(parts, us)
    yield from epochs(parts, us)


def _us(ns):
    return round(ns / 1000.0, 3)


def _meta(pid, tid, name, value, key="name"):
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}}


def _rank_events(part, t0, status, nranks):
    rank = part.rank
    label = "rank %d" % rank if rank < nranks else "rank %d (spawned)" % rank
    yield _meta(rank, 0, "process_name", label)
    yield _meta(rank, 0, "process_sort_index", rank, key="sort_index")
    for index, name in sorted(part.threads.items()):
        yield _meta(rank, index, "thread_name", name)
    last = part.started         # a rank that was killed ended with its last call
    for fields in part.events:
        yield from _call_events(part, fields, t0)
        last = max(last, fields[0] + fields[1])
    ended = part.ended or last
    yield {"name": "start-up", "cat": "job", "ph": "X", "pid": rank, "tid": 0,
           "ts": 0.0, "dur": _us(part.started - t0)}
    yield {"name": label, "cat": "job", "ph": "X", "pid": rank, "tid": 0,
           "ts": _us(part.started - t0), "dur": _us(ended - part.started)}
    end = {"name": "end", "cat": "job", "ph": "i", "s": "t", "pid": rank, "tid": 0,
           "ts": _us(ended - t0), "args": {"status": status or "unknown"}}
    if not part.ended:
        end["args"]["note"] = "the rank ended without saying so: killed or crashed"
    yield end


def _call_events(part, fields, t0):
    (start, spent, wait_began, waited, nbytes, name, site, peer, tag, thread,
     target, to, to_tag, _) = fields
    args = {"site": part.string(site)}
    found = part.object(target)
    on = found.name if found is not None else ""
    if on:
        args["on"] = on
    if peer != records.NONE:
        args["peer"] = peer
    if tag != records.NONE:
        args["tag"] = tag
    if to != records.NONE:
        args["dest"] = to
    if to_tag != records.NONE:
        args["sendtag"] = to_tag
    if nbytes != records.NONE:
        args["bytes"] = nbytes
    call = part.string(name)
    out = [{"name": call, "cat": "mpi", "ph": "X", "pid": part.rank, "tid": thread,
            "ts": _us(start - t0), "dur": _us(spent), "args": args}]
    if waited:
        began = min(max(wait_began, start), start + spent)
        waited = min(waited, start + spent - began)
        whom = ("rank %d of %s" % (peer, on)) if peer != records.NONE else (
            "the other ranks of %s" % on if on else "its requests")
        about = {"for": whom, "in": call}
        noted = part.wait_note(thread, start, start + spent)
        if noted is not None:       # a wait that outlasted a slice said it
            about["waiting for"] = noted
        out.append({"name": "wait", "cat": "wait", "ph": "X", "pid": part.rank,
                    "tid": thread, "ts": _us(began - t0), "dur": _us(waited),
                    "args": about})
    return out


def write(path, parts, job_started, statuses, nranks):
    """Write the timeline to ``path``, an event at a time; returns the notes to
    tell the user (events dropped past the limit)."""
    other = {"producer": "shmrma-run --trace", "ranks": nranks}
    notes = ["rank %d dropped %d events past the limit of %d a rank (SHMRMA_TRACE_EVENTS)"
             % (part.rank, part.dropped, len(part.events)) for part in parts if part.dropped]
    if notes:
        other["dropped"] = {str(part.rank): part.dropped for part in parts}
    compact = json.JSONEncoder(separators=(",", ":")).encode
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        for number, event in enumerate(events(parts, job_started, statuses, nranks)):
            f.write((",\n" if number else "\n") + compact(event))
        f.write('\n],"displayTimeUnit":"ms","otherData":%s}\n' % compact(other))
    return notes
