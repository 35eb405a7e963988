"""The ingress pipeline of docs/topics-design.md 2.5 on a real LMDB-backed instance."""

from __future__ import annotations

import pytest

from dmq.validation import SigDuplicate, TopicRejected
from topics.subscriptions import Subscription

from .harness import NOW, instance, sign
from .kv_adapter import kv_body, kv_id

pytestmark = pytest.mark.trio
EXP = int(NOW) + 300


async def test_accepts_raw_and_adapter_bodies(tmp_path):
    async with instance(tmp_path / "db") as inst:
        raw = sign(b"\x00\x60" + b"r" * 96, EXP)
        kv = sign(kv_body(b"k", 1), EXP)
        assert await inst.ingress.submit_local(raw.raw) is None
        assert await inst.ingress.submit_local(kv.raw) is None
        assert inst.mempool.contains(raw.message_id) and inst.mempool.contains(kv.message_id)
        assert isinstance(await inst.ingress.submit_local(kv.raw), SigDuplicate)


async def test_reject_leaves_state_untouched_and_is_cached(tmp_path):
    async with instance(tmp_path / "db") as inst:
        await inst.ingress.submit_local(sign(kv_body(b"k", 5), EXP).raw)
        before = inst.state()
        stale = sign(kv_body(b"k", 4), EXP)
        error = await inst.ingress.submit_local(stale.raw)
        assert isinstance(error, TopicRejected) and error.text == "topic:kv:stale" and error.code == 16
        assert inst.state() == before
        assert isinstance(await inst.ingress.submit_local(stale.raw), SigDuplicate)


async def test_defer_then_release_when_dependency_arrives(tmp_path):
    async with instance(tmp_path / "db") as inst:
        first = kv_body(b"a", 1)
        second = sign(kv_body(b"b", 1, deps=[kv_id(first)]), EXP)
        sub = Subscription(filter=[{0: 2}])
        inst.hub.ephemeral.add(sub)
        assert await inst.ingress.submit_local(second.raw) is None
        assert not inst.mempool.contains(second.message_id)
        assert inst.ingress.pending["kv"].holds(second.message_id)
        assert isinstance(await inst.ingress.submit_local(second.raw), SigDuplicate)
        await inst.ingress.submit_local(sign(first, EXP).raw)
        assert inst.mempool.contains(second.message_id)
        assert [item.dseq for item in sub.queue] == [0, 1]
