"""What a node's own per-message work costs, above the transport: decode, validate, admit, store, trace.

The parts a running node builds (``dmq/cli/wiring.py``), in this process, without sockets: a real
validator over a stake view of the run's pools, a durable LMDB mempool with its group-commit
writer in a worker thread, the tracer with the node's two sinks (the log, JSON lines at the
default severities, written to ``/dev/null``; the Prometheus metrics), the ingress and the local
service's ``submit``. Messages are the diffusion cost benchmark's (``bench/diffusion_cost.py``:
300 pools, 1,084 bytes, a pool's messages 12 s apart in signed time, ``MinSigDelay`` 6).

Two cases, each over ``--messages`` messages:

* **mix**: what a node of the 6-node mesh sees: of every 6 messages, 5 relayed by peers (one per
  reply, admitted in the connection's reader: ``Ingress.submit_from_peer_now``) and 1 submitted
  by a local client (``LocalService.submit``: durable before its verdict, so it takes the
  relayed ones queued before it into its group commit);
* **local**: every message from a local client, each awaiting its group commit.

``--history MINUTES`` starts each run's validator with the check-3 history of a node that has
run that long at the same rate: every pool's accepted signed times, one every 12 s before its
first message of the run, as many as the node keeps open (``dmq.validation.rate.FOLD_MARGIN``
plus the messages' lifetime: about 150 a pool after 30 minutes). A fresh node keeps none, so
without it the figures are those of a node's first minutes.

A third case, **hop**, measures the one thread hop of each group commit: a call that does nothing,
awaited ``--messages`` times through ``trio.to_thread.run_sync`` and through the mempool's own
commit thread (``dmq.mempool.durable.CommitThread``), CPU per hop.

Figures per message: CPU of the whole process (every thread: the event loop and the LMDB
commits) and of the event loop's thread alone, best of ``--rounds`` runs; then one run under
cProfile, giving Python function calls per message by package (robust on a busy machine; the
profiler's own cost is left out of the CPU figures, which come from runs without it).

    .venv/bin/python bench/ingress_cost.py [--messages 1800] [--rounds 3] [--cases mix,local,hop] [--top 0]
        [--history MINUTES]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.diffusion_line import make_messages  # noqa: E402
from dmq.clock import SystemClock  # noqa: E402
from dmq.ingress import Ingress  # noqa: E402
from dmq.local_service import LocalService  # noqa: E402
from dmq.mempool import open_durable_mempool  # noqa: E402
from dmq.metrics import NodeMetrics  # noqa: E402
from dmq.stake import PoolStake, StakeView  # noqa: E402
from dmq.trace import LogSink, Tracer  # noqa: E402
from dmq.validation import BucketPolicy, Schedule, Validator  # noqa: E402
from dmq.validation.pool_state import PoolState  # noqa: E402
from dmq.validation.rate import FOLD_MARGIN  # noqa: E402

POOLS = 300
PERIOD = 12.0
MIN_SIG_DELAY = 6
TTL = 1700
#: Of every ``MIX`` messages a mesh node handles, one comes from its own local clients.
MIX = 6
MAGIC = 2147483690
PACKAGES = ("ouroboros_mux", "protocol_engine", "handshake", "miniprotocols", "dmq", "trio")
PEER = "127.0.0.1:3001"


def kept_times(minutes: float) -> int:
    """Signed times a pool keeps open after ``minutes`` of messages ``PERIOD`` seconds apart."""
    return int(min(minutes * 60.0, FOLD_MARGIN + TTL) // PERIOD)


def first_expiries(messages: list) -> dict[bytes, int]:
    """Each pool's first signed expiry among ``messages``."""
    first: dict[bytes, int] = {}
    for message in messages:
        first.setdefault(message.pool_id, message.expires_at)
    return first


def history_state(first: dict[bytes, int], minutes: float) -> PoolState:
    """The validator's pool state after every pool's messages were accepted ``PERIOD`` seconds
    apart for ``minutes`` before its first message of the run (``first``, :func:`first_expiries`):
    check 3's schedules, built before a run's timers start."""
    state = PoolState()
    policy = BucketPolicy(1, float(MIN_SIG_DELAY))
    kept = kept_times(minutes)
    for pool_id, expires_at in first.items():
        schedule = Schedule()
        for k in range(kept, 0, -1):
            schedule.add(policy, float(expires_at - k * PERIOD))
        state.spacing[pool_id] = schedule
    return state


