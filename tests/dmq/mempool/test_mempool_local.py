"""Readers can tell a local submission from a relayed message from the moment it is published.

The serving sig-submission peer never holds back a local submission
(docs/protocol/node-to-node.md 9.8), and it decides in the publish callback, so the mark must be
there before the publish, in both mempools; nothing of it is written to disk.
"""

from __future__ import annotations

from dmq.clock import ManualClock
from dmq.mempool import Mempool, open_durable_mempool

from .messages import decode, make_message

NOW = 1_800_000_000


async def _seen_at_publish(mempool) -> dict[bytes, bool]:
    local, relayed = make_message(1, NOW + 600), make_message(2, NOW + 600)
    seen: dict[bytes, bool] = {}

    def on_publish():
        for entry in mempool:
            seen.setdefault(entry.message_id, mempool.is_local(entry.message_id))
        mempool.call_on_publish(on_publish)

    mempool.call_on_publish(on_publish)
    await mempool.submit([relayed], relayed=True)
    await mempool.submit([local])
    assert mempool.is_local(local.message_id) and not mempool.is_local(relayed.message_id)
    return {local.message_id: True, relayed.message_id: False}, seen


async def test_the_memory_mempool_marks_local_submissions_before_publishing():
    expected, seen = await _seen_at_publish(Mempool(ManualClock(now=NOW)))
    assert seen == expected


async def test_the_durable_mempool_marks_local_submissions_before_publishing(tmp_path):
    async with open_durable_mempool(tmp_path, ManualClock(now=NOW), decode=decode,
                                    relay_commit_interval=0.05) as mempool:
        expected, seen = await _seen_at_publish(mempool)
    assert seen == expected


async def test_the_marks_of_messages_no_longer_held_are_dropped():
    """The set of local ids stays within twice what the mempool holds (beyond a floor of 1,024)."""
    mempool = Mempool(ManualClock(now=NOW))
    first = [make_message(n, NOW + 1) for n in range(1, 1100)]
    for message in first:
        await mempool.submit([message])
    mempool.expire(NOW + 2)
    later = [make_message(n, NOW + 600) for n in range(2000, 3000)]
    for message in later:
        await mempool.submit([message])
    # Pruned when the set passed twice its size after the last pruning: only held ids are left.
    assert len(mempool._local) == len(mempool) == len(later)
    assert all(mempool.is_local(m.message_id) for m in later)
    assert not any(mempool.is_local(m.message_id) for m in first)
