"""The capacity report from a recorded devnet at mainnet signer count: the project's answer
to CIP-0137's tables (``docs/capacity/``).

Runs a network of in-process nodes (``tests/dmq/recorder/capacity_network.py``: full nodes with
diffusion on loopback, real KES signatures, every hop validated) on a scaled clock: 3,000
pools of which 1,500 sign every minute, for 50 simulated minutes, so that the mempools
reach their steady state one 30-minute TTL after the start and stay there for 20 minutes.
Every node records its traffic; the capacity pipeline (Spark, local mode unless
``--master``) then reproduces the CIP, measures the recording, extrapolates it to 3,000 and
3,100 pools and writes the report, with the command that produced it at the top.

    .venv/bin/python bench/capacity_devnet.py [--nodes 4] [--degree 2] [--pools 3000] [--rounds 50]
        [--output docs/capacity] [--workdir DIR] [--master URL]
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from spark.pipeline import capacity_report  # noqa: E402
from spark.progress import Progress  # noqa: E402
from tests.dmq.recorder.capacity_network import LoadSpec, NetworkRun, record_network  # noqa: E402


def header(command: str, run: NetworkRun) -> list[str]:
    spec = run.spec
    return [
        f"Produced by `{command}` (from the checkout root).",
        "",
        f"The recording: a devnet of {spec.nodes} full nodes in one process, each dialling the next "
        f"{min(spec.degree, spec.nodes - 1)} of a ring over loopback TCP, validating every message on every hop; "
        f"{spec.pools:,} simulated stake pools with their own KES keys and operational certificates, "
        f"{spec.signers:,} of them signing each {spec.period_s}-second round (the CIP's 50 % eligible signers), "
        f"{spec.body_size}-byte bodies, expiry {spec.ttl_s // 60} minutes after signing, each pool's messages "
        f"submitted to its home node over a local connection. The clock is scaled: {spec.rounds} rounds "
        f"({spec.simulated_s // 60} simulated minutes, {run.submitted:,} messages, each accepted by every node) "
        f"ran in {run.real_seconds / 60:.1f} real minutes, so the mempools were in their steady state (one TTL "
        f"after the first message) for the last {max(0, spec.simulated_s - spec.ttl_s) // 60} minutes. Rates "
        "(outbound kB/s) are per simulated second; CPU is what the process really spent (it also ran the local "
        "clients, hence the *process* CPU rows are an upper bound), and memory is the heap of the one process "
        "holding every node's mempool, fitted against the messages they held together. Validation times are "
        "wall-clock nanoseconds around each message's checks, so a busy machine stretches them (load average "
        f"{run.load_average:.1f} on {os.cpu_count()} cores when the recording ended).",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = LoadSpec()
    parser.add_argument("--nodes", type=int, default=defaults.nodes)
    parser.add_argument("--degree", type=int, default=defaults.degree)
    parser.add_argument("--pools", type=int, default=defaults.pools)
    parser.add_argument("--rounds", type=int, default=defaults.rounds)
    parser.add_argument("--period", type=int, default=defaults.period_s)
    parser.add_argument("--ttl", type=int, default=defaults.ttl_s)
    parser.add_argument("--steps", type=int, default=defaults.steps, help="clock steps per round")
    parser.add_argument("--output", type=Path, default=Path("docs/capacity"))
    parser.add_argument("--workdir", type=Path, help="keep the recording and its Parquet here")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    args = parser.parse_args()
    if args.pools * 0.5 < 1 or args.rounds < 1 or args.nodes < 2:
        parser.error("needs at least two nodes, one round and two pools")
    spec = LoadSpec(nodes=args.nodes, degree=args.degree, pools=args.pools, rounds=args.rounds,
                    period_s=args.period, ttl_s=args.ttl, steps=args.steps)
    command = "python " + " ".join(shlex.quote(a) for a in ["bench/capacity_devnet.py", *sys.argv[1:]])
    with tempfile.TemporaryDirectory(prefix="dmq-capacity-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if (workdir / "recording").exists():
            parser.error(f"{workdir / 'recording'} exists: the report would mix this run with an earlier one")
        print(f"Capacity devnet: {spec.nodes} nodes, {spec.pools:,} pools ({spec.signers:,} signers per "
              f"{spec.period_s} s round), {spec.rounds} rounds = {spec.messages:,} messages", flush=True)
        started = time.perf_counter()
        run = trio.run(lambda: record_network(workdir, spec, report=lambda line: print("  " + line, flush=True)))
        print(f"  recorded in {time.perf_counter() - started:.0f} s", flush=True)
        path = capacity_report([run.recording], args.output, master=args.master, parquet=workdir / "parquet",
                               progress=Progress())
        text = path.read_text()
        title, rest = text.split("\n", 1)
        rest = rest.replace(str(run.recording), "recording")
        path.write_text("\n".join([title, "", *header(command, run)]) + rest)
        print(f"capacity report: {path}")


if __name__ == "__main__":
    main()
