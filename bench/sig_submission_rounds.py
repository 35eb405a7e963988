"""CPU per sig-submission round: a serving and a pulling peer over two real muxes on loopback TCP.

One process runs both ends of one connection (the node's own ``ServingPeer`` and ``PullingPeer``
over ``Mux`` and ``Bearer``): a message is appended to the serving side's mempool, the parked
blocking request is answered with its id, the pulling side takes the reply and asks again, and
one id in ``--want-every`` is fetched (a body request and reply), as a node of the mesh of
``bench/diffusion_cost.py`` fetches each message from one of its five peers. The figure is the
process's CPU time over the rounds, after a warm-up, per round: the cost of the protocol rounds
alone, without validation, storage or other nodes sharing the cores, so it moves little with
the machine's load. ``--idle MS`` sleeps that long after each round, as a node at mainnet's rate
sleeps between its wakes: what a round costs once the process's caches have gone cold (on a
virtual machine whose physical cores other work shares, several times what it costs warm).
``--tree PATH`` (repeatable) runs another checkout's peers, each tree in a process of its own,
alternated ``--repeat`` times. ``--cprofile`` runs the measured rounds under
cProfile and prints the Python function calls per round, by package (as
``bench/diffusion_cost.py --cprofile`` counts them per message per node): a count that does not
depend on the machine's load, while the CPU figures under the profiler mean nothing.

    .venv/bin/python bench/sig_submission_rounds.py [--rounds 3000] [--repeat 5] [--tree PATH ...] [--cprofile]
        [--idle MS[,MS...]]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARMUP = 100


def measure(rounds: int, want_every: int, profile_to: str | None = None, idle: float = 0.0) -> float:
    """Seconds of CPU per round in this process (the tree is whatever is first on the path).

    ``profile_to``: run the measured rounds under cProfile and write its statistics there.
    ``idle``: seconds slept after each round (the sleep's own wake is part of the round's cost).
    """
    import cProfile

    import trio
    import trio.testing

    from dmq.diffusion.sig_submission import PullingPeer, ServingPeer
    from miniprotocols import sig_submission_v2
    from miniprotocols.sig_submission import INGRESS_LIMIT, PROTOCOL_NUM
    from ouroboros_mux import Bearer, Mode, Mux, Provenance
    from tests.miniprotocols.sig_submission.helpers import make_message, message_id

    class Source:
        """The serving side's mempool: appended messages, answering parked requests at once."""

        def __init__(self) -> None:
            self.entries: list[tuple[int, bytes, bytes]] = []
            self.by_id: dict[bytes, bytes] = {}
            self.waiting: list = []
            self.grown = trio.Event()

        def append(self, raw: bytes) -> None:
            self.entries.append((len(self.entries), message_id(raw), raw))
            self.by_id[message_id(raw)] = raw
            self.grown.set()
            self.grown = trio.Event()
            waiting, self.waiting = self.waiting, []
            for callback in waiting:
                callback()

        def call_on_publish(self, callback) -> None:
            self.waiting.append(callback)

        def ids_after(self, position: int, limit: int):
            return [(i, m, len(r)) for i, m, r in self.entries[position + 1:position + 1 + limit]]

        async def wait_for_ids_after(self, position: int) -> None:
            while len(self.entries) <= position + 1:
                await self.grown.wait()

        def lookup(self, mid: bytes):
            return self.by_id.get(mid)

    class Sink:
        """The pulling side's node: wants one id in ``want_every``, counts what is settled."""

        def __init__(self) -> None:
            self.announced = 0
            self.settled = 0
            self.changed = trio.Event()

        def wanted(self, announced):
            chosen = []
            for i, _ in announced:
                self.announced += 1
                if self.announced % want_every == 0:
                    chosen.append(i)
                else:
                    self.settled += 1
            if len(chosen) < len(announced):
                self.changed.set()
            return chosen

        async def accept(self, raws) -> None:
            self.settled += len(raws)
            self.changed.set()

        def release(self, ids) -> None:
            pass

    async def run() -> float:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        pulling_stream = await trio.testing.open_stream_to_socket_listener(listeners[0])
        serving_stream = await listeners[0].accept()
        pulling_mux = Mux(Bearer(pulling_stream), Provenance.OUTBOUND)
        serving_mux = Mux(Bearer(serving_stream), Provenance.INBOUND)
        dialect = sig_submission_v2.DIALECT
        pulling_channel = pulling_mux.register(PROTOCOL_NUM, Mode.INITIATOR, INGRESS_LIMIT)
        serving_channel = serving_mux.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)
        source, sink = Source(), Sink()
        messages = [make_message(n, 1000) for n in range(WARMUP + rounds)]
        profiler = cProfile.Profile() if profile_to is not None else None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pulling_mux.run)
            nursery.start_soon(serving_mux.run)
            nursery.start_soon(ServingPeer(dialect, serving_channel, source).run)
            nursery.start_soon(PullingPeer(dialect, pulling_channel, sink).run)
            started = 0.0
            for n, raw in enumerate(messages):
                if n == WARMUP:
                    started = time.process_time()
                    if profiler is not None:
                        profiler.enable()
                source.append(raw)
                while sink.settled <= n:
                    sink.changed = trio.Event()
                    await sink.changed.wait()
                if idle:
                    await trio.sleep(idle)
            cpu = time.process_time() - started
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(profile_to)
            nursery.cancel_scope.cancel()
        for listener in listeners:
            await listener.aclose()
        return cpu / rounds

    return trio.run(run)


