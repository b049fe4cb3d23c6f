"""thoughtline's benchmarks: ``python -m benchmarks`` (see ``docs/benchmarks.md``).

One module per scenario (``request_build``, ``resume``, ``stream_fold``, ``store_append``,
``cli_start``, ``peer``), a shared workload (``synth``), timing (``measure``) and the table
(``report``). Numbers are taken here and only here — never with timers inside tests.
"""
