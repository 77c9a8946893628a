"""Why rows of ``shmrma-bench compare`` can miss their targets with nothing regressed:
the known reasons, by row title, with the figures that showed them (compare.py's
write_results lists every miss of a run with its reason from here, or as news).
Reasons that follow from a suite's own cases (the windows suite's memcpy and
8-byte rows, the observe suite's halos) are made in compare.py beside them."""

WHEN_MISSED = {}

WHEN_MISSED["Send/Recv bandwidth 4 MiB (osu_bw), MB/s"] = (
    "bimodal from run to run on the development machine (5 to 46 GB/s in alternating "
    "runs of one build, following the machine's load; MPICH about 23, as spread under "
    "load): a large message crosses the pair's staging ring in two pipelined copies; "
    "the one-copy read from the sender's memory (SHMRMA_DIRECT_MIN) is slower there, "
    "process_vm_readv moving about 13 GB/s on that KVM guest")

for _title in ("Dup + Free n=2, us", "Split + Free n=2, us", "Create_cart + Sub + Free n=2, us",
               "Create_cart + Sub + Free n=4, us"):
    WHEN_MISSED[_title] = (
        "making a communicator is Python bookkeeping around one or two collective steps "
        "(Dup: rank 0's plan broadcast; Split: an allgather of the colors, then the plan, "
        "which a Split into single ranks, as this row's at 2 ranks, does without; "
        "Create_cart and Sub: one allgather of every rank's error class with rank 0's "
        "plan), and its first collective makes its area: at 1 rank, where nobody waits, "
        "Dup + Free costs 5.9-10 us and Create_cart + Sub + Free 36-49 us against MPICH's "
        "1.1 and 4.0 us in C (2026-12-07), so the gap is the calls' own cost, which only "
        "making communicators in C removes; at 2 ranks the ratio also swings from run to "
        "run (Dup + Free 0.38-1.49)")

for _title in ["Scatterv %s per rank n=%d, array('i') counts, 256 KiB objects, us" % (size, n)
               for size in ("8 B", "64 KiB") for n in (2, 4)]:
    WHEN_MISSED[_title] = (
        "a Scatterv is one full step of the collective area (the root's table and parts, "
        "every member's error class): the root is done only once every member arrived, "
        "so at 4 ranks on 2 CPUs it waits on the scheduler to run the three others, where "
        "MPICH's root sends and goes on; on 2026-12-07 the 8-byte row at 4 ranks read 0.51 "
        "in a direct run and 0.83-0.86 in two RESULTS runs, the 64 KiB rows 0.60-1.01 (2 "
        "ranks) and 0.80-1.31 (4 ranks) in those two")

for _title in ("--check: Halo A3 n=4 counters, us/iter", "--check: Halo n=4 Fence, us/iter"):
    WHEN_MISSED[_title] = (
        "the full checker watches each rank's own stores to its window memory by comparing "
        "it with a shadow copy before each synchronization call (36 KiB per rank here: a "
        "look that finds nothing costs one memcmp, about 0.6 us, or nothing while the load "
        "watch has every page away; the look that finds the stencil's 32 KiB store diffs "
        "and records it in one C call, about 4 us; 4 looks an iteration of Halo A3, 2 of "
        "the Fence halo), its loads with page faults (a twentieth of the run time after its "
        "first 64 periods), and each call with Python bookkeeping (about 3 us a checked "
        "Put and 0.85 us more at its completion, 2.5 us a counter's signal with its look): "
        "on the development machine the CPU time per rank and iteration at 4 ranks was "
        "about 53-55 us checked against 19.5 (Halo A3) and 21 (Fence) unchecked, and the "
        "wall-time ratio 2.3-2.8 (Halo A3) and 1.9-2.6 (Fence) from run to run; "
        "--check=no-local, which leaves the loads and stores out, is the row below")

_PING_PONG_MODES = (
    "the development machine's small-message times are bimodal from run to run (the "
    "bare 8-byte ping-pong 0.39-0.45 us or 0.93-0.97 us one way, shmrma's call being "
    "mostly Python), while MPICH's moves less; every buffer form costs the bare form's "
    "within 0.03 us in the same run, so a miss follows the machine's slow mode, not a "
    "form: look at the bare row beside it")
