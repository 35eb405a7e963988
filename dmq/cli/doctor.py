"""``dmq doctor`` and ``dmq-node --check``: would the node start, and run, with these files?

An operator wants to know before ``systemctl restart`` whether the node will come up, and
wants every mistake at once rather than one per restart. This runs the node's own start-up
steps that touch nothing (configuration, start-up refusals, topology, the stake source, the
local socket's path, the database's integrity walk) and adds what the node would only find
out later by failing (directories it cannot write, a port another process listens on, a
cardano-node socket that is not a socket or that this user may not connect to, a full disk).
It also fails on what the node only warns about because it may be meant (a configuration key
nothing reads, a magic of another network or of Cardano, a signing key nothing uses): a check
is asked for exactly those. Each problem is one line; the exit status is 0 only when there is
none. Nothing is created or written; ports are bound for a moment and released.

An absent cardano-node socket is no problem: the node starts without it and waits for it
(cardano-node replays its chain for minutes after a reboot); the check says so on a note line.

``--running`` checks the configuration of the node running on the configured local socket,
before a restart: its socket and ports are its own (:mod:`dmq.cli.running_node`), any other
process's are still problems.

The rules are the node's: the loaders and checks come from ``dmq.config``, ``dmq.topology``,
``dmq.cli.wiring``, ``dmq.local_service`` and ``dmq.mempool``; this module only collects their answers.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from dmq.cli import report
from dmq.cli.node_flags import FLAG_KEYS, add_node_flags, add_running_flag
from dmq.cli.running_node import RunningNode, find_running_node
from dmq.errors import OperatorError
from dmq.ports import busy_port_problem, host_port, listen_refusal

__all__ = ["add_parser", "run", "check", "diagnose", "cardano_node_notes", "DEFAULT_MIN_FREE_MB"]

#: Free space the database's file system must have: four times the CIP-0137 worst case of
#: messages held (125 MB, docs/capacity/model.md), for LMDB's free pages and a ``dmq db backup`` beside it.
DEFAULT_MIN_FREE_MB = 512
_MB = 1 << 20


def _nearest_existing(path: Path) -> Path:
    """``path`` or the closest ancestor that exists (where the node's ``mkdir`` would start)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _writable_dir(path: Path, what: str) -> list[str]:
    """A directory the node will create files in (or create, from its nearest existing ancestor)."""
    existing = _nearest_existing(path)
    if not existing.is_dir():
        return [f"{what} {path}: {existing} is not a directory"]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [f"{what} {path}: directory {existing} is not writable by this user"]
    return []


def _topology(config) -> list[str]:
    from dmq.topology import load_topology

    load_topology(config.topology_file)
    return []


def _local_socket(config, running: RunningNode | None) -> list[str]:
    from dmq.local_service import check_socket_path

    path = Path(config.local_address)
    if running is None:
        check_socket_path(path)  # with --running it answered as the running node's
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return [f"local socket {path}: directory {path.parent} is not writable by this user"]
    return []


def _cardano_node_socket(config) -> list[str]:
    from dmq.config import StakeSourceKind

    path = config.cardano_node_socket
    if config.stake_source.kind is not StakeSourceKind.CARDANO_NODE or not path.exists():
        return []  # absent: the node waits for it (see cardano_node_notes)
    if path.is_dir():
        return [f'CardanoNodeSocket "{path}": a directory; point it at the socket cardano-node listens on']
    if not stat.S_ISSOCK(path.stat().st_mode):
        return [f'CardanoNodeSocket "{path}": not a socket; point it at the socket cardano-node listens on']
    if not os.access(path, os.R_OK | os.W_OK):
        return [f'CardanoNodeSocket "{path}": this user may not connect to it (read and write permission '
                "needed); add the user to the socket's group"]
    return []


def _stake_source(config) -> list[str]:
    from dmq.clock import SystemClock
    from dmq.cli.wiring import load_stake_view
    from dmq.config import StakeSourceKind
    from dmq.cardano_node import genesis_magic_mismatch

    view = load_stake_view(config, SystemClock())
    if config.stake_source.kind is not StakeSourceKind.CARDANO_NODE:
        return []
    mismatch = genesis_magic_mismatch(view, config.cardano_network_magic)
    return [] if mismatch is None else [mismatch]


def _database(config) -> list[str]:
    from dmq.cli.db import DATA_FILE, open_store_readonly, read_store
    from dmq.mempool.integrity import DamagedDatabase, check_readable
    from dmq.mempool.store import UPGRADABLE_FORMATS

    path = Path(config.database_path)
    if not (path / DATA_FILE).exists():
        return _writable_dir(path, "database")  # a first start creates it
    if not os.access(path, os.W_OK | os.X_OK) or not os.access(path / DATA_FILE, os.R_OK | os.W_OK):
        return [f"database {path}: not writable by this user; the node must run as the owner of its files"]
    try:
        check_readable(path, lock=True)
    except DamagedDatabase as exc:
        return [f"database {path} is damaged, {exc}; move the directory aside "
                "(peers resend every unexpired message)"]
    with open_store_readonly(path) as env:
        found = read_store(env)
    if found.format not in UPGRADABLE_FORMATS:
        shown = "none" if found.format is None else found.format.decode(errors="replace")
        return [f"database {path}: format {shown}, this node reads {UPGRADABLE_FORMATS[0].decode()}; "
                "move the directory aside or point DatabasePath at an empty one"]
    return []


def _free_space(config, min_free_mb: int) -> list[str]:
    path = Path(config.database_path)
    free = shutil.disk_usage(_nearest_existing(path)).free
    if free < min_free_mb * _MB:
        return [f"database {path}: {free // _MB} MiB free on its file system, at least {min_free_mb} MiB needed"]
    return []


def _record_traffic(config) -> list[str]:
    return [] if config.record_traffic is None else _writable_dir(Path(config.record_traffic), "RecordTraffic")


def _listen_addresses(config) -> list[tuple[str, str, int]]:
    """Every TCP address the node would listen on: (what it is for, host, port)."""
    from dmq.config import DiffusionMode

    addresses = []
    if config.diffusion_mode is DiffusionMode.INITIATOR_AND_RESPONDER:
        addresses.extend(("node-to-node port (PortNumber / --port)", str(address), config.port_number)
                         for address in (config.ipv4, config.ipv6) if address is not None)
    endpoint = config.prometheus_endpoint
    if endpoint is not None:
        source = "PrometheusPort" if config.prometheus_port is not None else "PrometheusSimple of TraceOptions"
        addresses.append((f"Prometheus port ({source})", endpoint.host, endpoint.port))
    return addresses


def _ports(config, running: RunningNode | None) -> list[str]:
    problems = []
    for what, host, port in _listen_addresses(config):
        error = listen_refusal(host, port)
        if error is None:
            continue
        if running is not None and error.errno == errno.EADDRINUSE:
            try:
                if running.holds_port(port):
                    continue
            except PermissionError:
                problems.append(f"{what} {host_port(host, port)}: in use, and this user may not tell whether by "
                                f"the running node (pid {running.pid}); run the check as the node's user")
                continue
        problems.append(busy_port_problem(what, host, port, error))
    return problems


def cardano_node_notes(config) -> list[str]:
    """What the operator should know although the node starts: it will wait for cardano-node."""
    from dmq.config import ConfigError, check_cardano_node_socket

    if config.cardano_node_socket.is_dir():
        return []  # a problem (_cardano_node_socket), not a wait
    try:
        check_cardano_node_socket(config)
    except ConfigError as exc:
        return [f"{exc}. The node starts without it and waits for cardano-node; until its first stake "
                "snapshot every message is refused as NotInitialized"]
    return []


def diagnose(cli_args: Mapping[str, str | None], min_free_mb: int = DEFAULT_MIN_FREE_MB, *,
             running: bool = False, notes: list[str] | None = None) -> list[str]:
    """Every problem found, one line each (empty: the node would start); ``notes`` receives what
    is worth knowing but no problem.

    ``running``: the configured local socket belongs to a running node, whose socket and ports
    are accepted as its own.
    """
    from dmq.config import ConfigError, configuration_doubts, node_startup_problems, read_config

    try:
        config = read_config(cli_args)
    except ConfigError as exc:
        return [str(exc)]  # nothing else can be judged without the configuration
    problems: list[str] = []
    node: RunningNode | None = None
    if running:
        try:
            node = find_running_node(Path(config.local_address), config.network_magic)
        except OperatorError as exc:
            return [str(exc)]  # the node's own socket and ports would be reported busy, in error
    if cli_args.get("ConfigFile") is not None and not config.config_file_found:
        problems.append(f'configuration file "{config.config_file}" not found (the node would start with defaults)')
    problems.extend(str(error) for error in node_startup_problems(config))
    problems.extend(configuration_doubts(config))
    if notes is not None:
        notes.extend(cardano_node_notes(config))
    checks: tuple[Callable[[object], list[str]], ...] = (
        _topology, lambda c: _local_socket(c, node), lambda c: _ports(c, node), _cardano_node_socket,
        _stake_source, _database, lambda c: _free_space(c, min_free_mb), _record_traffic)
    for one_check in checks:
        try:
            problems.extend(one_check(config))
        except OperatorError as exc:
            problems.append(str(exc))
        except OSError as exc:  # a file vanished or became unreadable between two looks
            problems.append(f"{exc.filename or 'a file'}: {exc.strerror or exc}")
    return problems


def check(cli_args: Mapping[str, str | None], program: str, min_free_mb: int = DEFAULT_MIN_FREE_MB, *,
          running: bool = False) -> int:
    """Print every problem as ``program: problem`` on stderr, or one ``ok`` line; the exit status.

    Notes (``program: note: ...``) go to stdout either way.
    """
    notes: list[str] = []
    problems = diagnose(cli_args, min_free_mb, running=running, notes=notes)
    for problem in problems:
        report(program, problem)
    for note in notes:
        report(program, f"note: {note}", sys.stdout)
    if problems:
        return 1
    what = "the running node's configuration" if running else "configuration"
    print(f"{program}: check passed: {what}, topology, stake source, sockets, ports and database are usable",
          file=sys.stdout, flush=True)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check a node's configuration, files, sockets and database without starting it",
        description="Take the same flags as dmq-node and report every problem that would stop it or "
                    "break it, one line each (the same as dmq-node --check). Exit 0 when there is none.")
    add_node_flags(parser)
    parser.add_argument("--min-free-mb", type=int, default=DEFAULT_MIN_FREE_MB, metavar="MIB",
                        help=f"free space the database's file system needs (default: {DEFAULT_MIN_FREE_MB})")
    add_running_flag(parser)


def run(args: argparse.Namespace) -> int:
    flags = {key: value for key, value in vars(args).items() if key in FLAG_KEYS}
    return check(flags, "dmq doctor", args.min_free_mb, running=args.running)
