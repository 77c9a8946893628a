"""The mpiP-style report of --profile, from the ranks' sums (recorder.py).

Per rank: its wall time, its time in MPI and that share, its time waiting and
on whom; then the top call sites (the program's file:line and the call) by
time and by bytes, with count, mean, min, max and their spread across ranks.
"""
import json
import os

from .recorder import BYTES, COUNT, HIGH, LOW, TOTAL, WAITED

TOP = 20


def read(directory):
    """Every rank's sums in ``directory``, by rank."""
    found = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".profile"):
            with open(os.path.join(directory, name)) as f:
                found.append(json.load(f))
    return sorted(found, key=lambda profile: profile["rank"])


def summary(profiles, nranks):
    """The report as one JSON-ready dict: ``ranks`` and ``sites``."""
    ranks, sites = [], {}
    for profile in profiles:
        mpi = sum(entry[2 + TOTAL] for entry in profile["sites"])
        measured = profile["waits"] is not None     # not on the mpi backend
        waits = sorted(profile["waits"] or (), key=lambda wait: -wait[2])
        ranks.append({
            "rank": profile["rank"], "wall_s": profile["wall_ns"] / 1e9, "mpi_s": mpi / 1e9,
            "mpi_share": mpi / profile["wall_ns"] if profile["wall_ns"] else 0.0,
            "waiting_s": sum(wait[2] for wait in waits) / 1e9 if measured else None,
            "waited_on": [{"on": _whom(peer, where), "s": ns / 1e9}
                          for peer, where, ns in waits]})
        for site, call, *entry in profile["sites"]:
            _add_site(sites, (call, site), profile["rank"], entry)
    missing = sorted(set(range(nranks)) - {profile["rank"] for profile in profiles})
    return {"ranks": ranks, "missing_ranks": missing,
            "sites": sorted(sites.values(), key=lambda site: -site["total_s"])}


def _whom(peer, where):
    return ("rank %d of %s" % (peer, where)) if peer >= 0 else "in %s" % where


def _add_site(sites, key, rank, entry):
    site = sites.get(key)
    if site is None:
        site = sites[key] = {"call": key[0], "site": key[1], "count": 0, "total_s": 0.0,
                             "min_us": entry[LOW] / 1e3, "max_us": 0.0, "bytes": 0,
                             "waiting_s": 0.0, "per_rank_s": {}}
    site["count"] += entry[COUNT]
    site["total_s"] += entry[TOTAL] / 1e9
    site["min_us"] = min(site["min_us"], entry[LOW] / 1e3)
    site["max_us"] = max(site["max_us"], entry[HIGH] / 1e3)
    site["bytes"] += entry[BYTES]
    site["waiting_s"] += entry[WAITED] / 1e9
    site["per_rank_s"][str(rank)] = entry[TOTAL] / 1e9
    site["mean_us"] = site["total_s"] * 1e6 / site["count"]


def text(report):
    """The report as mpiP prints it, more or less: a table per question."""
    lines = ["", "shmrma profile: %d rank(s)" % len(report["ranks"]), "",
             "%5s %10s %10s %6s %10s  %s" % ("rank", "wall s", "MPI s", "MPI %",
                                             "waiting s", "waited most on")]
    for rank in report["ranks"]:
        most = rank["waited_on"][0] if rank["waited_on"] else None
        waiting = ("%10.4f" % rank["waiting_s"] if rank["waiting_s"] is not None
                   else "%10s" % "-")
        lines.append("%5d %10.4f %10.4f %6.1f %s  %s" % (
            rank["rank"], rank["wall_s"], rank["mpi_s"], 100 * rank["mpi_share"], waiting,
            "%s (%.4f s)" % (most["on"], most["s"]) if most else "-"))
    if any(rank["waiting_s"] is None for rank in report["ranks"]):
        lines.append("(waiting: not measured on the mpi backend, whose MPI waits inside "
                     "its calls; their time is in MPI s)")
    for missing in report["missing_ranks"]:
        lines.append("%5d  no profile: the rank did not end normally" % missing)
    sites = report["sites"]
    lines += ["", "Top %d call sites by time (of %d):" % (min(TOP, len(sites)), len(sites)),
              "%-24s %-44s %8s %11s %10s %10s %10s %6s  %s" % (
                  "call", "site", "count", "total ms", "mean us", "min us", "max us",
                  "ranks", "per rank ms (min-max)")]
    for site in sites[:TOP]:
        spread = sorted(site["per_rank_s"].values())
        lines.append("%-24s %-44s %8d %11.3f %10.2f %10.2f %10.2f %6d  %.3f-%.3f" % (
            site["call"], _short(site["site"]), site["count"], site["total_s"] * 1e3,
            site["mean_us"], site["min_us"], site["max_us"], len(spread),
            spread[0] * 1e3, spread[-1] * 1e3))
    moving = sorted((site for site in sites if site["bytes"]), key=lambda s: -s["bytes"])
    lines += ["", "Top %d call sites by bytes (of %d):" % (min(TOP, len(moving)),
                                                           len(moving)),
              "%-24s %-44s %8s %14s %12s" % ("call", "site", "count", "bytes",
                                             "mean bytes")]
    for site in moving[:TOP]:
        lines.append("%-24s %-44s %8d %14d %12.1f" % (
            site["call"], _short(site["site"]), site["count"], site["bytes"],
            site["bytes"] / site["count"]))
    return "\n".join(lines) + "\n"


def _short(site, width=44):
    return site if len(site) <= width else "..." + site[-(width - 3):]
