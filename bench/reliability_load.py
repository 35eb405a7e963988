"""Load: 1 000 Mithril signers on the local socket and 20 node-to-node peers, for minutes.

A ``dmq-node`` process (reference rate limit: one message per pool per 60 s) with a stake
file of 1 001 pools. Every round (62 s) the 1 000 signers each open a connection, complete
the handshake, wait until all 1 000 are connected at once, then submit one message, send
MsgDone and close: the Mithril signer pattern at its peak. Twenty peers stay connected over
TCP and pull everything (sig submission V2), five aggregators hold blocking requests. From
the second round on, one more pool floods: it submits back to back on one connection, and
the rate limit must cut it to one message a minute without slowing the others.

Printed: soft and hard ``ulimit -n`` (the soft one is raised to the hard one, capped at
65 536; the node inherits it), peak resident memory and file descriptors of the node from
``/proc``, both again after the run (a leak shows as growth), p50 / p99 submission latency
per round, what the flood got through, and what the peers and aggregators received.

    .venv/bin/python bench/reliability_load.py [--minutes 5] [--signers 1000] [--peers 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from miniprotocols.sig_submission import Side  # noqa: E402
from dmq.diffusion.sig_submission import PullingPeer, ServingPeer  # noqa: E402
from tests.miniprotocols.sig_submission.helpers import ListSigSource  # noqa: E402
from tests.dmq.diffusion.rogue import Rogue, open_side  # noqa: E402
from tests.e2e.messages import generated_signer  # noqa: E402
from tests.e2e.raw_n2c import (  # noqa: E402
    ACCEPT, ConnectionLost, RawN2CClient, accept_version,
)
from tests.reliability.faults import MAGIC, devnet_node  # noqa: E402

ROUND = 62.0


def raise_fd_limit() -> tuple[int, int, int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, 65_536) if hard != resource.RLIM_INFINITY else 65_536
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return soft, hard, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def proc_figures(pid: int) -> tuple[int, int, int]:
    """(VmRSS, VmHWM, open file descriptors) of ``pid``."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) * 1024
    return values["VmRSS"], values["VmHWM"], len(os.listdir(f"/proc/{pid}/fd"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class CountingSink:
    """A peer's store: wants what it has not seen, counts what arrives."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()

    def wanted(self, announced):
        return [i for i, _ in announced if i not in self.seen]

    async def accept(self, raw_messages):
        self.seen.update(raw[3:35] for raw in raw_messages)

    def release(self, ids):
        pass


async def run_peer(port: int, sink: CountingSink, errors: list[str]) -> None:
    """An honest peer: pulls everything from the node, and answers its pulls (with nothing)."""
    try:
        async with Rogue(port, 2) as rogue, trio.open_nursery() as nursery:
            serving = ServingPeer(rogue.dialect, rogue.channel(Side.SERVING), ListSigSource([]),
                                  blocking_timeout=1.0)
            nursery.start_soon(serving.run)
            driver = await open_side(rogue, Side.PULLING)
            await PullingPeer(rogue.dialect, driver, sink).run()
    except Exception as exc:
        errors.append(f"peer: {type(exc).__name__}: {exc}")


async def run_aggregator(path: Path, got: Counter, errors: list[str]) -> None:
    from tests.e2e.test_crash_recovery import split_non_blocking_reply
    try:
        async with await RawN2CClient.connect(path) as client:
            assert await client.handshake(MAGIC) == accept_version(MAGIC)
            while True:
                reply = await client.request(blocking=True)
                # [2, [_ msg...]] blocking replies: count the messages.
                messages, _ = split_non_blocking_reply(b"\x83\x01" + reply[2:] + b"\xf4")
                got.update(raw[3:35] for raw in messages)
    except Exception as exc:
        errors.append(f"aggregator: {type(exc).__name__}: {exc}")


class Round:
    def __init__(self, number: int, signers: int) -> None:
        self.number = number
        self.connected = 0
        self.all_connected = trio.Event()
        self.signers = signers
        self.latencies: list[float] = []
        self.whole: list[float] = []
        self.replies: Counter = Counter()
        self.peak_open = 0
        self.open = 0
        self.rss = 0


async def signer_publishes(path: Path, signer, rnd: Round, accepted: set[bytes], errors: list[str]) -> None:
    began = time.monotonic()
    raw = signer.sign().raw
    try:
        async with await RawN2CClient.connect(path) as client:
            rnd.open += 1
            rnd.peak_open = max(rnd.peak_open, rnd.open)
            try:
                assert await client.handshake(MAGIC) == accept_version(MAGIC)
                rnd.connected += 1
                if rnd.connected == rnd.signers:
                    rnd.all_connected.set()
                with trio.move_on_after(30):
                    await rnd.all_connected.wait()
                sent = time.monotonic()
                reply = await client.submit(raw)
                rnd.latencies.append(time.monotonic() - sent)
                await client.submission_done()
            finally:
                rnd.open -= 1
    except (ConnectionLost, OSError) as exc:
        rnd.connected += 1 if not rnd.all_connected.is_set() else 0
        if rnd.connected == rnd.signers:
            rnd.all_connected.set()
        rnd.replies[f"failed: {type(exc).__name__}"] += 1
        errors.append(f"signer: {type(exc).__name__}: {exc}")
        return
    rnd.whole.append(time.monotonic() - began)
    rnd.replies["accepted" if reply == ACCEPT else reply.hex()[:12]] += 1
    if reply == ACCEPT:
        accepted.add(raw[3:35])


async def flood(path: Path, signer, stop: trio.Event, tally: Counter, accepted: set[bytes]) -> None:
    async with await RawN2CClient.connect(path) as client:
        assert await client.handshake(MAGIC) == accept_version(MAGIC)
        while not stop.is_set():
            raw = signer.sign().raw
            reply = await client.submit(raw)
            if reply == ACCEPT:
                tally["accepted"] += 1
                accepted.add(raw[3:35])
            else:
                tally["SigTooFrequent" if b"SigTooFrequent" in reply else reply.hex()[:16]] += 1


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--signers", type=int, default=1000)
    parser.add_argument("--peers", type=int, default=20)
    parser.add_argument("--aggregators", type=int, default=5)
    args = parser.parse_args()

    soft, hard, now_soft = raise_fd_limit()
    print(f"ulimit -n: soft {soft}, hard {hard}; soft raised to {now_soft} (inherited by the node)")
    began = time.monotonic()
    signers = [generated_signer(1000 + n) for n in range(args.signers)]
    flooder = generated_signer(999)
    print(f"{args.signers + 1} pools generated in {time.monotonic() - began:.1f} s")

    with tempfile.TemporaryDirectory(prefix="dql") as tmp:
        workdir = Path(tmp) / "node"
        workdir.mkdir()
        stake = {"epoch": 3, "maxKESEvolutions": 60,
                 "pools": {s.pool_id.hex(): 1_000_000 for s in [*signers, flooder]}}
        (workdir / "stake.json").write_text(json.dumps(stake))
        node = devnet_node(workdir, StakeSource="stake.json")
        node.extra_flags = ()                        # the reference rate limit: 60 s per pool
        node.start_timeout = 120.0                   # a loaded machine
        node.start()
        pid = node.pid
        listening: list[str] = []
        while not listening:                          # diffusion starts after the local socket
            await trio.sleep(0.1)
            listening = [e["endpoint"] for e in node.trace_events("NodeListening") if e["link"] == "n2n"]
        port = int(listening[0].rsplit(":", 1)[1])
        base = proc_figures(pid)
        print(f"node pid {pid}: at start RSS {base[0] / 1e6:.1f} MB, fds {base[2]}")

        errors: list[str] = []
        accepted: set[bytes] = set()
        sinks = [CountingSink() for _ in range(args.peers)]
        aggregated: list[Counter] = [Counter() for _ in range(args.aggregators)]
        samples: list[tuple[float, int, int, int]] = []
        rounds: list[Round] = []
        flood_tally: Counter = Counter()
        stop_flood = trio.Event()

        async def sampler():
            while True:
                samples.append((time.monotonic(), *proc_figures(pid)))
                await trio.sleep(1.0)

        deadline = time.monotonic() + args.minutes * 60
        async with trio.open_nursery() as background:
            background.start_soon(sampler)
            for sink in sinks:
                background.start_soon(run_peer, port, sink, errors)
            for got in aggregated:
                background.start_soon(run_aggregator, node.socket_path, got, errors)
            await trio.sleep(1.0)
            number = 0
            while time.monotonic() < deadline:
                number += 1
                rnd = Round(number, args.signers)
                rounds.append(rnd)
                started = time.monotonic()
                if number == 2:
                    background.start_soon(flood, node.socket_path, flooder, stop_flood, flood_tally, accepted)
                async with trio.open_nursery() as publishing:
                    for signer in signers:
                        publishing.start_soon(signer_publishes, node.socket_path, signer, rnd, accepted, errors)
                rss, hwm, fds = proc_figures(pid)
                rnd.rss = rss
                samples.append((time.monotonic(), rss, hwm, fds))
                print(f"round {number}: {dict(rnd.replies)}; at once {rnd.peak_open} connections; submission "
                      f"p50 {percentile(rnd.latencies, 0.5) * 1e3:.0f} ms, p99 {percentile(rnd.latencies, 0.99) * 1e3:.0f} ms"
                      f" (connect to close p50 {percentile(rnd.whole, 0.5) * 1e3:.0f} ms, p99 "
                      f"{percentile(rnd.whole, 0.99) * 1e3:.0f} ms); round took {time.monotonic() - started:.1f} s; "
                      f"RSS {rss / 1e6:.1f} MB, fds {fds}; flood so far {dict(flood_tally)}", flush=True)
                rest = started + ROUND - time.monotonic()
                if time.monotonic() + max(0.0, rest) >= deadline:
                    break
                await trio.sleep(max(0.0, rest))
            stop_flood.set()
            await trio.sleep(3.0)                        # let peers and aggregators catch up
            background.cancel_scope.cancel()
        await trio.sleep(2.0)                            # every connection closed: count what stays open
        after = proc_figures(pid)
        node.kill()

    peak_rss = max(s[1] for s in samples)
    peak_fds = max(s[3] for s in samples)
    print(f"node: peak RSS {peak_rss / 1e6:.1f} MB (VmHWM {after[1] / 1e6:.1f} MB), peak fds {peak_fds}; "
          f"after all clients left: RSS {after[0] / 1e6:.1f} MB, fds {after[2]} (at start {base[2]})")
    print(f"RSS after each round: {', '.join(f'{r.rss / 1e6:.1f}' for r in rounds)} MB "
          f"(a leak grows round after round)")
    all_lat = [x for r in rounds for x in r.latencies]
    print(f"submission latency over {len(all_lat)} submissions: p50 {percentile(all_lat, 0.5) * 1e3:.0f} ms, "
          f"p99 {percentile(all_lat, 0.99) * 1e3:.0f} ms, max {max(all_lat) * 1e3:.0f} ms")
    quiet = rounds[0].latencies
    flooded = [x for r in rounds[1:] for x in r.latencies]
    if flooded:
        print(f"rate limit: the flooding pool sent {sum(flood_tally.values())} messages, {flood_tally['accepted']} "
              f"accepted ({dict(flood_tally)}); honest p50 without flood {statistics.median(quiet) * 1e3:.0f} ms, "
              f"with flood {statistics.median(flooded) * 1e3:.0f} ms")
    got_by_peers = [len(s.seen & accepted) for s in sinks]
    got_by_aggregators = [len(set(c) & accepted) for c in aggregated]
    print(f"accepted {len(accepted)}; each peer received min {min(got_by_peers)} / max {max(got_by_peers)}; "
          f"each aggregator min {min(got_by_aggregators)} / max {max(got_by_aggregators)}")
    print(f"errors: {len(errors)} {Counter(e.split(':')[0] + ':' + e.split(':')[1] for e in errors).most_common(5)}")
    print("(figures from a shared 2-core machine loaded by other jobs)")


if __name__ == "__main__":
    trio.run(main)
