"""Mithril registrations agreed by three ``dmq-node`` processes, checked by Mithril's own code.

Three nodes sign as pools 0, 1 and 2, the electors of a registration topic whose Blocklace
epochs last two seconds; the chain's Cardano epochs last 20 s (a Shelley genesis with
``epochLength`` 20), so a registration round opens and closes within the test. Mithril's
harness (mithril-common 0.8.3) makes three signers; each registration goes to a different
node, one with ``dmq mithril register``, the others with the client library it uses. Node 1
is then killed (SIGKILL) and started again while the round is open, and node 2 is frozen
(SIGSTOP) until the others have closed the round, then resumed: no set is fixed without it
(the count rule needs all three electors), and it ends with the same one. A fourth pool registers two different keys, one through
node 0 and one through node 2: an equivocation. When the round's epoch begins the nodes close
it by themselves and a Blocklace certificate fixes the set.

Then: every node fixed the same set and digest, without the equivocating pool, whose two
registrations every node keeps; ``/epoch-settings`` of two nodes, decoded by Mithril's
``EpochSettingsMessage`` and verified signer by signer with Mithril's key registration, names
exactly the three signers, identically; a subscriber of the topic at one node receives every
node's ``agreed`` notice, all with that digest.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
import trio

from apps.mithril_registration import parse_register_signer
from apps.mithril_registration.build import BlsKey, Pool, build_registration
from apps.mithril_registration.client import publish_registration
from apps.mithril_registration.encoding import decode_verification_key
from apps.mithril_registration.events import MAX_POINTERS, Agreed, decode_event
from clients.topics import decode_item, draft_block, open_topic_connection
from dmq.codec import decode_message
from dmq.opcert import pool_id_bech32
from lab.devnet.topology import topology_document
from tests.e2e.topic_node import OPEN_BUDGETS, TOPIC_MAGIC, n2n_port, topic_node
from tests.topics.blocklace.world import ALL, TOPIC, ad_payload, advertisement, pool
from topics.adapter import ITEM_MESSAGE
from topics.blocklace.codec import EVENT, TopicParams, decode_body

from .conftest import run_harness

pytestmark = [pytest.mark.interop, pytest.mark.trio]

EPOCH_LENGTH = 20          # slots of 1 s
ELECTORS = (0, 1, 2)
SIGNERS = 3
#: Blocklace epochs of two seconds compress a Mithril epoch of days into seconds, so each
#: elector signs far more blocks per window than the pools' default budgets allow (8 per 25 s);
#: what this test checks is the agreement, not the budgets (tests/topics/test_budgets.py), so it
#: opens them (OPEN_BUDGETS).
#: Seconds a registration round must still have when the registrations are sent.
ROOM = 8


def _chain(directory: Path, stakes: dict[bytes, int], start: int) -> None:
    (directory / "stake.json").write_text(json.dumps(
        {"epoch": 500, "maxKESEvolutions": 62, "pools": {p.hex(): s for p, s in stakes.items()}}))
    system_start = datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    (directory / "shelley-genesis.json").write_text(json.dumps(
        {"systemStart": system_start, "slotLength": 1, "slotsPerKESPeriod": 129600, "networkMagic": 42,
         "epochLength": EPOCH_LENGTH, "maxKESEvolutions": 62}))


def _generate(harness: Path, tmp_path: Path, epoch: int) -> list[dict]:
    made = run_harness(harness, "generate", "--signers", str(SIGNERS), "--epoch", str(epoch), "--start-kes-period",
                       "0", "--kes-evolutions", "0", "--seed", "27", "--dir", str(tmp_path / "signers"))
    assert made.returncode == 0, made.stderr
    return [json.loads(line) for line in made.stdout.splitlines()]


def _register(node, registration: dict) -> str:
    done = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "mithril", "register", "--socket",
                           str(node.socket_path), "--magic", str(TOPIC_MAGIC), "--topic", TOPIC.hex(),
                           "--registration", "-"], input=json.dumps(registration), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "published id=" in done.stdout
    return done.stdout


async def _publish(node, registration) -> None:
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        await publish_registration(conn, TOPIC, registration)


async def _notices(node, epoch: int) -> dict[bytes, Agreed]:
    """The ``agreed`` notices of ``epoch`` a subscriber of the topic at ``node`` holds, by announcing pool."""
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        await conn.ask(conn.topics.subscribe([{0: 2, 3: [TOPIC]}], 1))
        reply = await conn.ask(conn.topics.next(blocking=False))
    out = {}
    for item in map(decode_item, reply.items):
        if item.kind != ITEM_MESSAGE:
            continue
        message = decode_message(item.payload)
        block = decode_body(message.body)[1]
        if block.payload.type == EVENT:
            event = decode_event(block.payload.event)
            if isinstance(event, Agreed) and event.epoch == epoch:
                out[message.pool_id] = event
    return out


def _get(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def _until(condition, timeout: float, what: str, nodes) -> None:
    deadline = trio.current_time() + timeout
    while not condition():
        for node in nodes:
            node.check_running()
        if trio.current_time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}; {nodes[0].diagnostics()}")
        await trio.sleep(0.3)


def _agreed(node, epoch: int) -> dict | None:
    return next((e for e in node.trace_events("MithrilRegistrationAgreed") if e["epoch"] == epoch), None)


async def test_three_nodes_agree_on_the_signers_and_mithril_reads_them(harness, tmp_path):
    start = int(time.time()) - 1000
    epoch_now = lambda: (int(time.time()) - start) // EPOCH_LENGTH  # noqa: E731
    # the pools' ids do not depend on the epoch: the stake file is written before the round is chosen
    signers = _generate(harness, tmp_path, 0)
    twice = Pool.create(b"\x27" * 32, b"\x28" * 32, start_kes_period=0)
    stakes = {bytes.fromhex(s["pool_id_hex"]): s["stake"] for s in signers}
    stakes |= {pool(i).id: 1_000_000 for i in ELECTORS} | {twice.pool_id: 500_000}

    nodes = []
    try:
        for i in ELECTORS:
            directory = tmp_path / f"n{i}"
            node = topic_node(directory, carried=["raw", "blocklace"], signer=i, pools=3,
                              MithrilRegistration={"Topic": TOPIC.hex(), "HttpPort": 0}, **OPEN_BUDGETS)
            _chain(directory, stakes, start)
            peers = [("127.0.0.1", n2n_port(p)) for p in nodes[:1]]
            (directory / "dmq.topology.json").write_text(json.dumps(topology_document(peers)))
            nodes.append(node.start())
        params = TopicParams(epoch_interval=2, attempt_timeout=4, max_pointers=MAX_POINTERS)
        ad = advertisement(0, {pool(i).id: ALL for i in ELECTORS}, params)
        async with open_topic_connection(nodes[0].socket_path, TOPIC_MAGIC) as conn:
            await conn.ask(conn.topics.publish(draft_block(TOPIC, ad_payload(ad))))
        # the current epoch's round (no registrations) closes at once: every node fixes it, empty
        first = epoch_now()
        await _until(lambda: all(_agreed(n, first) or _agreed(n, first + 1) for n in nodes), 30,
                     "every node fixed an empty set", nodes)

        # registrations for the next epoch, sent with room before it begins
        left = (epoch_now() + 1) * EPOCH_LENGTH + start - time.time()
        if left < ROOM + 4:
            await trio.sleep(left + 0.5)
        round_epoch = epoch_now() + 1
        signers = _generate(harness, tmp_path, round_epoch)
        equivocations = [build_registration(twice, BlsKey.generate(secret), epoch=round_epoch, current_kes_period=0)
                         for secret in (11, 12)]
        # one through the command, the others through the client library it uses (a loaded
        # machine starts a Python process in seconds, and the round has 8 of them)
        sends = [(nodes[i % 3], parse_register_signer(s["registration"])) for i, s in enumerate(signers[1:], 1)]
        sends += list(zip((nodes[0], nodes[2]), equivocations))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, _register, nodes[0], signers[0]["registration"])
            for node, registration in sends:
                nursery.start_soon(_publish, node, registration)
        assert epoch_now() < round_epoch, "the round closed before the registrations were sent: machine too slow"
        # node 1 is killed mid-round and comes back with its database: until it does, no
        # Blocklace epoch can be final (the count rule needs all three electors)
        nodes[1].kill()
        await trio.to_thread.run_sync(nodes[1].start)
        # node 2 is frozen (SIGSTOP) across the round's close: its peers hear nothing from it and
        # it hears nothing, so nodes 0 and 1 close the round but cannot fix it without it
        nodes[2].process.send_signal(signal.SIGSTOP)
        try:
            await _until(lambda: epoch_now() >= round_epoch and all(
                any(e["epoch"] == round_epoch for e in n.trace_events("MithrilRegistrationClosed")) for n in nodes[:2]),
                EPOCH_LENGTH + 30, "nodes 0 and 1 closed the round", nodes)
            assert not any(_agreed(n, round_epoch) for n in nodes)
        finally:
            nodes[2].process.send_signal(signal.SIGCONT)

        await _until(lambda: all(_agreed(n, round_epoch) for n in nodes), 2 * EPOCH_LENGTH + 30,
                     f"every node fixed the set of epoch {round_epoch}", nodes)
        agreed = [_agreed(n, round_epoch) for n in nodes]
        assert len({a["digest"] for a in agreed}) == 1, agreed
        assert all(a["signers"] == SIGNERS and a["excluded"] == 1 for a in agreed), agreed

        # local notification: a subscriber of the topic at one node gets every node's notice
        notices: dict[bytes, Agreed] = {}
        deadline = trio.current_time() + 30
        while len(notices) < 3 and trio.current_time() < deadline:
            notices = await _notices(nodes[2], round_epoch)
            await trio.sleep(0.5)
        assert set(notices) == {pool(i).id for i in ELECTORS}
        assert {n.digest.hex() for n in notices.values()} == {agreed[0]["digest"]}
        assert not any(n.trace_events("MithrilRegistrationDisagreement") for n in nodes)

        ports = [int(n.trace_events("MithrilRegistrationListening")[0]["endpoint"].rsplit(":", 1)[1]) for n in nodes]
        described = [_get(port, f"/registrations/{round_epoch}") for port in ports]
        assert all(status == 200 for status, _ in described)
        assert len({json.dumps(d, sort_keys=True) for _, d in described}) == 1
        [proof] = described[0][1]["excluded"]
        assert proof["pool_id"] == twice.pool_id.hex()
        keys = {decode_event(bytes.fromhex(proof[k])).registration.verification_key
                for k in ("first_event", "second_event")}
        assert keys == {decode_verification_key(r.verification_key).hex() for r in equivocations}

        stake_file = tmp_path / "stakes.json"
        stake_file.write_text(json.dumps({pool_id_bech32(p): s for p, s in stakes.items()}))
        served = []
        for port in ports[:2]:
            # 503 while the chain is in the epoch after the round and that epoch's set is not fixed yet
            status, settings = _get(port, "/epoch-settings")
            deadline = time.monotonic() + 2 * EPOCH_LENGTH
            while status == 503 and time.monotonic() < deadline:
                await trio.sleep(0.5)
                status, settings = _get(port, "/epoch-settings")
            assert status == 200, settings
            # the round's set is next_signers during its epoch, current_signers in the one after
            listed = {round_epoch: "next_signers", round_epoch + 1: "current_signers"}[settings["epoch"]]
            served.append(settings[listed])
            verified = run_harness(harness, "verify-epoch-settings", "--current-kes-period", "0",
                                   "--stake-distribution", str(stake_file), stdin=json.dumps(settings))
            assert verified.returncode == 0, verified.stdout + verified.stderr
            verdicts = [json.loads(line) for line in verified.stdout.splitlines()]
            mine = [v for v in verdicts if v["list"] == listed]
            assert sorted(v["registered_party_id"] for v in mine) == sorted(s["registration"]["party_id"]
                                                                            for s in signers)
            assert all(v["ok"] for v in verdicts)
        assert served[0] == served[1]
    finally:
        for node in nodes:
            node.kill()

