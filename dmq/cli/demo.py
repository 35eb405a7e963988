"""``dmq demo`` (``make demo``): the project's main job on an embedded default.

A small devnet (:data:`DEMO`: three nodes in a line, thirty simulated stake pools with real
Sum6KES keys and operational certificates, one Mithril-style message per pool every five
seconds for a minute) runs with traffic recording on, then the capacity report (Spark in
local mode) turns what the nodes recorded into CIP-0137's tables. Everything goes under
``./devnet/``. Spark needs a Java runtime: without one the demo says so in one line before
starting anything, unless ``--no-report`` is given.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from dmq.cli.devnet import add_run_arguments
from dmq.errors import OperatorError

__all__ = ["add_parser", "run", "DEMO", "java_runtime"]

#: The embedded default, kept here so that ``make demo`` needs no flag.
DEMO = dict(nodes=3, topology="line", pools=30, period=5.0, duration=60.0, record_traffic=True)


def java_runtime() -> str | None:
    """The ``java`` Spark would start: ``$JAVA_HOME/bin/java``, else the first on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(Path(home) / "bin" / "java", os.X_OK):
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the embedded demo: a 3-node devnet for a minute, then the capacity report",
        description=f"Run a devnet of {DEMO['nodes']} nodes in a {DEMO['topology']} with {DEMO['pools']} simulated "
                    f"stake pools, each publishing one message every {DEMO['period']:g} s for "
                    f"{DEMO['duration']:g} s, with traffic recording on; then write the CIP-0137 capacity report "
                    "from the recording (Spark, local mode).")
    parser.add_argument("--duration", type=float, default=DEMO["duration"],
                        help=f"seconds of publishing (default: {DEMO['duration']:g})")
    parser.add_argument("--no-report", action="store_true", help="run the devnet only (no Spark, no Java needed)")
    parser.add_argument("--master", default=None, help="Spark master URL for the report (default: local[*])")
    add_run_arguments(parser, directory=Path("devnet"))


def run(args: argparse.Namespace) -> int:
    if not args.no_report and java_runtime() is None:
        raise OperatorError("no Java runtime found, and the capacity report runs on Spark, which needs one: "
                            "run 'bash scripts/ensure-java.sh' (or install a JRE 17), or pass --no-report")
    import trio

    from dmq.cli.capacity_report import write_report
    from lab.devnet import DevnetOptions, run_devnet

    options = DevnetOptions(**{**DEMO, "duration": args.duration}, directory=args.directory, live=not args.no_live)
    summary = trio.run(run_devnet, options)
    if args.no_report:
        return 0
    if summary.recording is None or summary.accepted == 0:
        raise OperatorError("the devnet published nothing, so there is nothing to report on")
    recording = Path(summary.recording)
    report = write_report([recording], Path(summary.directory) / "capacity-report", master=args.master)
    print(f"capacity report: {_shown(report)} (from the recording in {_shown(recording)})", flush=True)
    return 0


def _shown(path: Path) -> str:
    """``path`` from the current directory when it is below it (what a person types next)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
