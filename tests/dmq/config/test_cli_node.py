"""``dmq-node``: the reference flags, ``-v``, and one-line refusals without a traceback."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from dmq.cli.node import build_parser, run

from .conftest import run_entry_point, write_json
from .test_topology import MITHRIL_DEVNET

VERSION = metadata.version("dmq-node")


def test_version_flag_prints_the_reference_line(tmp_path: Path) -> None:
    (tmp_path / "dmq.config.json").write_text("{ not json")  # -v is answered before configuration
    for flag in ("-v", "--version"):
        done = run_entry_point("node", [flag], cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"dmq-node version: {VERSION}\n", "")


def _devnet_files(folder: Path) -> None:
    write_json(
        folder / "node-pool1" / "config.dmq.json",
        {"NetworkMagic": 2147483690, "CardanoNetworkMagic": 42, "CardanoNodeSocket": "node-pool1/ipc/node.sock",
         "ShelleyGenesisFile": "node-pool1/shelley/genesis.json", "PeerSharing": True, "StakeSource": "genesis"},
    )
    write_json(folder / "node-pool1" / "topology.dmq.json", MITHRIL_DEVNET)


DEVNET_ARGS = ["-c", "node-pool1/config.dmq.json", "-t", "node-pool1/topology.dmq.json",
               "--local-socket", "node-pool1/ipc/dmq.node.sock", "--host-addr", "127.0.0.1", "--port", "4001"]

# (files to write, arguments, exact stderr line after "dmq-node: ")
REFUSALS = [
    ({}, [], "no ipv4 or ipv6 address specified, use --host-addr or --host-ipv6-addr"),
    ({"dmq.config.json": {"PortNumber": "abc"}}, ["--host-addr", "127.0.0.1"],
     'dmq.config.json: "PortNumber" must be an integer 0..65535, got "abc"'),
    ({}, ["--host-addr", "127.0.0.1", "--port", "65536"], '--port must be an integer 0..65535, got "65536"'),
    ({}, ["--host-addr", "127.0.0.1", "--stake-source", "genesis"],
     "dmq.topology.json: topology file not found; create it (cardano-node topology format) "
     "or name it with -t/--topology-file"),
    ({"topo.json": {"localRoots": [{"accessPoints": [], "valency": 1}], "publicRoots": [], "bootstrapPeers": [{"address": "a", "port": 1}]}},
     ["--host-addr", "127.0.0.1", "--stake-source", "genesis", "-t", "topo.json"],
     'topo.json: "bootstrapPeers" must be absent, null or empty (the DMQ node supports neither bootstrap peers '
     'nor peer snapshots; list peers in localRoots and publicRoots), got [{"address": "a", "port": 1}]'),
    ({}, ["--host-addr", "127.0.0.1", "--min-sig-delay", "0.01s"],
     'min-sig-delay 0.01s (--min-sig-delay or "MinSigDelay") is refused on the mainnet DMQ network '
     "(NetworkMagic 2912307721); remove it, or use another --dmq-network-magic"),
    ({}, ["--host-adr", "127.0.0.1"], "unrecognized arguments: --host-adr 127.0.0.1 (see dmq-node --help)"),
    ({}, ["--port"], "argument -p/--port: expected one argument (see dmq-node --help)"),
]


@pytest.mark.parametrize(("files", "args", "line"), REFUSALS)
def test_a_refusal_is_one_line_on_stderr_and_status_1(
    tmp_path: Path, files: dict[str, Any], args: list[str], line: str
) -> None:
    for name, document in files.items():
        write_json(tmp_path / name, document)
    done = run_entry_point("node", args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"dmq-node: {line}\n")


def test_the_hidden_flag_is_accepted_but_not_shown() -> None:
    parser = build_parser()
    assert "--min-sig-delay" not in parser.format_help()
    assert vars(parser.parse_args(["--min-sig-delay", "0.01s"]))["MinSigDelay"] == "0.01s"
    for flag in ("--host-addr", "--host-ipv6-addr", "--port", "--local-socket", "--configuration-file",
                 "--topology-file", "--cardano-node-socket", "--cardano-network-magic", "--dmq-network-magic",
                 "--version", "--stake-source", "--database-path", "--record-traffic", "--prometheus-port"):
        assert flag in parser.format_help()


# ---- handing over to the real node runtime (``dmq.node``) --------------------------------------


def test_an_operator_error_from_the_runtime_is_one_line(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The devnet configuration names a genesis file that is not there: the runtime's own
    refusal reaches the operator as one line, exit 1."""
    _devnet_files(in_tmp)
    assert run(DEVNET_ARGS) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dmq-node: ")
    assert "node-pool1/shelley/genesis.json" in err


def test_an_explicit_configuration_file_that_is_missing_is_warned_about(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _devnet_files(in_tmp)
    args = [*DEVNET_ARGS, "--stake-source", "genesis", "-c", "nowhere.json"]
    assert run(args) == 1  # then the default genesis file is missing: refused in one line
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == 'dmq-node: warning: configuration file "nowhere.json" not found, using defaults'
    assert len(lines) == 2 and "mainnet-shelley-genesis.json" in lines[1]



def test_every_flag_a_configuration_key_names_is_a_dmq_node_flag() -> None:
    """A key whose errors name a flag (``--topics`` ...) can be given that way: the flag is parsed
    into the key and read back by the configuration as the file's value would be."""
    from dataclasses import fields

    from dmq.config import NodeConfig, read_config

    parser = build_parser()
    named = {f.metadata["flag"]: f.metadata["key"] for f in fields(NodeConfig)
             if f.metadata.get("flag") and f.metadata["key"]}   # not the flag-only -c, -t
    assert {"--topics", "--topic-kes-key", "--topic-operational-certificate"} <= named.keys()
    for flag, key in named.items():   # hidden ones included (--min-sig-delay)
        assert vars(parser.parse_known_args([flag, "1"])[0])[key] == "1", flag
    parsed = vars(parser.parse_args(["--topics", "raw,upsycle", "--topic-kes-key", "pool/kes.skey",
                                      "--topic-operational-certificate", "pool/node.cert"]))
    config = read_config({k: parsed[k] for k in ("TopicsCarried", "TopicKesKey", "TopicOperationalCertificate")})
    assert config.topics_carried == ("raw", "upsycle")
    assert (str(config.topic_kes_key), str(config.topic_operational_certificate)) == ("pool/kes.skey", "pool/node.cert")
