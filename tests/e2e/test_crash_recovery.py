"""SIGKILL in the middle of a stream of submissions, then a restart on the same database.

A message acknowledged with ``[1]`` must survive anything the process can suffer
(docs/architecture.md principle 5: acknowledged means durable), and a message answered with a
reject must never reappear. Submissions still waiting for their reply when the process
died were never acknowledged: the node may or may not have kept them.
"""

from __future__ import annotations

import signal

import trio

from tests.e2e.messages import DMQ_DEVNET_MAGIC as MAGIC, now_s, with_kes_signature
from tests.e2e.raw_n2c import (
    ACCEPT,
    REJECT_ALREADY_RECEIVED,
    REJECT_EXPIRED,
    ConnectionLost,
    RawN2CClient,
    publish_like_mithril_signer,
    read_everything,
)

SUBMITTERS = 8
KILL_AFTER_ACKS = 120


async def test_acknowledged_messages_survive_sigkill_and_rejected_ones_never_appear(start_node, signers):
    node = start_node(flags=("--min-sig-delay", "0"))
    pool0, pool1 = signers
    stream = []
    for i in range(600):
        good = (pool0 if i % 2 else pool1).sign()
        if i % 5 == 3:
            stream.append(with_kes_signature(good, pool0.sign().kes_signature))  # invalid
        elif i % 7 == 4:
            stream.append(pool1.sign(expires_at=now_s() - 5).raw)               # expired
        else:
            stream.append(good.raw)
    acknowledged: list[bytes] = []
    rejected: dict[bytes, bytes] = {}
    unanswered: list[bytes] = []
    queue = iter(stream)
    killed = trio.Event()

    async def submitter() -> None:
        for raw in queue:
            if killed.is_set():
                return
            try:
                reply = await publish_like_mithril_signer(node.socket_path, MAGIC, raw)
            except (ConnectionLost, OSError):
                unanswered.append(raw)
                continue
            if reply == ACCEPT:
                acknowledged.append(raw)
                if len(acknowledged) == KILL_AFTER_ACKS:
                    node.kill(signal.SIGKILL)
                    killed.set()
            else:
                rejected[raw] = reply

    async with trio.open_nursery() as nursery:
        for _ in range(SUBMITTERS):
            nursery.start_soon(submitter)
    assert killed.is_set(), "the stream ended before the node was killed"
    assert unanswered, "no submission was in flight when the node died"
    assert len(rejected) > 20 and set(rejected.values()) >= {REJECT_EXPIRED}

    node.start()
    served = await read_everything(node.socket_path, MAGIC)
    assert len(served) == len(set(served)), "a message was served twice"
    served_set = set(served)
    missing = [raw for raw in acknowledged if raw not in served_set]
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged messages lost"
    assert not served_set & rejected.keys()
    assert served_set <= set(acknowledged) | set(unanswered)
    # The duplicate set came back with the messages; rejected messages are judged anew.
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, acknowledged[0]) == REJECT_ALREADY_RECEIVED
    for raw, reply in list(rejected.items())[:5]:
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, raw) == reply


async def test_acknowledged_legacy_messages_survive_a_restart(start_node, signers):
    """With ``LegacyMessageFormat`` on, the store is read back with the decoder that accepted
    its messages: a legacy message acknowledged before SIGKILL is served after the restart."""
    node = start_node(LegacyMessageFormat=True, flags=("--min-sig-delay", "0"))
    messages = [signer.sign(legacy=True).raw for signer in signers]
    for raw in messages:
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, raw) == ACCEPT
    node.kill(signal.SIGKILL)
    node.start()
    assert await read_everything(node.socket_path, MAGIC) == messages
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, messages[0]) == REJECT_ALREADY_RECEIVED
