"""Seeing what the ranks do: ``shmrma-run --trace FILE`` and ``--profile``.

Layers, bottom-up: ``records`` (the record of one call, and where a rank keeps
them: a file of fixed-size records mapped in memory, which outlives a killed
rank), ``recorder`` (one rank's recorder: the time, wait, arguments and call
site of each call), ``calls`` (wrapping the public MPI calls so that each
reports itself to the recorder), and, for whoever gathers the job's records
once its ranks have ended, ``links`` and ``epochs`` (the arrows between the
ranks' calls and the windows' epochs, read off the records), ``timeline`` (the
Chrome trace-event JSON that Perfetto and chrome://tracing open) and
``report`` (the mpiP-style report).
The layer sits above every runtime package (it wraps their classes) and below
the launcher (run/), which gathers. docs/observe.md tells the user's side.
"""
