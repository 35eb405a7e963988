"""Counts a node's event-loop wakes and what each was for (``bench/wake_count.py``).

Python imports this module at start-up when its directory is on ``PYTHONPATH``; with
``DMQ_WAKE_PROBE_DIR`` set, every ``trio.run`` of the process gets an instrument that notes,
for each wait for I/O that blocked (a timeout above zero), when it ended (``time.monotonic``,
the clock every process of the host shares) and the name of the first task it ran: a timer's
task (the purge, a protocol's deadline) or the reader of the socket that had data. At exit
the notes go to ``<DMQ_WAKE_PROBE_DIR>/<pid>.json``. Measurement only: the node never loads it.
"""

from __future__ import annotations

import atexit
import json
import os
import time

_DIRECTORY = os.environ.get("DMQ_WAKE_PROBE_DIR")

if _DIRECTORY:
    import trio
    from trio.abc import Instrument

    _wakes: list[tuple[float, str]] = []

    class _WakeProbe(Instrument):
        def __init__(self) -> None:
            self.waiting = False

        def after_io_wait(self, timeout: float) -> None:
            self.waiting = timeout > 0

        def before_task_step(self, task) -> None:
            if self.waiting:
                self.waiting = False
                _wakes.append((time.monotonic(), task.name))

    _run = trio.run

    def _run_probed(*args, **kwargs):
        kwargs["instruments"] = [*kwargs.get("instruments", ()), _WakeProbe()]
        return _run(*args, **kwargs)

    trio.run = _run_probed

    def _write() -> None:
        with open(os.path.join(_DIRECTORY, f"{os.getpid()}.json"), "w") as out:
            json.dump(_wakes, out)

    atexit.register(_write)
