"""``dmq-node --check`` / ``dmq doctor``: a good configuration passes; each kind of problem is one line.

Most cases call the check in-process (it is the function both commands run); the command
lines themselves are run once each as processes, for their exit status and their output.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import lmdb
import pytest

from dmq.cli.doctor import check
from dmq.config import NO_ADDRESS_MESSAGE
from dmq.mempool.store import FORMAT_KEY, META_DB
from tests.dmq.cli.conftest import run_dmq

from .conftest import NodeDirectory


def _problems(capsys: pytest.CaptureFixture[str], flags: dict[str, str], **options: int) -> tuple[int, list[str]]:
    status = check(flags, "dmq doctor", **options)
    captured = capsys.readouterr()
    return status, captured.err.splitlines()


def test_a_good_configuration_passes(node_directory: NodeDirectory, capsys):
    assert check(node_directory.flags(), "dmq doctor") == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith("dmq doctor: check passed")


def test_an_existing_store_and_a_stale_socket_pass(node_directory: NodeDirectory, start_node, signers, capsys):
    """After a node ran (and was killed, leaving its socket file behind): still ready to start."""
    node = start_node("node")  # the same directory layout, in tmp_path/node
    node.kill()
    assert node.socket_path.exists() and (node.workdir / "db" / "data.mdb").exists()
    assert check(node_directory.flags(), "dmq doctor") == 0, capsys.readouterr().err


def _config(**changes) -> Callable[[NodeDirectory], None]:
    def change(directory: NodeDirectory) -> None:
        directory.config.update(changes)
        directory.write_config()
    return change


def _write(name: str, content: bytes) -> Callable[[NodeDirectory], None]:
    def write(directory: NodeDirectory) -> None:
        path = directory.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return write


def _listening_socket(name: str) -> Callable[[NodeDirectory], None]:
    def bind(directory: NodeDirectory) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(directory.path / name))
        sock.listen(1)
        directory.keep = sock  # listening until the directory object goes away
    return bind


def _listening_port(key: str) -> Callable[[NodeDirectory], None]:
    """Another process (this test) listens on the port the configuration gives ``key``."""
    def listen(directory: NodeDirectory) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        directory.keep = sock
        _config(**{key: sock.getsockname()[1]})(directory)
    return listen


def _store_with_format(tag: bytes) -> Callable[[NodeDirectory], None]:
    def write(directory: NodeDirectory) -> None:
        env = lmdb.open(str(directory.path / "db"), max_dbs=4)
        with env.begin(write=True) as txn:
            txn.put(FORMAT_KEY, tag, db=env.open_db(META_DB, txn=txn))
        env.close()
    return write


def _remove_flag(name: str) -> Callable[[NodeDirectory], None]:
    def remove(directory: NodeDirectory) -> None:
        directory.removed_flag = name
    return remove


PROBLEMS = {
    "configuration value": (_config(PortNumber="3141"), '"PortNumber" must be an integer 0..65535, got "3141"'),
    "no bind address": (_remove_flag("IPv4"), NO_ADDRESS_MESSAGE),
    "topology file": (lambda d: (d.path / "dmq.topology.json").unlink(), "topology file not found"),
    "topology content": (_write("dmq.topology.json", b'{"localRoots": 1}'), "dmq.topology.json"),
    "socket directory": (_config(LocalAddress="run/dmq.socket"), "directory run does not exist"),
    "file in the socket's way": (_write("dmq.socket", b"x"), "a file that is not a socket is in the way"),
    "socket in use": (_listening_socket("dmq.socket"), "another process is already listening on it"),
    "cardano-node socket not a socket": (
        lambda d: (_write("cardano.socket", b"")(d),
                   _config(StakeSource="cardano-node", CardanoNodeSocket="cardano.socket")(d)),
        'CardanoNodeSocket "cardano.socket": not a socket'),
    "node-to-node port in use": (_listening_port("PortNumber"),
                                 "node-to-node port (PortNumber / --port) 127.0.0.1:"),
    "Prometheus port in use": (_listening_port("PrometheusPort"), "Prometheus port (PrometheusPort) 127.0.0.1:"),
    "Cardano magic as the DMQ magic": (
        _config(NetworkMagic=2),
        '"NetworkMagic" / --dmq-network-magic 2 is the Cardano magic of preview; '
        "the DMQ magic of preview (what Mithril proposes) is 2147483650"),
    "magics of two networks": (
        _config(StakeSource="cardano-node", CardanoNodeSocket="cardano.socket", NetworkMagic=2147483650,
                CardanoNetworkMagic=42),
        '"NetworkMagic" 2147483650 is the DMQ magic of preview, but "CardanoNetworkMagic" 42 (devnet) is not '
        "preview's Cardano magic (2)"),
    "genesis of another network": (
        _config(StakeSource="cardano-node", CardanoNodeSocket="cardano.socket", NetworkMagic=3_000_000_000,
                CardanoNetworkMagic=7),
        "ShelleyGenesisFile shelley-genesis.json is for networkMagic 42, but CardanoNetworkMagic is 7"),
    "misspelt key": (_config(NetworkMagik=2147483690),
                     'unknown key "NetworkMagik" is ignored; did you mean "NetworkMagic"?'),
    "topic key on a raw-only node": (_config(TopicKesKey="kes.skey"),
                                     '"TopicKesKey" / --topic-kes-key kes.skey is set, but nothing uses it'),
    "genesis file": (_write("shelley-genesis.json", b"{not json"), "shelley-genesis.json"),
    "stake file": (lambda d: (_write("stake.json", b"[]")(d), _config(StakeSource="stake.json")(d)), "stake.json"),
    "damaged database": (_write("db/data.mdb", b"\x07" * 8192), "database db is damaged"),
    "foreign database format": (_store_with_format(b"someone-else/7"),
                                "database db: format someone-else/7, this node reads dmq-mempool/2"),
}


@pytest.mark.parametrize("kind", PROBLEMS)
def test_each_problem_is_one_line(node_directory: NodeDirectory, capsys, kind: str):
    make_problem, expected = PROBLEMS[kind]
    make_problem(node_directory)
    flags = node_directory.flags()
    flags.pop(getattr(node_directory, "removed_flag", ""), None)
    status, lines = _problems(capsys, flags)
    assert status == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith("dmq doctor: ") and expected in lines[0], lines


def test_free_space_below_the_minimum_is_a_problem(node_directory: NodeDirectory, capsys):
    status, lines = _problems(capsys, node_directory.flags(), min_free_mb=1 << 40)
    assert status == 1 and len(lines) == 1
    assert "MiB free on its file system, at least 1099511627776 MiB needed" in lines[0]


def test_every_problem_is_listed_not_only_the_first(node_directory: NodeDirectory, capsys):
    for kind in ("no bind address", "topology file", "file in the socket's way", "genesis file"):
        PROBLEMS[kind][0](node_directory)
    flags = node_directory.flags()
    del flags["IPv4"]
    status, lines = _problems(capsys, flags)
    assert status == 1
    assert len(lines) == 4, lines
    for kind in ("no bind address", "topology file", "file in the socket's way", "genesis file"):
        assert any(PROBLEMS[kind][1] in line for line in lines), (kind, lines)


def test_an_unreadable_configuration_stops_the_check_at_one_line(node_directory: NodeDirectory, capsys):
    _write("dmq.config.json", b"{")(node_directory)
    status, lines = _problems(capsys, node_directory.flags())
    assert status == 1 and len(lines) == 1 and "invalid JSON" in lines[0]


def test_dmq_node_check_and_dmq_doctor_as_commands(node_directory: NodeDirectory):
    flags = ["-c", "dmq.config.json", "-t", "dmq.topology.json", "--host-addr", "127.0.0.1"]
    node = subprocess.run([sys.executable, "-m", "dmq.cli.node", "--check", *flags], cwd=node_directory.path,
                          capture_output=True, text=True, timeout=60)
    assert (node.returncode, node.stderr) == (0, ""), node.stderr
    assert node.stdout.startswith("dmq-node: check passed")
    assert not (node_directory.path / "db").exists() and not (node_directory.path / "dmq.socket").exists()

    _config(StakeSource="cardano-node", CardanoNodeSocket="absent.socket", CardanoNetworkMagic=42)(node_directory)
    done = run_dmq(["doctor", *flags, "--min-free-mb", str(1 << 40)], cwd=node_directory.path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "MiB free" in lines[0], lines
    # The node waits for an absent cardano-node socket: a note on stdout, not a problem.
    assert done.stdout.startswith('dmq doctor: note: CardanoNodeSocket "absent.socket": file does not exist')
    assert "waits for cardano-node" in done.stdout


def test_keys_of_the_reference_s_tracing_are_no_unknown_keys(node_directory: NodeDirectory, capsys):
    _config(TraceOptionNodeName="relay-1", TraceOptionPeerFrequency=2000, UseTraceDispatcher=True)(node_directory)
    assert check(node_directory.flags(), "dmq doctor") == 0, capsys.readouterr().err


def test_an_unknown_key_far_from_every_known_one_has_no_suggestion(node_directory: NodeDirectory, capsys):
    _config(Colour="blue")(node_directory)
    status, lines = _problems(capsys, node_directory.flags())
    assert status == 1 and len(lines) == 1
    assert lines[0].endswith('unknown key "Colour" is ignored'), lines


@pytest.mark.parametrize("magics", [
    {"NetworkMagic": 3_000_000_123, "CardanoNetworkMagic": 42, "StakeSource": "cardano-node",
     "CardanoNodeSocket": "cardano.socket"},                    # a DMQ network of its own on the devnet chain
    {"NetworkMagic": 12, "CardanoNetworkMagic": 7},             # the reference's config.json; magic 7 unused
], ids=["private DMQ magic", "reference example"])
def test_a_private_network_s_magics_are_no_problem(node_directory: NodeDirectory, capsys, magics):
    _config(**magics)(node_directory)
    assert check(node_directory.flags(), "dmq doctor") == 0, capsys.readouterr().err


def test_a_dmq_magic_as_the_cardano_magic_is_named(node_directory: NodeDirectory, capsys):
    """Named as such, beside the genesis file's disagreement with it."""
    _config(StakeSource="cardano-node", CardanoNodeSocket="cardano.socket", CardanoNetworkMagic=2147483690)(
        node_directory)
    status, lines = _problems(capsys, node_directory.flags())
    assert status == 1 and len(lines) == 2, lines
    assert '"CardanoNetworkMagic" / --cardano-network-magic 2147483690 is the DMQ magic of devnet; ' \
           "cardano-node of devnet speaks 42" in lines[0]
    assert "is for networkMagic 42, but CardanoNetworkMagic is 2147483690" in lines[1]


def test_an_absent_cardano_node_socket_is_a_note_not_a_problem(node_directory: NodeDirectory, capsys):
    """The node waits for cardano-node (after a reboot it replays its chain first): the check passes."""
    _config(StakeSource="cardano-node", CardanoNodeSocket="cardano.socket")(node_directory)
    assert check(node_directory.flags(), "dmq doctor") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith('dmq doctor: note: CardanoNodeSocket "cardano.socket": file does not exist')
    assert "waits for cardano-node" in out[0] and out[1].startswith("dmq doctor: check passed")


def test_a_key_in_the_wrong_case_is_matched_to_the_known_key(node_directory: NodeDirectory, capsys):
    _config(cardanoNodeSocket="cardano.socket")(node_directory)
    status, lines = _problems(capsys, node_directory.flags())
    assert status == 1 and len(lines) == 1
    assert lines[0].endswith('unknown key "cardanoNodeSocket" is ignored; did you mean "CardanoNodeSocket"?'), lines
