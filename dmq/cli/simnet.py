"""``dmq simnet``: thousands of DMQ nodes in one process on a virtual clock, over simulated links.

The same node code as ``dmq netlab`` (the composition root builds every node with
:func:`dmq.cli.wiring.assemble_node`), the same workload, topology and faults, but the
nodes share one trio run on ``trio.testing.MockClock`` and talk over in-memory links with
the round-trip times of real regions, jitter, loss and bandwidth
(:mod:`lab.simnet`, docs/network-scale.md "Simulated time"). Needs no privileges. With
``--mithril-registration`` every node runs the Mithril signer-registration application and
signers register every epoch (:mod:`lab.simnet.registration`, docs/mithril-registration.md 10.1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dmq.cli.netlab import _number, add_workload_arguments
from dmq.errors import OperatorError

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simnet", help="simulate N DMQ nodes in one process on a virtual clock, with faults, and check delivery",
        description="Run N full DMQ nodes in one process on trio's virtual clock, linked by simulated links "
                    "(inter-region round-trip times, jitter, loss, bandwidth); pools publish to their home "
                    "nodes, some nodes are killed and restarted, a third of the network is partitioned and "
                    "healed, a peer floods one node with invalid messages; report whether every accepted "
                    "message reached every node exactly once, the latencies and the bytes per message.")
    add_workload_arguments(parser, nodes=200, pools=3000, period=120.0, duration=600.0, partition_fraction=1 / 3,
                           partition_default="a third", period_note=", i.e. 1,500 a minute", time_word="virtual seconds")
    parser.add_argument("--active-peers", type=_number(int, low=1, low_inclusive=True), default=20,
                        help="TargetNumberOfActivePeers of every node (default: 20, the reference relay's)")
    parser.add_argument("--no-flood", dest="flood", action="store_false",
                        help="no peer flooding a node with invalid messages")
    parser.add_argument("--eclipse", type=_number(int, low=0, low_inclusive=True), default=0,
                        help="stake-less nodes dialling one victim only (default: 0)")
    parser.add_argument("--jitter", type=_number(float, low=0, low_inclusive=True), default=0.1,
                        help="extra one-way delay, as a fraction of the one-way latency (default: 0.1)")
    parser.add_argument("--loss", type=_number(float, low=0, low_inclusive=True, high=1), default=0.0,
                        help="probability a write is lost once and retransmitted (default: 0)")
    parser.add_argument("--uniform-rtt", type=_number(float, low=0), default=None, dest="uniform_rtt_ms",
                        metavar="MS", help="every pair of nodes this round trip in milliseconds, instead of "
                                           "the inter-region matrix (default: the matrix)")
    parser.add_argument("--hold-after-known", type=_number(float, low=0, low_inclusive=True), default=None,
                        dest="hold_after_known_ms", metavar="MS",
                        help="every node's SigSubmissionHoldAfterKnown in milliseconds, 0 for none "
                             "(default: the node's default)")
    parser.add_argument("--hold-after-known-max", type=_number(float, low=0, low_inclusive=True), default=None,
                        dest="hold_after_known_max_ms", metavar="MS",
                        help="every node's SigSubmissionHoldAfterKnownMax in milliseconds, the longest hold "
                             "(default: the node's default)")
    parser.add_argument("--tick", type=_number(float, low=0, low_inclusive=True), default=None, dest="tick_ms",
                        metavar="MS", help="put every link arrival off to the next multiple of MS milliseconds, so "
                                           "arrivals within one tick wake their readers together (fewer passes of "
                                           "the run loop, up to MS more per link traversal); 0 for exact times "
                                           "(default: 1 from 500 nodes, 0 below)")
    parser.add_argument("--rate-mbit", type=_number(float, low=0), default=100.0,
                        help="each node's uplink and downlink in Mbit/s (default: 100)")
    parser.add_argument("--warmup", type=_number(float, low=0, low_inclusive=True), default=60.0,
                        help="virtual seconds for the nodes to find peers before publishing (default: 60)")
    parser.add_argument("--drain", type=_number(float, low=0, low_inclusive=True), default=300.0,
                        help="virtual seconds allowed after publishing for delivery and recovery (default: 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything random in the run")
    parser.add_argument("--dir", type=Path, default=None, dest="directory",
                        help="where the nodes' databases go (default: a temporary directory, in a tmpfs if any)")
    parser.add_argument("--record", type=Path, default=None,
                        help="record every node's traffic into this directory (for dmq capacity-report)")
    parser.add_argument("--processes", type=int, choices=(1, 2), default=1,
                        help="run the nodes in two processes, split by region, for about half the wall time on "
                             "two cores (no kills, partitions, flood, eclipse or recording; default: 1)")
    parser.add_argument("--allocator", choices=("auto", "python", "huge-pages"), default="auto",
                        help="the memory allocator the nodes run on: huge-pages (glibc's malloc on transparent "
                             "huge pages, about 13 %% less CPU for a heap of gigabytes), python (CPython's own) or "
                             "auto (huge pages from 500 nodes; default); the run starts itself again for it")
    parser.add_argument("--report", type=Path, default=Path("simnet-report.json"),
                        help="where the JSON report goes (default: simnet-report.json)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every node got every accepted message exactly once (with "
                             "--mithril-registration: unless every round agreed at every node)")
    mithril = parser.add_argument_group(
        "Mithril signer registration", "--mithril-registration runs the registration application "
        "(docs/mithril-registration.md 8) on every node, on one Blocklace topic, with --pools signers "
        "registering every epoch; --period, --duration, the faults and the flood do not apply")
    mithril.add_argument("--mithril-registration", action="store_true",
                         help="every node runs the registration application; report agreement per epoch")
    mithril.add_argument("--epochs", type=_number(int, low=1, low_inclusive=True), default=5,
                         help="Cardano epochs in which the signers register (default: 5)")
    mithril.add_argument("--epoch-length", type=_number(int, low=1, low_inclusive=True), default=120,
                         help="virtual seconds of a Cardano epoch (default: 120)")
    mithril.add_argument("--blocklace-interval", type=_number(int, low=1, low_inclusive=True), default=5,
                         help="the topic's Blocklace epoch interval in seconds (default: 5)")
    mithril.add_argument("--attempt-timeout", type=_number(int, low=1, low_inclusive=True), default=10,
                         help="the topic's Blocklace attempt timeout in seconds (default: 10)")
    mithril.add_argument("--spread", type=_number(float, low=0), default=0.5,
                         help="the part of each epoch, from its start, over which the registrations are sent "
                              "(default: 0.5)")
    mithril.add_argument("--electors", type=_number(int, low=1, low_inclusive=True), default=10,
                         help="nodes whose pools are the topic's electors and carry the registrations (default: 10; "
                              "docs/mithril-registration.md 10 says why not more)")
    mithril.add_argument("--equivocators", type=_number(int, low=0, low_inclusive=True), default=1,
                         help="signers that register two keys each epoch (default: 1)")
    mithril.add_argument("--quorum", choices=("stake", "count"), default="stake",
                         help="the topic's quorum rule (default: stake)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from dmq.cli.wiring import assemble_node
    from lab.simnet import SimnetOptions, run_simnet
    from lab.simnet.heap import restart_with

    console = Console(soft_wrap=True)
    say = lambda text: console.print(text, highlight=False)  # noqa: E731
    try:
        options = SimnetOptions(
            nodes=args.nodes, pools=args.pools, period=args.period, duration=args.duration, seed=args.seed,
            roots=args.roots, active_peers=args.active_peers, kill_fraction=args.kill_fraction,
            partition_fraction=args.partition_fraction,
            flood=args.flood, eclipse=args.eclipse, jitter=args.jitter, loss=args.loss, rate_mbit=args.rate_mbit,
            uniform_rtt_ms=args.uniform_rtt_ms,
            warmup=args.warmup, drain=args.drain, directory=args.directory, record=args.record,
            hold_after_known_ms=args.hold_after_known_ms, hold_after_known_max_ms=args.hold_after_known_max_ms,
            tick_ms=args.tick_ms)
    except ValueError as exc:
        raise OperatorError(str(exc)) from None
    if args.mithril_registration and args.processes != 1:
        raise OperatorError("--mithril-registration runs in one process (leave out --processes)")
    # Only once the options are known good: a run refused on them is not started twice.
    restart_with(args.allocator, args.nodes, say)
    if args.mithril_registration:
        return _run_registration(args, options, say)
    try:
        report = run_simnet(options, assemble_node, say=say, processes=args.processes)
    except ValueError as exc:
        raise OperatorError(str(exc)) from None
    for line in report.lines():
        say(line)
    report.write(args.report)
    say(f"report written to {args.report}")
    if args.check and not report.complete:
        raise OperatorError(f"the run was not complete: {report.missing} deliveries missing, "
                            f"{report.duplicates} duplicated")
    return 0


def _run_registration(args: argparse.Namespace, options, say) -> int:
    from dmq.cli.wiring import assemble_node
    from lab.simnet.registration import RegistrationPlan, run_registration_simnet

    plan = RegistrationPlan(epochs=args.epochs, epoch_length=args.epoch_length, interval=args.blocklace_interval,
                            attempt_timeout=args.attempt_timeout, spread=args.spread, electors=args.electors,
                            equivocators=args.equivocators, quorum=args.quorum)
    try:
        # The report so far is written after each epoch: a long run that is stopped keeps its rounds.
        report = run_registration_simnet(options, plan, assemble_node, say=say, progress=lambda r: r.write(args.report))
    except ValueError as exc:
        raise OperatorError(str(exc)) from None
    for line in report.lines():
        say(line)
    report.write(args.report)
    say(f"report written to {args.report}")
    if args.check and not report.agreed:
        raise OperatorError("not every round agreed at every node (see the report's rounds)")
    return 0