def _milliseconds(text: str) -> list[float]:
    try:
        values = [float(ms) for ms in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not milliseconds: {text!r}") from None
    if any(value < 0 for value in values):
        raise argparse.ArgumentTypeError(f"a sleep cannot be negative: {text!r}")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5, help="runs per tree, trees alternated")
    parser.add_argument("--want-every", type=int, default=5, help="one id in this many is fetched")
    parser.add_argument("--tree", action="append", default=None, metavar="PATH",
                        help="checkout whose peers to run (repeat for a before/after; default: this one)")
    parser.add_argument("--cprofile", action="store_true",
                        help="the measured rounds under cProfile: Python calls per round, by package")
    parser.add_argument("--idle", type=_milliseconds, default=[0.0], metavar="MS[,MS...]",
                        help="milliseconds slept after each round (several: each measured, alternated)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(measure(args.rounds, args.want_every, args.profile_to, args.idle[0] / 1e3))
        return
    if args.cprofile:
        # The nodes' count of bench/diffusion_cost.py (per message there, per round here), by package.
        sys.path.insert(0, str(ROOT))
        from bench.diffusion_cost import PACKAGES, call_counts
    trees = [str(Path(t).resolve()) for t in args.tree] if args.tree else [str(ROOT)]
    runs_of = [(tree, idle) for tree in trees for idle in args.idle]
    results: dict[tuple[str, float], list[float]] = {key: [] for key in runs_of}
    calls: dict[tuple[str, float], list[dict]] = {key: [] for key in runs_of}
    with tempfile.TemporaryDirectory() as scratch:
        profile_to = str(Path(scratch) / "rounds.pstats")
        for _ in range(args.repeat):
            for tree, idle in runs_of:
                # The tree first on the path, then this checkout (for the test helpers the bench uses).
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, str(ROOT)]))
                command = [sys.executable, __file__, "--child", tree, "--rounds", str(args.rounds),
                           "--want-every", str(args.want_every), "--idle", repr(idle)]
                if args.cprofile:
                    command += ["--profile-to", profile_to]
                out = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=tree)
                results[tree, idle].append(float(out.stdout.strip().splitlines()[-1]) * 1e6)
                if args.cprofile:
                    calls[tree, idle].append(call_counts(Path(profile_to), args.rounds))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds per run, one id in {args.want_every} fetched")
    for (tree, idle), runs in results.items():
        label = tree if idle == 0 else f"{tree}, {idle:g} ms idle after each round"
        if args.cprofile:
            print(f"  {label}, under cProfile, per round (CPU figures inflated):")
            print("        Python function calls: " + ", ".join(f"{c['calls']:.1f}" for c in calls[tree, idle]))
            for package in PACKAGES + ("other",):
                print(f"          in {package:<16}: "
                      + ", ".join(f"{c['by_package'].get(package, 0):.1f}" for c in calls[tree, idle]))
            continue
        print(f"  {label}: µs of CPU per round " + ", ".join(f"{r:.0f}" for r in runs)
              + f"  (min {min(runs):.0f}, median {statistics.median(runs):.0f})")


if __name__ == "__main__":
    main()
