"""Topology files in cardano-node's format, as the reference DMQ node reads them."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest

from dmq.config import DiffusionMode
from dmq.errors import OperatorError
from dmq.topology import (
    AccessPoint,
    LocalRootGroup,
    PublicRootGroup,
    Topology,
    TopologyError,
    load_topology,
    parse_topology,
)

from .conftest import write_json

#: docs/protocol/configuration.md section 11.3, verbatim.
WIRE_EXAMPLE = """
{ "localRoots":  [ { "accessPoints": [ {"address": "10.0.0.2", "port": 3141} ], "advertise": false,
                     "valency": 1, "warmValency": 1, "behindFirewall": false,
                     "diffusionMode": "InitiatorAndResponder", "extraFlags": {} } ],
  "publicRoots": [ { "accessPoints": [], "advertise": false } ],
  "useLedgerAfterSlot": 128908821 }
"""

#: ``dmq-node/topology.json`` of the reference repository.
REFERENCE_SAMPLE = {
    "localRoots": [{"accessPoints": [], "advertise": False, "valency": 1, "extraFlags": {}}],
    "publicRoots": [{"accessPoints": [], "advertise": False}],
    "useLedgerAfterSlot": 128908821,
    "peerSnapshotFile": None,
    "extraConfig": {},
}

#: What ``mkfiles-topology-dmq.sh`` writes for node-pool1 of a three-node Mithril devnet.
MITHRIL_DEVNET = {
    "bootstrapPeers": [],
    "localRoots": [
        {
            "accessPoints": [
                {"address": "127.0.0.1", "port": 4002, "valency": 1},
                {"address": "127.0.0.1", "port": 4003, "valency": 1},
            ],
            "advertise": False,
            "trustable": False,
            "valency": 2,
        }
    ],
    "peerSnapshotFile": None,
    "publicRoots": [{"accessPoints": [], "advertise": False}],
}


def test_the_wire_example(tmp_path: Path) -> None:
    path = tmp_path / "dmq.topology.json"
    path.write_text(WIRE_EXAMPLE)
    assert load_topology(path) == Topology(
        local_roots=(
            LocalRootGroup(
                access_points=(AccessPoint("10.0.0.2", 3141),),
                advertise=False,
                hot_valency=1,
                warm_valency=1,
                behind_firewall=False,
                diffusion_mode=DiffusionMode.INITIATOR_AND_RESPONDER,
                extra_flags_json="{}",
            ),
        ),
        public_roots=(PublicRootGroup(access_points=(), advertise=False),),
        use_ledger_after_slot=128908821,
    )


def test_the_reference_sample_topology() -> None:
    topology = parse_topology(REFERENCE_SAMPLE)
    assert topology.local_roots == (LocalRootGroup(access_points=(), hot_valency=1, warm_valency=1),)
    assert topology.use_ledger_after_slot == 128908821


def test_the_mithril_devnet_topology(tmp_path: Path) -> None:
    topology = load_topology(write_json(tmp_path / "node-pool1" / "topology.dmq.json", MITHRIL_DEVNET))
    (group,) = topology.local_roots
    assert group.access_points == (AccessPoint("127.0.0.1", 4002), AccessPoint("127.0.0.1", 4003))
    assert (group.hot_valency, group.warm_valency, group.trustable) == (2, 2, False)
    assert [ap.ip for ap in topology.all_access_points] == [ipaddress.IPv4Address("127.0.0.1")] * 2
    assert topology.use_ledger_after_slot is None
    assert not topology.ledger_peers_enabled_at(10**9)


def test_defaults_and_the_hot_valency_alias() -> None:
    topology = parse_topology(
        {
            "localRoots": [
                {"accessPoints": [{"address": "relay.example.com", "port": 3001}], "hotValency": 2},
                {
                    "accessPoints": [{"address": "::1", "port": 3002}],
                    "valency": 1,
                    "warmValency": 3,
                    "advertise": True,
                    "trustable": True,
                    "behindFirewall": True,
                    "diffusionMode": "InitiatorOnly",
                    "extraFlags": {"x": [1]},
                },
            ],
            "publicRoots": [{"accessPoints": [{"address": "192.0.2.9", "port": 1}]}],
        }
    )
    first, second = topology.local_roots
    assert first == LocalRootGroup(access_points=(AccessPoint("relay.example.com", 3001),), hot_valency=2, warm_valency=2)
    assert second == LocalRootGroup(
        access_points=(AccessPoint("::1", 3002),),
        advertise=True,
        hot_valency=1,
        warm_valency=3,
        trustable=True,
        behind_firewall=True,
        diffusion_mode=DiffusionMode.INITIATOR_ONLY,
        extra_flags_json='{"x":[1]}',
    )
    assert topology.public_roots == (PublicRootGroup((AccessPoint("192.0.2.9", 1),), advertise=False),)


def test_access_point_kinds() -> None:
    srv = AccessPoint("_dmq._mithril._cardano._tcp.example.com")
    assert srv.is_srv and srv.ip is None and srv.domain == "_dmq._mithril._cardano._tcp.example.com."
    name = AccessPoint("relay.example.com.", 3001)
    assert not name.is_srv and name.ip is None and name.domain == "relay.example.com."
    address = AccessPoint("2001:db8::5", 3001)
    assert address.ip == ipaddress.IPv6Address("2001:db8::5") and address.domain is None
    parsed = parse_topology({"localRoots": [], "publicRoots": [{"accessPoints": [{"address": "pools.example"}]}]})
    assert parsed.public_roots[0].access_points == (AccessPoint("pools.example", None),)


@pytest.mark.parametrize(
    ("value", "stored", "at_slot_99", "at_slot_100"),
    [(100, 100, False, True), (0, 0, True, True), (-1, None, False, False), (None, None, False, False),
     (100.7, 100, False, True)],
)
def test_use_ledger_after_slot(value: Any, stored: int | None, at_slot_99: bool, at_slot_100: bool) -> None:
    document: dict[str, Any] = {"localRoots": [], "publicRoots": []}
    if value is not None:
        document["useLedgerAfterSlot"] = value
    topology = parse_topology(document)
    assert topology.use_ledger_after_slot == stored
    assert (topology.ledger_peers_enabled_at(99), topology.ledger_peers_enabled_at(100)) == (at_slot_99, at_slot_100)


@pytest.mark.parametrize("empty", [None, [], ""])
def test_unsupported_keys_are_tolerated_when_empty(empty: Any) -> None:
    parse_topology({"localRoots": [], "publicRoots": [], "bootstrapPeers": empty, "peerSnapshotFile": empty})


# (document, exact message after "<path>: ")
BAD_TOPOLOGIES = [
    (
        {"localRoots": [], "publicRoots": [], "bootstrapPeers": [{"address": "backbone.cardano.iog.io", "port": 3001}]},
        '"bootstrapPeers" must be absent, null or empty (the DMQ node supports neither bootstrap peers nor peer '
        'snapshots; list peers in localRoots and publicRoots), got [{"address": "backbone.cardano.iog.io", "port": 3001}]',
    ),
    (
        {"localRoots": [], "publicRoots": [], "peerSnapshotFile": "peer-snapshot.json"},
        '"peerSnapshotFile" must be absent, null or empty (the DMQ node supports neither bootstrap peers nor peer '
        'snapshots; list peers in localRoots and publicRoots), got "peer-snapshot.json"',
    ),
    ([], "the topology must be an object, got []"),
    ({"publicRoots": []}, "localRoots must be an array, got nothing"),
    ({"localRoots": []}, "publicRoots must be an array, got nothing"),
    ({"localRoots": [{"accessPoints": []}], "publicRoots": []}, "localRoots[0].valency must be a non-negative integer, got nothing"),
    ({"localRoots": [{"accessPoints": [], "valency": "2"}], "publicRoots": []}, 'localRoots[0].valency must be a non-negative integer, got "2"'),
    ({"localRoots": [{"accessPoints": [], "hotValency": -2}], "publicRoots": []}, "localRoots[0].hotValency must be a non-negative integer, got -2"),
    (
        {"localRoots": [{"accessPoints": [{"address": "10.0.0.1", "port": 1}, {"address": "10.0.0.2", "port": "x"}],
                         "valency": 1}], "publicRoots": []},
        'localRoots[0].accessPoints[1].port must be an integer 0..65535 (or absent for an SRV domain), got "x"',
    ),
    (
        {"localRoots": [], "publicRoots": [{"accessPoints": [{"address": "0.0.0.0", "port": 3001}]}]},
        'publicRoots[0].accessPoints[0].address must be a destination address (not 0.0.0.0 or ::), got "0.0.0.0"',
    ),
    (
        {"localRoots": [], "publicRoots": [{"accessPoints": [{"port": 3001}]}]},
        "publicRoots[0].accessPoints[0].address must be a non-empty IP address or DNS name, got nothing",
    ),
    (
        {"localRoots": [{"accessPoints": [], "valency": 1, "diffusionMode": "Duplex"}], "publicRoots": []},
        'localRoots[0].diffusionMode must be "InitiatorOnly" or "InitiatorAndResponder", got "Duplex"',
    ),
    (
        {"localRoots": [{"accessPoints": [], "valency": 1, "advertise": "no"}], "publicRoots": []},
        'localRoots[0].advertise must be true or false, got "no"',
    ),
    ({"localRoots": [], "publicRoots": [{"advertise": True}]}, "publicRoots[0].accessPoints must be an array, got nothing"),
    (
        {"localRoots": [], "publicRoots": [], "useLedgerAfterSlot": "128908821"},
        'useLedgerAfterSlot must be a slot number (> 0 after it, 0 always, < 0 never), got "128908821"',
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD_TOPOLOGIES)
def test_a_bad_topology_is_one_line_naming_file_and_place(tmp_path: Path, document: Any, message: str) -> None:
    path = write_json(tmp_path / "dmq.topology.json", document)
    with pytest.raises(TopologyError) as refused:
        load_topology(path)
    assert str(refused.value) == f"{path}: {message}"


def test_the_topology_file_must_exist(tmp_path: Path) -> None:
    path = tmp_path / "dmq.topology.json"
    with pytest.raises(TopologyError) as refused:
        load_topology(path)
    assert str(refused.value) == (
        f"{path}: topology file not found; create it (cardano-node topology format) or name it with -t/--topology-file"
    )


def test_invalid_json_names_the_place(tmp_path: Path) -> None:
    path = tmp_path / "dmq.topology.json"
    path.write_text('{\n  "localRoots": [\n  ]\n  "publicRoots": []\n}')
    with pytest.raises(TopologyError) as refused:
        load_topology(path)
    assert str(refused.value) == f"{path}: invalid JSON at line 4 column 3: Expecting ',' delimiter"


def test_topology_errors_are_operator_errors() -> None:
    assert issubclass(TopologyError, OperatorError)


def test_the_loaded_topology_is_immutable(tmp_path: Path) -> None:
    topology = parse_topology(json.loads(WIRE_EXAMPLE))
    with pytest.raises(AttributeError):
        topology.local_roots[0].hot_valency = 3  # type: ignore[misc]
