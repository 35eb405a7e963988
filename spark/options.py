"""The Spark options every capacity command takes, and their command-line flags.

Shared by ``dmq capacity-report`` and ``python -m spark`` so both speak the same flags.
Importing this module does not import pyspark (the ``dmq`` CLI builds its parser without it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

__all__ = ["SparkOptions", "add_spark_arguments", "spark_options"]


@dataclass(frozen=True)
class SparkOptions:
    #: Master URL; None: the running session's, else ``local[*]``.
    master: str | None = None
    #: Start a standalone master and this many workers on loopback for the run (0: no).
    start_cluster: int = 0
    #: ``--conf KEY=VALUE`` pairs, applied last (they win over every default here).
    conf: tuple[tuple[str, str], ...] = ()
    executor_memory: str | None = None
    executor_cores: int | None = None
    #: The Python the executors run; None: this interpreter when they run on this machine.
    executor_python: str | None = None


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not at least 1")
    return value


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Spark")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--master", default=None,
                       help="Spark master URL (default: local[*]), e.g. spark://host:7077, yarn, k8s://...")
    where.add_argument("--start-cluster", type=_positive, default=0, metavar="WORKERS",
                       help="start a standalone master and WORKERS workers of the installed pyspark on "
                            "127.0.0.1 for this run, and stop them afterwards")
    group.add_argument("--conf", type=_conf_pair, action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting (repeatable), e.g. --conf spark.sql.shuffle.partitions=64")
    group.add_argument("--executor-memory", default=None, metavar="SIZE",
                       help="memory of each executor, e.g. 2g (with --start-cluster also each worker's; default 1g)")
    group.add_argument("--executor-cores", type=_positive, default=None, metavar="N",
                       help="cores of each executor (with --start-cluster also each worker's; default 1)")
    group.add_argument("--executor-python", default=None, metavar="PYTHON",
                       help="the Python executors run (default: PYSPARK_PYTHON if set, else this interpreter "
                            "when the executors run on this machine, else the cluster's python3)")


def spark_options(args: argparse.Namespace) -> SparkOptions:
    return SparkOptions(master=args.master, start_cluster=args.start_cluster, conf=tuple(args.conf),
                        executor_memory=args.executor_memory, executor_cores=args.executor_cores,
                        executor_python=args.executor_python)
