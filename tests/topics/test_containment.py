"""A failing adapter ends one message, one publication or one housekeeping round, never the
node (topics.containment): the real ingress, publication queue, topic service and local
socket, with the test adapter made to raise where a defect would."""

from __future__ import annotations

import pytest
import trio

import topics.service

from clients.topics import TopicRequestRefused, open_topic_connection
from miniprotocols.local_topic_subscription import MsgPublished
from tests.e2e.raw_n2c import ACCEPT, RawN2CClient
from topics.trace import TopicFailureContained

from .harness import EXP_OFFSET, NOW, TOPIC_MAGIC, sign
from .kv_adapter import KvAdapter, kv_body
from .service_harness import served

pytestmark = pytest.mark.trio


class FaultyKv(KvAdapter):
    """Raises in the hook a record's value names; counts the caches it was told to drop."""

    def __init__(self) -> None:
        self.discarded = 0
        self.due_calls = 0

    @staticmethod
    def _boom(inner, hook: str) -> None:
        if inner["value"] == hook.encode():
            raise TypeError(f"{hook}() takes 1 positional argument but 2 were given")

    def validate(self, inner, ctx):
        self._boom(inner, "validate")
        return super().validate(inner, ctx)

    def on_accept(self, message, txn):
        self._boom(message.inner, "on_accept")
        return super().on_accept(message, txn)

    def for_signing(self, body, inner, view, now):
        self._boom(inner, "for_signing")
        return body

    def discard_caches(self) -> None:
        self.discarded += 1

    def due_publications(self, view, now):
        self.due_calls += 1
        raise KeyError("a housekeeping defect")

    def prune(self, now, txn):
        raise ValueError("a pruning defect")


def contained(inst, where: str) -> list[TopicFailureContained]:
    return [e for e in inst.events if isinstance(e, TopicFailureContained) and e.where == where]


async def test_failures_end_one_message_or_round_and_the_node_serves_on(tmp_path, monkeypatch):
    monkeypatch.setattr(topics.service, "DUE_INTERVAL", 0.01)
    monkeypatch.setattr(topics.service, "PRUNE_INTERVAL", 0.01)
    adapter = FaultyKv()
    async with served(tmp_path, adapter=adapter) as inst:
        async with open_topic_connection(inst.socket, TOPIC_MAGIC) as conn:
            for n, hook in enumerate(["validate", "on_accept", "for_signing"]):
                with pytest.raises(TopicRequestRefused, match="malformed"):
                    await conn.ask(conn.topics.publish(kv_body(b"k%d" % n, 1, hook.encode())))
            # the same connection and the publication queue serve on
            assert isinstance(await conn.ask(conn.topics.publish(kv_body(b"fine", 1))), MsgPublished)
        assert [e.where for e in inst.events if isinstance(e, TopicFailureContained)
                and e.where != "housekeeping"] == ["ingress", "ingress", "publication"]
        assert "takes 1 positional argument" in contained(inst, "publication")[0].error
        assert adapter.discarded >= 2          # after each failed ingress, caches are rebuilt

        async with await RawN2CClient.connect(inst.socket) as client:
            await client.handshake(TOPIC_MAGIC)
            failing = sign(kv_body(b"local", 1, b"on_accept"), int(NOW) + EXP_OFFSET)
            assert await client.submit(failing.raw) != ACCEPT
            assert not inst.mempool.contains(failing.message_id)    # its commit never happened
            assert await client.submit(sign(kv_body(b"local", 2), int(NOW) + EXP_OFFSET).raw) == ACCEPT

        calls = adapter.due_calls
        with trio.fail_after(5):
            while adapter.due_calls < calls + 3 or not contained(inst, "housekeeping"):
                await trio.sleep(0.01)
        subjects = {e.subject for e in contained(inst, "housekeeping")}
        assert {"kv due publications", "kv prune"} <= subjects