for _title in ("Send/Recv 8 B as [buf, BYTE], one way, us",
               "Send/Recv 8 B as [buf, 8, BYTE], one way, us",
               "send/recv of 8-byte objects, one way, us"):
    WHEN_MISSED[_title] = _PING_PONG_MODES
WHEN_MISSED["Isend/Irecv bandwidth 8 B as [buf, 8, BYTE] (osu_bw), MB/s"] = (
    "a window of 64 8-byte Isends and Irecvs is a request a message, made and waited "
    "for in Python (0.34 us a Receive, 0.19 us a Completed send since 2026-12-08); in "
    "six alternating direct runs on 2026-12-08 shmrma moved 8.5-10.3 MB/s (median 10.0) "
    "against MPICH's 3.7-8.2 (median 7.9), a ratio of 0.79, while the loaded RESULTS "
    "run read 1.17")
WHEN_MISSED["Accumulate 8 MiB float64 SUM + Flush, us"] = (
    "memory-bound (the target's 8 MiB read and written, the origin's read, on one "
    "memory bus) and bimodal on the development machine: five alternating direct runs "
    "on 2026-12-08 read 398-660 us (median 466) against MPICH's 395-482 (median 469), "
    "a ratio of 0.99, where the loaded RESULTS run read 1.41; the SIMD kernels of "
    "2026-12-08 took it from 593-648 us")
WHEN_MISSED["Allreduce 1 MiB float64 n=2 (osu_allreduce -T mpi_double), us"] = (
    "bimodal at 2 ranks on the development machine for both implementations (runs of "
    "150-200 us and of 650-750 us, MPICH's too): five alternating direct runs on "
    "2026-12-08 read a median of 190 us against MPICH's 195 (ratio 0.97), where the "
    "loaded RESULTS run read 1.14")
WHEN_MISSED["Notify 8 B: counters on the mpi backend vs MPI-3 calls, us"] = (
    "the counters make the MPI-3 form's calls (Put, Flush, an atomic on the counter, "
    "Flush) and poll with loads, but each notification also runs about 1.4 us of Python "
    "(the requests, the counter epoch's guard on the Put): the ratio reads 1.04-1.53 "
    "from run to run on this machine")
WHEN_MISSED["Halo A3 n=4: shmrma counters vs mpi4py Fence, us/iter"] = (
    "the counters halo sits at the floor of two stencils per CPU an iteration (about "
    "40 us with 4 ranks on 2 CPUs) and mpi4py's Fence halo reads 80-100 us from run to "
    "run: the ratio is 0.40-0.50")
WHEN_MISSED["Bcast 8 B n=4 (osu_bcast), us"] = (
    "4 ranks on 2 CPUs: each broadcast waits on the scheduler to run its readers, and "
    "the ratio swings around the target from run to run (0.37-0.72 in four alternating "
    "runs of one build, median 0.53; 0.50, 0.59, 0.62 in the last three RESULTS runs)")
for _n in (2, 4, 8):
    WHEN_MISSED["Window barrier vs Fence round n=%d, shmrma both, us" % _n] = (
        "Fence and the window barrier are one call (winbarrier.barrier, then "
        "csrc/rma/winbarrier.c's win_barrier: a Fence is the barrier), so the ratio is 1 but "
        "for noise: at 4 ranks on 2 CPUs either round reads 2.9-6.2 us from run to run, "
        "and the ratio 0.72-1.26 across runs (at 8 ranks 0.75 and 1.11 in the last two "
        "RESULTS runs)")
WHEN_MISSED["Halo A3 n=4: counters vs Fence, shmrma both, us/iter"] = (
    "4 ranks on 2 CPUs run two stencils per CPU an iteration (about 40 us), and the "
    "counters halo sits at that floor (39-41 us in 2000-iteration runs) while the Fence "
    "halo reaches "
    "it only when the scheduler is kind (40-70 us in the same runs): the ratio is "
    "0.7-1.0 run to run, and noisier in short runs")
