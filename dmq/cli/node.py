"""``dmq-node``: start a node with the reference node's flags (docs/protocol/configuration.md section 11.1).

The flags, their defaults and the start-up refusals are those of the Haskell ``dmq-node``,
so service files and scripts written for it work unchanged; ``--stake-source``,
``--database-path``, ``--record-traffic`` and ``--prometheus-port`` are this node's additions.
Each flag overrides one configuration key; the configuration module does all parsing, so a
bad value reads the same whether it came from a flag or from the file.

Start-up order: version, configuration (file, flags, refusals, then a warning line per doubt),
topology, then the node runtime. Unlike the reference, an absent cardano-node socket does not
stop the start: the node serves as the reference does before its first stake snapshot and its
link waits for cardano-node (``dmq.cardano_node.link``). A port already in use is one
line naming it, as every other operator's mistake.
"""

from __future__ import annotations

import importlib
import inspect
from typing import NoReturn, Sequence

from dmq.cli import INTERRUPTED, OPERATOR_ERROR, OneLineArgumentParser, exit_with, package_version, report
from dmq.cli.node_flags import FLAG_KEYS, add_node_flags, add_running_flag
from dmq.config import NodeConfig, configuration_doubts, load_config
from dmq.errors import OperatorError
from dmq.topology import Topology, load_topology

__all__ = ["PROGRAM", "RUNTIME_MISSING", "FLAG_KEYS", "add_node_flags", "build_parser", "run", "main"]

PROGRAM = "dmq-node"
#: Exit status when the package has no node runtime (``dmq.cli.wiring``) to start.
RUNTIME_MISSING = 2


def build_parser() -> OneLineArgumentParser:
    parser = OneLineArgumentParser(prog=PROGRAM, description="Run the DMQ-Node", allow_abbrev=False)
    add_node_flags(parser)
    parser.add_argument("-v", "--version", action="store_true", help="Show dmq-node version")
    parser.add_argument("--check", action="store_true",
                        help="Check the configuration, files, sockets and database, print every problem, "
                             "and exit (0: ready to start) without starting the node")
    add_running_flag(parser)
    return parser


def _operator_error(group: BaseExceptionGroup) -> OperatorError | None:
    """The first operator's mistake among the (nested) exceptions of a nursery, if any."""
    for exc in group.exceptions:
        found = _operator_error(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, OperatorError):
            return found
    return None


def _start(config: NodeConfig, topology: Topology) -> int:
    """Hand over to the node runtime, imported late so that a broken runtime cannot hide ``-v``."""
    try:
        runtime = importlib.import_module("dmq.cli.wiring")
    except ModuleNotFoundError as exc:
        if exc.name != "dmq.cli.wiring":
            raise
        report(PROGRAM, "the node runtime is not installed")
        return RUNTIME_MISSING
    if inspect.iscoroutinefunction(runtime.run_node):
        import trio

        try:
            result = trio.run(runtime.run_node, config, topology)
        except BaseExceptionGroup as group:
            # Ctrl-C lands inside the node's nurseries: an interrupt (exit 130), not a crash.
            if group.split(KeyboardInterrupt)[1] is None:
                raise KeyboardInterrupt from None
            # A busy port or a damaged database, however deep in the node's nurseries: one line.
            mistake = _operator_error(group)
            if mistake is not None:
                raise mistake from None
            raise
    else:
        result = runtime.run_node(config, topology)
    return int(result or 0)


def run(argv: Sequence[str] | None = None) -> int:
    """Run ``dmq-node`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    args = vars(build_parser().parse_args(argv))
    if args.pop("version"):
        print(f"{PROGRAM} version: {package_version()}")
        return 0
    running = args.pop("running")
    if args.pop("check"):
        from dmq.cli.doctor import check

        return check(args, PROGRAM, running=running)
    if running:
        report(PROGRAM, "--running goes with --check (see dmq-node --help)")
        return OPERATOR_ERROR
    try:
        config = load_config(args)
        if args.get("ConfigFile") is not None and not config.config_file_found:
            report(PROGRAM, f'warning: configuration file "{config.config_file}" not found, using defaults')
        for doubt in configuration_doubts(config):
            report(PROGRAM, f"warning: {doubt}")
        topology = load_topology(config.topology_file)
        return _start(config, topology)
    except OperatorError as exc:
        report(PROGRAM, str(exc))
        return OPERATOR_ERROR
    except KeyboardInterrupt:
        return INTERRUPTED


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point: exits with :func:`run`'s status."""
    exit_with(lambda: run(argv))


if __name__ == "__main__":
    main()
