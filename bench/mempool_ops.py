"""CPU cost of the mempool's own operations, per message: what a change of its layout must not slow.

Readers call the mempool on every reply: ``messages_after`` (a notification reply, a cursor),
``ids_after`` (a sig-submission id reply), ``lookup_unexpired`` (a body reply), ``contains``
(every id a peer announces). Ingress calls ``append``; a restart reopens the durable store.
Each is timed over N messages of the bench's mainnet size (decoded by ``dmq.codec`` first,
as the node holds them), best of 7 passes; the reopen, best of 3, counts the whole load
(LMDB scan, checksum, decode, index rebuild).

``--tree PATH`` (repeatable) measures the ``dmq`` package of another checkout instead of this
one; several trees are measured in turn, ``--repeat`` rounds, each in its own child process,
and the best of the rounds is printed, so that two trees are compared in one window.

    .venv/bin/python bench/mempool_ops.py [--messages 20000] [--tree PATH ...] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPS = ("append", "messages_after", "ids_after", "lookup_unexpired", "contains", "reopen")


def _best(run, passes: int) -> float:
    times = []
    for _ in range(passes):
        gc.collect()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(count: int) -> dict[str, float]:
    """Nanoseconds per message of each operation, with the ``dmq`` found first on ``sys.path``."""
    # The tree's dmq first: mempool_memory puts this checkout on sys.path when imported.
    from dmq.clock import ManualClock
    from dmq.codec import decode_message
    from dmq.mempool import DurableMempool, Mempool
    from mempool_memory import NOW, wire_message

    messages = [decode_message(wire_message(seed, 2_650)) for seed in range(count)]
    ids = [bytes(bytearray(m.message_id)) for m in messages]  # fresh objects, as a peer's ids arrive

    def append() -> Mempool:
        mempool = Mempool(ManualClock(now=NOW))
        for start in range(0, count, 100):
            mempool.append(messages[start:start + 100])
        return mempool

    held = append()

    def read(call) -> None:
        position = -1
        while batch := call(position, 100):
            position = batch[-1][0] if isinstance(batch[-1], tuple) else batch[-1].index

    costs = {
        "append": _best(append, 7),
        "messages_after": _best(lambda: read(held.messages_after), 7),
        "ids_after": _best(lambda: read(held.ids_after), 7),
        "lookup_unexpired": _best(lambda: [held.lookup_unexpired(i) for i in ids], 7),
        "contains": _best(lambda: [held.contains(i) for i in ids], 7),
    }
    with tempfile.TemporaryDirectory(prefix="mempool-ops-") as directory:
        durable = DurableMempool(directory, ManualClock(now=NOW))
        for start in range(0, count, 100):
            durable.append(messages[start:start + 100])
        durable.close()
        costs["reopen"] = _best(lambda: DurableMempool(directory, ManualClock(now=NOW)).close(), 3)
    return {op: seconds / count * 1e9 for op, seconds in costs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--tree", action="append", help="a checkout whose dmq package to measure (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the trees (best kept)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path[:0] = [args.child, str(HERE)]
        costs = measure(args.messages)
        import dmq

        if not Path(dmq.__file__).resolve().is_relative_to(Path(args.child)):
            raise SystemExit(f"measured {dmq.__file__}, not the tree {args.child}")
        print(json.dumps(costs))
        return

    trees = [str(Path(tree).resolve()) for tree in (args.tree or [str(HERE.parent)])]
    best: dict[str, dict[str, float]] = {tree: {} for tree in trees}
    for _ in range(args.repeat):
        for tree in trees:
            out = subprocess.run([sys.executable, __file__, "--child", tree, "--messages", str(args.messages)],
                                 check=True, capture_output=True, text=True).stdout
            for op, cost in json.loads(out).items():
                best[tree][op] = min(cost, best[tree].get(op, cost))
    print(f"Mempool operations, ns per message ({args.messages:,} messages of 2,650 bytes, "
          f"best of {args.repeat} rounds); load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'operation':<18}" + "".join(f"{Path(tree).name:>16}" for tree in trees))
    for op in OPS:
        print(f"{op:<18}" + "".join(f"{best[tree][op]:>16,.0f}" for tree in trees))


if __name__ == "__main__":
    main()
