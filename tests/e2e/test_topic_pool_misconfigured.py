"""A pool never equivocates by misconfiguration, on real ``dmq-node`` processes (docs/topics.md,
"A pool never equivocates").

* Two nodes hold one pool's key (a warm standby dialling the active node): the standby sees
  blocks of its pool that it did not sign, stops signing in the topic, says so at error level
  with what the operator must do, and refuses its clients' drafts; no node holds an
  equivocation proof.
* A node killed (SIGKILL) after committing a client's draft but before the client read the
  answer: the client's retry, after the restart, gets the block already made, not a second one.
"""

from __future__ import annotations

import json
import signal

import pytest
import trio

from dmq.cli import tool
from dmq.codec import decode_message
from lab.devnet.topology import topology_document
from clients.topics import TopicRequestRefused, decode_item, draft_block, open_topic_connection
from clients.topics.blocklace import event_draft
from tests.topics.blocklace.world import ALL, TOPIC, ad_payload, advertisement, pool

from .test_topic_blocklace_creator import blocks_of, items, publish
from .topic_node import TOPIC_MAGIC, n2n_port, topic_nodes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.trio

BLOCKLACE = 2


async def blocks(node) -> dict[bytes, object]:
    """The topic's blocks the node holds (``start = retained``), by DMQ id."""
    return blocks_of(await items(node))


async def until(condition, timeout: float, what: str) -> None:
    with trio.move_on_after(timeout):
        while not await condition():
            await trio.sleep(0.2)
        return
    raise AssertionError(f"not within {timeout} s: {what}")


def equivocations(node, capsys) -> str:
    assert tool.run(["topic", "equivocations", "--database-path", str(node.workdir / "db")]) == 0
    return capsys.readouterr().out.strip()


async def test_two_nodes_with_one_pool_key_make_no_equivocation_and_the_operator_is_told(
        topic_nodes, tmp_path, capsys):
    active = topic_nodes("active", carried=["raw", "blocklace"], signer=0)
    (tmp_path / "standby").mkdir()
    (tmp_path / "standby" / "dmq.topology.json").write_text(
        json.dumps(topology_document([("127.0.0.1", n2n_port(active))])))
    standby = topic_nodes("standby", carried=["raw", "blocklace"], signer=0)

    await publish(active, draft_block(TOPIC, ad_payload(advertisement(0, {pool(0).id: ALL, pool(1).id: ALL}))))
    first = await publish(active, event_draft(TOPIC, b"from the active node"))

    async def standby_stopped() -> bool:
        return bool(standby.trace_events("TopicSigningStopped"))

    await until(standby_stopped, 60, "the standby stops signing")
    (line,) = standby.log_events("TopicSigningStopped")
    assert line.sev == "Error" and line.data["topic"] == TOPIC.hex() and line.data["pool"] == pool(0).id.hex()
    assert "another node signs with this pool's key" in line.data["action"]
    assert "dmq topic blocklace resume-signing" in line.data["action"]
    with pytest.raises(TopicRequestRefused, match=r"signing_stopped \(code 22\)"):
        await publish(standby, event_draft(TOPIC, b"from the standby"))

    # The active node goes on, the standby follows it, and nobody holds a proof.
    second = await publish(active, event_draft(TOPIC, b"still the active node"))

    async def standby_follows() -> bool:
        return {first, second} <= set(await blocks(standby))

    await until(standby_follows, 60, "the standby holds the active node's blocks")
    held = await blocks(standby)
    assert sorted(b.seq for b in held.values()) == [0, 1, 2]
    for node in (active, standby):
        assert equivocations(node, capsys) == "no equivocation proofs held"
        node.check_running()
    assert not active.trace_events("TopicSigningStopped")

    # The operator stops the active node and clears the stop: the standby takes over after
    # the active node's last block.
    active.kill(signal.SIGTERM)
    standby.kill(signal.SIGTERM)
    command = ["topic", "blocklace", "resume-signing", "--database-path", str(standby.workdir / "db"),
               "--topic", TOPIC.hex()]
    assert tool.run(command) == 0
    assert "resumes when the node starts" in capsys.readouterr().out
    standby.start()
    third = await publish(standby, event_draft(TOPIC, b"the standby took over"))
    assert (await blocks(standby))[third].seq == 3
    assert equivocations(standby, capsys) == "no equivocation proofs held"


async def test_a_retry_after_a_crash_between_commit_and_answer_gets_the_block_already_made(topic_nodes):
    node = topic_nodes(carried=["raw", "blocklace"])
    await publish(node, draft_block(TOPIC, ad_payload(advertisement(0, {pool(0).id: ALL}))))
    body = event_draft(TOPIC, b"published once", draft_id=4242)
    made: list[bytes] = []

    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as follower:
        await follower.ask(follower.topics.subscribe([{0: BLOCKLACE, 3: [TOPIC]}], 0))
        async with trio.open_nursery() as nursery:

            async def publish_without_reading_the_answer() -> None:
                try:
                    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
                        await conn.topics.publish(body)      # its answer is never read
                        await trio.sleep_forever()
                except Exception:
                    pass        # the node died under the connection

            nursery.start_soon(publish_without_reading_the_answer)
            # The block is committed (delivered to the follower): the node dies at once.
            with trio.fail_after(60):
                while not made:
                    reply = await follower.topics.next(blocking=True)
                    made += [decode_message(decode_item(r).payload).message_id for r in reply.items
                             if decode_item(r).kind == 0]
            node.kill(signal.SIGKILL)
            nursery.cancel_scope.cancel()
    node.start()
    # The client retries the same draft: the node answers with the block it made before dying.
    assert await publish(node, body) == made[0]
    events = [b for b in (await blocks(node)).values() if b.payload.type == 0]
    assert [(b.seq, b.payload.event) for b in events] == [(1, b"published once")]
    # A different draft under the same id is refused, not published.
    with pytest.raises(TopicRequestRefused, match="conflict"):
        await publish(node, event_draft(TOPIC, b"something else", draft_id=4242))
    node.check_running()
