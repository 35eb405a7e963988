"""A pool without stake floods the registration topic; the honest nodes agree on the honest signers.

Three ``dmq-node`` processes sign as the electors of a registration topic (count rule), as in
``test_agreed_on_nodes``. A fourth runs for pool 3, which the topic's advertisement names as an
Event publisher but which has no stake in the distribution the honest nodes hold. Its operator
gave its own node a stake file in which it has stake, so its node signs and diffuses its blocks:
a flood of registration blocks, each a real, KES-signed DMQ message of the topic, offered to all
three honest nodes over node-to-node connections it dials.

- **Refused at ingress.** Each honest node refuses every one of them at DMQ validation, before
  the topic sees it (check 7, ``UnrecognizedPool``, reaction "trace": the connection stays),
  accepts none, so relays none; its trace lines and its ``sigValidation.rejected`` metric count
  them.
- **Left out by the rule.** Two registrations of Mithril pools without stake, one absent from
  the distribution and one in it at zero stake, are carried by honest electors: their blocks are
  accepted and reach every node (any publisher may carry any pool's registration), and the rule
  leaves them out when the set is fixed (docs/mithril-registration.md 8.3).
- **Agreement.** Every honest node fixes one digest, whose set is exactly the three honest
  signers, and no node traces a disagreement.
"""

from __future__ import annotations

import json

import pytest
import trio

from apps.mithril_registration import parse_register_signer
from apps.mithril_registration.build import BlsKey, Pool, build_registration
from dmq.ports import free_ports
from lab.devnet.scrape import scrape_node
from lab.devnet.topology import topology_document
from tests.e2e.topic_node import OPEN_BUDGETS, TOPIC_MAGIC, n2n_port, topic_node
from tests.topics.blocklace.world import ALL, TOPIC, pool
from topics.blocklace.codec import PERM_EVENT

from .nodes import (SETUP, Chain, accepted, advertise, agreed, generate_signers, get_json, http_port, publish, rejected,
                    start_dialling_the_first, until)

pytestmark = [pytest.mark.interop, pytest.mark.trio]

ELECTORS = (0, 1, 2)
STAKELESS = 3               # the DMQ pool of the flooding node
SIGNERS = 3
FLOOD = 40                  # registration blocks the stake-less pool sends


async def test_a_stakeless_pool_floods_the_topic_and_the_electors_agree_on_the_honest_signers(harness, tmp_path):
    chain = Chain.begun_long_ago(setup=SETUP + 4)     # a fourth node to start, after the others
    signers = generate_signers(harness, tmp_path / "signers", 0, SIGNERS)
    absent = Pool.create(b"\x31" * 32, b"\x32" * 32, start_kes_period=0)
    zero = Pool.create(b"\x33" * 32, b"\x34" * 32, start_kes_period=0)
    flooded = [Pool.create(bytes([0x40 + k]) * 32, bytes([0x60 + k]) * 32, start_kes_period=0) for k in range(4)]
    stakes = {bytes.fromhex(s["pool_id_hex"]): s["stake"] for s in signers}
    stakes |= {pool(i).id: 1_000_000 for i in ELECTORS} | {zero.pool_id: 0}
    metrics = free_ports(len(ELECTORS))

    nodes = []
    spammer = None
    try:
        for i in ELECTORS:
            directory = tmp_path / f"n{i}"
            nodes.append(topic_node(directory, carried=["raw", "blocklace"], signer=i, pools=3,
                                    PrometheusPort=metrics[i], **OPEN_BUDGETS,
                                    MithrilRegistration={"Topic": TOPIC.hex(), "HttpPort": 0}))
            chain.write(directory, stakes)
        await start_dialling_the_first(nodes)
        # the stake-less pool's node believes it has stake, and dials every honest node
        directory = tmp_path / "stakeless"
        spammer = topic_node(directory, carried=["raw", "blocklace"], signer=STAKELESS, pools=4, **OPEN_BUDGETS)
        chain.write(directory, stakes | {pool(STAKELESS).id: 1_000_000})
        peers = [("127.0.0.1", n2n_port(n)) for n in nodes]
        (directory / "dmq.topology.json").write_text(json.dumps(topology_document(peers)))
        spammer.start()

        await advertise(nodes[0], {pool(i).id: ALL for i in ELECTORS} | {pool(STAKELESS).id: PERM_EVENT}, TOPIC_MAGIC)
        round_epoch = await chain.next_round(nodes)
        signers = generate_signers(harness, tmp_path / "signers", round_epoch, SIGNERS)
        honest = [(nodes[i], parse_register_signer(s["registration"])) for i, s in enumerate(signers)]
        unstaked = [(nodes[1], build_registration(absent, BlsKey.generate(21), epoch=round_epoch, current_kes_period=0)),
                    (nodes[2], build_registration(zero, BlsKey.generate(22), epoch=round_epoch, current_kes_period=0))]
        spam = [build_registration(flooded[k % len(flooded)], BlsKey.generate(100 + k), epoch=round_epoch,
                                   current_kes_period=0) for k in range(FLOOD)]
        carried: list[bytes] = []
        spammed: list[bytes] = []

        async def send(node, registration, into: list[bytes]) -> None:
            into.append(await publish(node, registration, TOPIC_MAGIC))

        async def flood() -> None:
            for registration in spam:
                await send(spammer, registration, spammed)
        async with trio.open_nursery() as nursery:
            for node, registration in honest:
                nursery.start_soon(send, node, registration, [])
            for node, registration in unstaked:
                nursery.start_soon(send, node, registration, carried)
            nursery.start_soon(flood)
        assert chain.epoch_now() < round_epoch, "the round closed before the registrations were sent: machine too slow"
        # the electors carried the stake-less pools' registrations to every node
        await until(lambda: all(accepted(n, i) for n in nodes for i in carried), 30,
                    "the carried stake-less registrations reached every node", nodes)
        # every honest node refused every block of the stake-less pool at ingress
        await until(lambda: all({e["message_id"] for e in rejected(n, pool(STAKELESS).id)} >= {i.hex() for i in spammed}
                                for n in nodes), 60, "every honest node refused the whole flood", [*nodes, spammer])

        await until(lambda: all(agreed(n, round_epoch) for n in nodes), 60,
                    f"every node fixed the set of epoch {round_epoch}", nodes)
        fixed = [agreed(n, round_epoch) for n in nodes]
        assert len({a["digest"] for a in fixed}) == 1, fixed
        assert all(a["signers"] == SIGNERS and a["excluded"] == 0 for a in fixed), fixed
        described = [await get_json(http_port(n), f"/registrations/{round_epoch}") for n in nodes]
        assert len({json.dumps(d, sort_keys=True) for _, d in described}) == 1
        assert sorted(described[0][1]["signers"]) == sorted(s["registration"]["party_id"] for s in signers)
        assert not any(n.trace_events("MithrilRegistrationDisagreement") for n in nodes)

        for node, port in zip(nodes, metrics):
            refusals = rejected(node, pool(STAKELESS).id)
            assert {(e["reason"]["reason"], e["reaction"]) for e in refusals} == {("UnrecognizedPool", "trace")}
            assert not any(e["pool_id"] == pool(STAKELESS).id.hex() for e in node.trace_events("MessageAccepted"))
            sample = await scrape_node(port, timeout=10)
            assert sample.rejected.get("UnrecognizedPool") == len(refusals) >= FLOOD
        # the flood was the stake-less node's to make: it accepted every block itself
        assert all(accepted(spammer, i) for i in spammed)
    finally:
        for node in [*nodes, spammer]:
            if node is not None:
                node.kill()
