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
import time

import pytest
import trio

from apps.mithril_registration import parse_register_signer
from apps.mithril_registration.build import BlsKey, Pool, build_registration
from apps.mithril_registration.encoding import decode_verification_key
from apps.mithril_registration.events import Agreed, decode_event
from dmq.opcert import pool_id_bech32
from tests.e2e.topic_node import OPEN_BUDGETS, TOPIC_MAGIC, topic_node
from tests.topics.blocklace.world import ALL, TOPIC, pool

from .conftest import run_harness
from .nodes import (EPOCH_LENGTH, Chain, advertise, agreed, closed, generate_signers, get_json, http_port, publish,
                    register_with_command, start_dialling_the_first, topic_view, until)

pytestmark = [pytest.mark.interop, pytest.mark.trio]

ELECTORS = (0, 1, 2)
SIGNERS = 3


async def test_three_nodes_agree_on_the_signers_and_mithril_reads_them(harness, tmp_path):
    chain = Chain.begun_long_ago()
    # the pools' ids do not depend on the epoch: the stake file is written before the round is chosen
    signers = generate_signers(harness, tmp_path / "signers", 0, SIGNERS)
    twice = Pool.create(b"\x27" * 32, b"\x28" * 32, start_kes_period=0)
    stakes = {bytes.fromhex(s["pool_id_hex"]): s["stake"] for s in signers}
    stakes |= {pool(i).id: 1_000_000 for i in ELECTORS} | {twice.pool_id: 500_000}

    nodes = []
    try:
        for i in ELECTORS:
            directory = tmp_path / f"n{i}"
            nodes.append(topic_node(directory, carried=["raw", "blocklace"], signer=i, pools=3,
                                    MithrilRegistration={"Topic": TOPIC.hex(), "HttpPort": 0}, **OPEN_BUDGETS))
            chain.write(directory, stakes)
        await start_dialling_the_first(nodes)
        await advertise(nodes[0], {pool(i).id: ALL for i in ELECTORS}, TOPIC_MAGIC)
        # registrations for the next epoch, sent with room before it begins
        round_epoch = await chain.next_round(nodes)
        signers = generate_signers(harness, tmp_path / "signers", round_epoch, SIGNERS)
        equivocations = [build_registration(twice, BlsKey.generate(secret), epoch=round_epoch, current_kes_period=0)
                         for secret in (11, 12)]
        # one through the command, the others through the client library it uses (a loaded
        # machine starts a Python process in seconds, and the round has 8 of them)
        sends = [(nodes[i % 3], parse_register_signer(s["registration"])) for i, s in enumerate(signers[1:], 1)]
        sends += list(zip((nodes[0], nodes[2]), equivocations))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, register_with_command, nodes[0], signers[0]["registration"],
                               TOPIC_MAGIC)
            for node, registration in sends:
                nursery.start_soon(publish, node, registration, TOPIC_MAGIC)
        assert chain.epoch_now() < round_epoch, "the round closed before the registrations were sent: machine too slow"
        # node 1 is killed mid-round and comes back with its database: until it does, no
        # Blocklace epoch can be final (the count rule needs all three electors)
        nodes[1].kill()
        await trio.to_thread.run_sync(nodes[1].start)
        # node 2 is frozen (SIGSTOP) across the round's close: its peers hear nothing from it and
        # it hears nothing, so nodes 0 and 1 close the round but cannot fix it without it
        nodes[2].process.send_signal(signal.SIGSTOP)
        try:
            await until(lambda: chain.epoch_now() >= round_epoch and all(closed(n, round_epoch) for n in nodes[:2]),
                        EPOCH_LENGTH + 30, "nodes 0 and 1 closed the round", nodes)
            assert not any(agreed(n, round_epoch) for n in nodes)
        finally:
            nodes[2].process.send_signal(signal.SIGCONT)

        await until(lambda: all(agreed(n, round_epoch) for n in nodes), 2 * EPOCH_LENGTH + 30,
                    f"every node fixed the set of epoch {round_epoch}", nodes)
        fixed = [agreed(n, round_epoch) for n in nodes]
        assert len({a["digest"] for a in fixed}) == 1, fixed
        assert all(a["signers"] == SIGNERS and a["excluded"] == 1 for a in fixed), fixed

        # local notification: a subscriber of the topic at one node gets every node's notice
        heard: dict[bytes, Agreed] = {}
        deadline = trio.current_time() + 30
        while len(heard) < 3 and trio.current_time() < deadline:
            heard = (await topic_view(nodes[2], TOPIC_MAGIC)).notices(round_epoch)
            await trio.sleep(0.5)
        assert set(heard) == {pool(i).id for i in ELECTORS}
        assert {n.digest.hex() for n in heard.values()} == {fixed[0]["digest"]}
        assert not any(n.trace_events("MithrilRegistrationDisagreement") for n in nodes)

        ports = [http_port(n) for n in nodes]
        described = [await get_json(port, f"/registrations/{round_epoch}") for port in ports]
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
            status, settings = await get_json(port, "/epoch-settings")
            deadline = time.monotonic() + 2 * EPOCH_LENGTH
            while status == 503 and time.monotonic() < deadline:
                await trio.sleep(0.5)
                status, settings = await get_json(port, "/epoch-settings")
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
