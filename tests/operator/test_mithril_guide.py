"""docs/mithril.md: a node with the guide's configuration serves a signer and an aggregator that
use exactly the guide's settings, through the project's Mithril-compatible client library.

The guide's system paths cannot exist here: the test checks that the signer's and aggregator's
``DMQ_NODE_SOCKET_PATH`` is the socket the systemd unit gives the node, then serves that socket
from a temporary directory. The stake comes from the devnet genesis instead of cardano-node
(there is none); the network magic, what the guide is about, is kept as written.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from clients.mithril import (
    FixedKesPeriod,
    HandshakeFailed,
    RegisterSignatureMessageDmq,
    SigningCredentials,
    is_accepted,
    mithril_dmq_magic,
)
from clients.mithril.sync import consume, publish
from tests.conftest import ROOT
from tests.e2e.messages import DEVNET

from .test_systemd_unit import UNIT, _commands

GUIDE = ROOT / "docs" / "mithril.md"


def _blocks() -> dict[str, str]:
    """Fenced blocks of the guide by their info string after the language (``dmq.config.json``)."""
    found = {}
    for info, text in re.findall(r"^```\w+ ([^\n]+)\n(.*?)^```", GUIDE.read_text(), flags=re.M | re.S):
        found[info.strip()] = text
    return found


def _environment(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _unit_socket() -> str:
    argv = _commands(UNIT.read_text())["ExecStart"]
    return argv[argv.index("--local-socket") + 1]


CASES = {"preview": ("dmq.config.json", ["mithril-signer.env", "mithril-aggregator.env"]),
         "private": ("dmq.config.json private", ["mithril-signer.env private"])}


@pytest.mark.parametrize("network", CASES)
def test_the_guides_settings_publish_and_consume(start_node, vectors, network):
    config_block, client_blocks = CASES[network]
    blocks = _blocks()
    config = json.loads(blocks[config_block])
    node = start_node(network, NetworkMagic=config["NetworkMagic"], CardanoNetworkMagic=config["CardanoNetworkMagic"])
    body = bytes.fromhex(vectors["mithril_body"]["body"])
    credentials = SigningCredentials.from_bulk_credentials(DEVNET / "bulk-creds-k2.json", 0)

    settings = [_environment(blocks[name]) for name in client_blocks]
    for environment in settings:
        assert environment["DMQ_NODE_SOCKET_PATH"] == _unit_socket()
        assert mithril_dmq_magic(environment["NETWORK"], environment.get("DMQ_NETWORK_MAGIC")) == config["NetworkMagic"]

    signer = settings[0]
    result = publish(node.socket_path, body, credentials=credentials, kes_periods=FixedKesPeriod(0),
                     network=mithril_dmq_magic(signer["NETWORK"], signer.get("DMQ_NETWORK_MAGIC")))
    assert is_accepted(result), result

    aggregator = settings[-1]
    received = consume(node.socket_path, count=1, blocking=False, parse_body=RegisterSignatureMessageDmq.from_bytes,
                       network=mithril_dmq_magic(aggregator["NETWORK"], aggregator.get("DMQ_NETWORK_MAGIC")))
    assert [message.message.body for message in received] == [body]


def test_a_signer_on_another_network_is_refused_and_the_node_says_why(start_node, vectors):
    config = json.loads(_blocks()["dmq.config.json"])
    node = start_node(NetworkMagic=config["NetworkMagic"])
    credentials = SigningCredentials.from_bulk_credentials(DEVNET / "bulk-creds-k2.json", 0)
    with pytest.raises(HandshakeFailed):
        publish(node.socket_path, bytes.fromhex(vectors["mithril_body"]["body"]), credentials=credentials,
                kes_periods=FixedKesPeriod(0), network=mithril_dmq_magic("preprod"))
    # The client may learn of the refusal before the node has logged it; the readiness probe of
    # the test's node process also ends a connection before any handshake.
    deadline = time.monotonic() + 10
    while not (refusals := [event["error"] for event in node.trace_events("ConnectionClosed")
                            if "handshake" in (event["error"] or "") and "2147483649" in event["error"]]):
        assert time.monotonic() < deadline, node.diagnostics()
        time.sleep(0.05)
    assert len(refusals) == 1
    assert str(config["NetworkMagic"]) in refusals[0], refusals
