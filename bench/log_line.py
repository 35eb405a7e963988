"""Cost of one log line on the per-message path: format only, and format + write + flush.

The local service writes a line for each accepted, delivered and expired Mithril message, so
the log's cost per line is part of the node's cost per message. The figures are the best of
several rounds of ``--lines`` lines each (the machine's other load only adds to them), for
the three events of a message, written to ``/dev/null``:

    .venv/bin/python bench/log_line.py [--lines 100000] [--rounds 7] [--human]
"""

from __future__ import annotations

import argparse
import os
import time

from dmq.trace import HUMAN, MACHINE, LogSink, MessageAccepted, MessageExpired, MessageNotified


def best_per_call(call, event, lines: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(lines):
            call(event)
        best = min(best, (time.perf_counter() - started) / lines)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--human", action="store_true", help="human lines instead of JSON")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    now = time.time()
    events = [MessageAccepted(now, os.urandom(32), os.urandom(28), 2650, "local", 61_000),
              MessageNotified(now, 1, 2650, "local#3"),
              MessageExpired(now, os.urandom(32), 2650)]
    with open(os.devnull, "w") as null:
        # Every line passes the filter (Debug), as on a node told to log everything.
        sink = LogSink(null, severities={"": "Debug"}, backend=HUMAN if args.human else MACHINE)
        for event in events:
            sink(event)  # compile the writer outside the timing
            formatted = best_per_call(sink.format, event, args.lines, args.rounds)
            written = best_per_call(sink, event, args.lines, args.rounds)
            print(f"{type(event).__name__:16} format {formatted * 1e6:5.2f} µs/line   "
                  f"format+write+flush {written * 1e6:5.2f} µs/line")


if __name__ == "__main__":
    main()
