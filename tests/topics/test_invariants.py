"""The invariants common to all adapters, docs/topics-design.md 2.11 C2..C7, as property tests on a real
LMDB-backed instance with the test adapter (C1 is in test_classify_envelope)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmq.clock import ManualClock
from dmq.ingress import Ingress
from dmq.trace import MessageRejected
from dmq.validation import SigDuplicate, TopicRejected
from topics import cbor
from topics.adapter import Priority
from topics.publication import MAX_NETWORK_LIFETIME, NodePublisher
from topics.raw import is_raw_message
from topics.subscriptions import Subscription

from .harness import EXP_OFFSET, NOW, instance, sign
from topics.classify import tag_head
from topics.envelope import EnvelopeError

from .kv_adapter import KV_LIFETIME, KV_TAG, kv_body, kv_id
from .service_harness import node_signer

EXP = int(NOW) + EXP_OFFSET
ROOT = Path(__file__).resolve().parents[2]
PROPERTY = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def scratch() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)


# One kv record: (key index, seq, bad value?)
records = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.booleans()), min_size=1, max_size=10)


@PROPERTY
@given(records)
def test_c4_reject_purity(plan):
    """After any adapter reject, DMQ store, core state and adapter store are unchanged."""
    async def main():
        with scratch() as tmp:
            async with instance(Path(tmp) / "db") as inst:
                rejects = 0
                for n, (key, seq, bad) in enumerate(plan):
                    body = kv_body(bytes([key + 1]), seq, b"bad" if bad else bytes([n]) * 4)
                    before = inst.state()
                    error = await inst.ingress.submit_local(sign(body, EXP).raw)
                    if isinstance(error, (TopicRejected, SigDuplicate)):
                        rejects += 1
                        assert inst.state() == before
                    else:
                        assert error is None
                assert rejects == sum(1 for e in inst.events if isinstance(e, MessageRejected))
    trio.run(main)


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=8, unique=True),
       st.randoms(use_true_random=False), st.integers(0, 3))
def test_c5_order_and_duplicates_do_not_change_the_converged_state(records_, rng, copies):
    """Any order, with duplicates, gives the same adapter state (latest record per key)."""
    messages = [sign(kv_body(bytes([k + 1]), s), EXP) for k, s in records_]
    shuffled = messages + [rng.choice(messages) for _ in range(copies)]
    rng.shuffle(shuffled)

    async def final_state(order):
        with scratch() as tmp:
            async with instance(Path(tmp) / "db") as inst:
                for message in order:
                    await inst.ingress.submit_local(message.raw)
                latest = inst.dbs.snapshot()["kv"]["latest"]
                return {key: cbor.decode(value)[:2] for key, value in latest.items()}

    expected = {}
    for k, s in records_:
        key = bytes([k + 1])
        expected[key] = max(expected.get(key, [-1, b""]), [s, b"v"])
    assert trio.run(final_state, messages) == expected == trio.run(final_state, shuffled)


@PROPERTY
@given(st.lists(st.one_of(st.integers(0, 1994).map(lambda n: n.to_bytes(2, "big")), st.just(b"tag")),
                min_size=1, max_size=6))
def test_c2_c3_raw_transparency_and_mithril_protection(kinds):
    """Raw items come back byte-identical (protocol 1000 and 15); a raw-only instance
    classifies nothing: it stores every valid message as the reference does, tagged or not."""
    async def main():
        with scratch() as tmp:
            messages = []
            for n, kind in enumerate(kinds):
                body = kv_body(bytes([n + 1]), 0) if kind == b"tag" else kind + bytes([n]) * 100
                messages.append(sign(body, EXP))
            async with instance(Path(tmp) / "topic") as inst:
                sub = Subscription(filter=[{0: 0}])
                inst.hub.ephemeral.add(sub)
                for m in messages:
                    assert await inst.ingress.submit_local(m.raw) is None
                raws = [m.raw for m, k in zip(messages, kinds) if k != b"tag"]
                items = [cbor.decode(item.item_body)[2] for item in sub.queue]
                assert items == raws
                entries, _ = await inst.mempool.cursor().next_batch(False, 100)
                assert [e.raw for e in entries if is_raw_message(e.raw)] == raws
            async with instance(Path(tmp) / "raw-only", carried=("raw",)) as inst:
                ingress = Ingress(inst.mempool, inst.validator, inst.tracer)
                verdict = await ingress.submit_from_peer([m.raw for m in messages], "peer")
                assert verdict.disconnect is None and verdict.accepted == len(messages)
                entries, _ = await inst.mempool.cursor().next_batch(False, 100)
                assert [e.raw for e in entries] == [m.raw for m in messages]
    trio.run(main)


@PROPERTY
@given(st.integers(0, 1990), st.integers(0, 2000))
def test_c6_bounds_of_publication(size, advance):
    """Every published body is 90..2000 bytes; every expiresAt the node creates is at most
    now + M and the adapter bound; nothing is delivered after its deadline."""
    async def main():
        with scratch() as tmp:
            clock = ManualClock(NOW)
            async with instance(Path(tmp) / "db", clock=clock) as inst:
                publisher = NodePublisher(inst.ingress, node_signer(clock))
                sub = Subscription(filter=[{0: 2}])
                inst.hub.ephemeral.add(sub)
                async with trio.open_nursery() as nursery:
                    await nursery.start(publisher.run)
                    try:
                        body = kv_body(b"k", 1, b"x" * size)
                    except EnvelopeError:     # the encoder refuses it: a client may still send it
                        body = tag_head(KV_TAG) + cbor.encode([1, 0, [b"k", 1, [], b"x" * size]])
                    outcome = await publisher.publish(body, Priority.CLIENT)
                    nursery.cancel_scope.cancel()
                if outcome.reject is not None:
                    assert outcome.reject.reason.name == "too_large"
                    return
                entries, _ = await inst.mempool.cursor().next_batch(False, 10)
                message = inst.ingress.decode(entries[0].raw)
                assert 90 <= len(message.body) <= 2000
                assert message.expires_at <= NOW + min(MAX_NETWORK_LIFETIME, KV_LIFETIME)
                clock.advance(advance)
                taken, _ = inst.hub.take(sub, 0, 10, 1 << 20, clock.now())
                assert len(taken) == (1 if clock.now() <= message.expires_at else 0)
    trio.run(main)


CHILD = r"""
import sys, trio
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from dmq.clock import ManualClock
from tests.topics.harness import instance, sign, NOW
from tests.topics.kv_adapter import kv_body
from topics.ingress import HUB_OWNER
from topics.subscriptions import Subscription, release

