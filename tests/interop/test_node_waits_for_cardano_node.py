"""A node started before cardano-node: it serves at once, waits, and takes its stake when
cardano-node's socket appears, without a restart.

After a reboot cardano-node replays its chain for minutes before it creates its socket; the
reference exits then and relies on systemd's restarts. This node starts, serves as the
reference does before its first stake snapshot (every message refused as ``NotInitialized``,
no connection dropped), traces that it waits, retries with back-off, and takes the snapshot
from the pallas-network stand-in for cardano-node (the harness's ``cardano-node`` role) once
that one listens. The default run lets the node wait a few seconds, through three attempts of
a growing back-off; the slow run waits the 30 s of a cardano-node replaying its chain.
"""

from __future__ import annotations

import time

import pytest

from dmq.trace import LogEvent
from tests.e2e.messages import DMQ_DEVNET_MAGIC
from tests.interop.pallas_harness import run_signer

from .test_pallas_cardano_node import CARDANO_MAGIC, chain_description, pallas_cardano_node

pytestmark = pytest.mark.interop

WAITING = "Net.Local.Cardano.Link.Waiting"
STAKE = "StakeView.Updated"


def _wait_for_log(node, namespace: str, count: int, timeout: float) -> list[LogEvent]:
    deadline = time.monotonic() + timeout
    while len(found := [e for e in node.log_events() if e.ns == namespace]) < count:
        node.check_running()
        assert time.monotonic() < deadline, f"{count} {namespace} lines in {timeout} s: {node.diagnostics()}"
        time.sleep(0.05)
    return found


@pytest.mark.parametrize("late_by", [
    pytest.param(3.0, id="3s"),
    pytest.param(30.0, id="30s", marks=pytest.mark.slow),
])
def test_a_node_started_before_cardano_node_waits_then_takes_its_stake(pallas_harness, tmp_path, start_node,
                                                                       signers, late_by):
    staked, _ = signers
    socket = tmp_path / "cardano.socket"
    started = time.monotonic()
    node = start_node(StakeSource="cardano-node", CardanoNodeSocket=str(socket), CardanoNetworkMagic=CARDANO_MAGIC)
    pid = node.pid

    # Serving already: the local socket answers (start_node waited for it), and a message is
    # refused as the reference refuses it before its first snapshot.
    early = run_signer(pallas_harness, "1", node.socket_path, DMQ_DEVNET_MAGIC, [staked.sign().raw])
    assert [(r["verdict"], r["reason"]) for r in early] == [("rejected", {"kind": "invalid",
                                                                          "text": "NotInitialized"})], early

    # Waiting, with back-off: each attempt announces a longer pause than the one before.
    _wait_for_log(node, WAITING, 3, timeout=late_by + 30)
    while time.monotonic() - started < late_by:
        time.sleep(0.2)
    waits = _wait_for_log(node, WAITING, 3, timeout=1)
    assert all(w.data["socket"] == str(socket) for w in waits)
    pauses = [w.data["retry_in"] for w in waits]
    assert all(later > earlier for earlier, later in zip(pauses, pauses[1:])), pauses
    assert _wait_for_log(node, STAKE, 0, timeout=1) == []

    chain = chain_description({staked.pool_id: (3_000_000, 2_000_000, 1_000_000)})
    with pallas_cardano_node(pallas_harness, tmp_path, chain) as stand_in:
        appeared = time.time()
        updates = _wait_for_log(node, STAKE, 1, timeout=30)
        late = run_signer(pallas_harness, "1", node.socket_path, DMQ_DEVNET_MAGIC, [staked.sign().raw])
        link_warnings = [e for e in node.log_events() if e.ns.startswith("Net.Local.Cardano") and e.sev == "Warning"]
        assert stand_in.of_kind("error") == []
    assert [(u.data["source"], u.data["epoch"], u.data["pools"]) for u in updates] == [
        ("cardano-node", chain["epoch"], 1)]
    # Taken when the socket appeared, not at the attempt the back-off had scheduled.
    last_wait = _wait_for_log(node, WAITING, 1, timeout=1)[-1]
    scheduled = last_wait.timestamp + last_wait.data["retry_in"]
    assert updates[0].timestamp < max(scheduled, appeared + 3), (updates[0].timestamp - appeared, scheduled - appeared)
    assert [r["verdict"] for r in late] == ["accepted"], late
    assert node.running and node.pid == pid and node.starts == 1  # the same process throughout
    assert link_warnings == [], "waiting for cardano-node at start is no warning"