async def _run(case: str, raws: list[bytes], keys: list, directory: Path,
               state: PoolState | None = None) -> tuple[float, float]:
    """Admit every message of ``raws`` (the validator on ``state`` when given); returns the loop
    thread's CPU seconds and the wall seconds."""
    clock = SystemClock()
    view = StakeView(clock, max_kes_evolutions=62)
    from dmq.message import pool_id_of

    view.update({pool_id_of(cold_vk): PoolStake(1, 1, 1) for cold_vk, _, _ in keys}, 500)
    tracer = Tracer(clock.now)
    tracer.add_sink(NodeMetrics())
    null = open(os.devnull, "w")
    tracer.add_sink(LogSink(null, backend="Stdout MachineFormat", host="bench"))
    try:
        async with open_durable_mempool(directory, clock) as mempool:
            ingress = Ingress(mempool, Validator(view, clock, min_sig_delay=MIN_SIG_DELAY, state=state), tracer)
            local = LocalService(ingress, mempool, tracer, MAGIC)
            started, wall = time.thread_time(), time.perf_counter()
            for i, raw in enumerate(raws):
                if case == "local" or i % MIX == MIX - 1:
                    await local.submit(raw)
                else:
                    ingress.submit_from_peer_now([raw], PEER)
                    await trio.lowlevel.checkpoint()   # the reader's next read: other tasks run
            loop_cpu, wall = time.thread_time() - started, time.perf_counter() - wall
            if len(mempool) != len(raws):
                raise RuntimeError(f"{case}: {len(raws)} messages, the mempool holds {len(mempool)}")
    finally:
        null.close()
    return loop_cpu, wall


def run_case(case: str, raws: list[bytes], keys: list, profile: cProfile.Profile | None = None,
             history: tuple[dict[bytes, int], float] | None = None) -> tuple[float, float]:
    """``(process CPU, loop thread CPU)`` seconds per message of one run (a fresh node each run);
    ``history``: each pool's first expiry and the minutes of check 3's history before it."""
    state = history_state(*history) if history else None
    with tempfile.TemporaryDirectory(prefix="ingress-cost") as directory:
        process = time.process_time()
        if profile is not None:
            profile.enable()
        try:
            loop_cpu, _ = trio.run(_run, case, raws, keys, Path(directory), state)
        finally:
            if profile is not None:
                profile.disable()
        return (time.process_time() - process) / len(raws), loop_cpu / len(raws)


def _nothing() -> None:
    return None


async def _hops(runner: str, count: int) -> float:
    """Process CPU seconds per hop, over ``count`` hops through ``runner``."""
    from dmq.mempool.durable import CommitThread  # not in the trees before it: imported for this case only

    thread = CommitThread()
    run_sync = trio.to_thread.run_sync if runner == "to_thread" else thread.run_sync
    try:
        started = time.process_time()
        for _ in range(count):
            await run_sync(_nothing)
        return (time.process_time() - started) / count
    finally:
        thread.close()


def calls_by_package(profile: cProfile.Profile, messages: int, top: int) -> tuple[float, dict[str, float]]:
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    by_package: collections.Counter = collections.Counter()
    for key, (_, calls, *_rest) in stats.items():
        by_package[next((p for p in PACKAGES if f"/{p}/" in key[0]), "other")] += calls
    if top:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("ncalls").print_stats(top)
        print(out.getvalue())
    return sum(by_package.values()) / messages, {p: n / messages for p, n in by_package.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1800)
    parser.add_argument("--rounds", type=int, default=3, help="runs per case; the lowest CPU is kept")
    parser.add_argument("--cases", default="mix,local")
    parser.add_argument("--top", type=int, default=0, help="also print the N most called functions")
    parser.add_argument("--history", type=float, default=0.0, metavar="MINUTES",
                        help="start each run with check 3's history of a node that has run this long")
    args = parser.parse_args()
    cases = args.cases.split(",")
    load = os.getloadavg()
    keys, messages = make_messages(args.messages, POOLS, ttl=TTL, spacing=PERIOD)
    raws = [m.raw for m in messages]
    history = (first_expiries(messages), args.history) if args.history else None
    print(f"{len(raws)} messages of {len(raws[0])} bytes from {POOLS} pools; load average {load[0]:.2f} at the start")
    if args.history:
        print(f"check 3's history of {args.history:g} minutes: {kept_times(args.history)} signed times "
              "kept per pool at the start")
    for case in cases:
        if case == "hop":
            for runner in ("to_thread", "commit thread"):
                hops = [trio.run(_hops, runner, len(raws)) for _ in range(args.rounds)]
                print(f"  hop  : {runner:<13} CPU per hop {min(hops) * 1e6:5.1f} µs (runs: "
                      + ", ".join(f"{h * 1e6:.1f}" for h in hops) + ")")
            continue
        runs = [run_case(case, raws, keys, history=history) for _ in range(args.rounds)]
        process, loop = min(r[0] for r in runs), min(r[1] for r in runs)
        profile = cProfile.Profile()
        run_case(case, raws, keys, profile, history=history)
        calls, by_package = calls_by_package(profile, len(raws), args.top)
        print(f"  {case:<5}: CPU per message {process * 1e6:6.1f} µs (all threads; runs: "
              + ", ".join(f"{r[0] * 1e6:.1f}" for r in runs) + f"), event loop {loop * 1e6:6.1f} µs")
        print(f"         Python calls per message {calls:6.1f}: "
              + ", ".join(f"{p} {n:.1f}" for p, n in sorted(by_package.items(), key=lambda kv: -kv[1]) if n >= 0.05))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