async def main():
    async with instance(Path(sys.argv[2]), ManualClock(NOW)) as inst:
        sub = Subscription(filter=[{0: 2}], name=b"d")
        inst.dbs.write(HUB_OWNER, lambda txn: txn.put("durable", b"d", sub.record()))
        inst.hub.durable[b"d"] = sub
        for i in range(200):
            await inst.ingress.submit_local(sign(kv_body(b"k", i), int(NOW) + 300).raw)
            if i == 3:
                sub.cursor = 4
                released = inst.hub.ack(sub, 1)
                inst.dbs.write(HUB_OWNER, lambda txn: (release(txn, released),
                                                       txn.put("durable", b"d", sub.record())))
                print("acked", flush=True)
            print(i, flush=True)

trio.run(main)
"""


def test_c7_crash_safety_after_kill():
    """SIGKILL at a random point: the state is a committed one, acknowledged items are not
    delivered again and every unacknowledged durable item is."""
    for stop_after in (5, 23):
        with scratch() as tmp:
            db = Path(tmp) / "db"
            child = subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), str(db)],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
            seen = 0
            for line in child.stdout:
                if line.strip().isdigit():
                    seen = int(line) + 1
                if seen >= stop_after:
                    break
            child.send_signal(signal.SIGKILL)
            child.wait()

            async def reopen():
                async with instance(db) as inst:
                    sub = inst.hub.durable[b"d"]
                    latest = cbor.decode(inst.dbs.snapshot()["kv"]["latest"][b"k"])[0]
                    return latest, [item.dseq for item in sub.queue], sub.acked, len(inst.mempool)

            latest, dseqs, acked, stored = trio.run(reopen)
            committed = latest + 1
            assert committed >= seen                          # every acknowledged one is there
            assert stored == committed                        # DMQ store and adapter agree
            assert acked == 1 and dseqs == list(range(2, committed))


def test_a_deferred_message_is_charged_once_and_released():
    async def main():
        with scratch() as tmp:
            from topics.bucket import BucketPolicy

            async with instance(Path(tmp) / "db", bucket=BucketPolicy(2, 1000.0)) as inst:
                first = kv_body(b"a", 1)
                waiting = sign(kv_body(b"b", 1, deps=[kv_id(first)]), EXP)
                assert await inst.ingress.submit_local(waiting.raw) is None     # deferred: 1 token
                refused = await inst.ingress.submit_local(sign(kv_body(b"c", 1, b"bad"), EXP).raw)
                assert isinstance(refused, TopicRejected)                        # rejects cost nothing
                assert await inst.ingress.submit_local(sign(first, EXP).raw) is None   # 2nd token
                assert inst.mempool.contains(waiting.message_id)                # re-run: no charge
                over = await inst.ingress.submit_local(sign(kv_body(b"d", 1), EXP).raw)
                assert isinstance(over, TopicRejected) and over.reason == "rate_limited"
                assert isinstance(await inst.ingress.submit_local(waiting.raw), SigDuplicate)
    trio.run(main)
