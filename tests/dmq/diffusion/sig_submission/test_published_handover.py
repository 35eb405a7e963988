"""A parked request answered from the entries a publish hands over, against one answered by a read.

``Mempool.call_on_publish`` hands every parked serving peer the newly visible entries, read
once for all of them, so a peer that had read everything before needs no read of its own.
That must announce exactly what a read of the source would: the same ids in the same
replies, with known ids left out, expired ones skipped and bursts larger than the request
cut to it. Real components: the node's mempool behind its ``MempoolSigSource``, the serving
peer run from a real mux's reader, a scripted pulling side on the other mux.
"""

from __future__ import annotations

import trio
import trio.testing

from dmq.clock import ManualClock
from dmq.diffusion.mempool_source import MempoolSigSource
from dmq.diffusion.sig_submission import KnownHeld
from dmq.mempool import Mempool
from miniprotocols import sig_submission_v2

from .test_known_held import Message, Scripted, ids_of, msg

NOW = 1_800_000_000.0


class _ReadingSource:
    """The same mempool, but its publish hands nothing over: the serving peer reads (the general path)."""

    def __init__(self, source: MempoolSigSource) -> None:
        self._source = source
        self.lookup = source.lookup
        self.index_of = source.index_of
        self.wait_for_ids_after = source.wait_for_ids_after
        self.checked_items = source.checked_items

    def ids_after(self, position: int, limit: int):
        return self._source.ids_after(position, limit)

    def call_on_publish(self, callback) -> None:
        self._source.call_on_publish(lambda published: callback())


def _counting(source):
    reads = []
    ids_after = source.ids_after

    def counted(position: int, limit: int):
        reads.append(position)
        return ids_after(position, limit)

    source.ids_after = counted
    return reads


async def _announced(dialect, nursery, hand_over: bool) -> tuple[list[list[bytes]], int, int]:
    clock = ManualClock(NOW)
    mempool = Mempool(clock)
    known = KnownHeld()
    source = MempoolSigSource(mempool)
    served = source if hand_over else _ReadingSource(source)
    reads = _counting(served)
    peer = Scripted(dialect, nursery, served, known=known)
    await peer.start()
    expired = Message(msg(900).message_id, int(NOW) - 1, msg(900).raw)
    # What each publish makes visible, and which of its ids the peer announced to us first.
    publishes = [
        ([msg(1)], []),
        ([msg(2), msg(3)], [msg(2)]),
        ([msg(4)], [msg(4)]),                         # all known: the request stays parked
        ([msg(n) for n in range(5, 12)], [msg(6)]),   # a burst larger than the request
        ([expired, msg(12)], []),                     # an expired entry is never announced
        ([msg(13), msg(14)], [msg(13), msg(14)]),     # all known again
        ([msg(15)], []),
    ]
    replies: list[list[bytes]] = []  # an empty one: the publish left the request parked
    unacked, parked = 0, False
    for entries, held in publishes:
        if not parked:
            await peer.ask(True, unacked, 3)
            unacked, parked = 0, True
            assert await peer.nothing_yet()
        known.add([m.message_id for m in held])
        mempool.append(entries)
        await trio.testing.wait_all_tasks_blocked()
        reply = peer.driver.recv_nowait()
        if reply is None:
            replies.append([])
            continue
        parked = False
        replies.append(ids_of(reply))
        unacked = len(reply.ids)
        while mempool.ids_after(peer.serving.window.position, 1):  # what a burst left: the next request
            await peer.ask(False, 0, 3)
            reply = await peer.reply()
            replies.append(ids_of(reply))
            unacked += len(reply.ids)
    assert peer.failure is None
    return replies, len(reads), peer.serving.window.position


async def test_a_publish_handed_over_announces_what_a_read_would(dialect, nursery, autojump_clock):
    read = await _announced(dialect, nursery, hand_over=False)
    handed = await _announced(dialect, nursery, hand_over=True)
    assert handed[0] == read[0] and handed[2] == read[2]
    number = {msg(n).message_id: n for n in range(1, 16)}
    # A request reads up to 3 entries and leaves out the known among them (so a burst's first
    # reply has 2 ids), and a publish of known ids only leaves it parked.
    assert [[number[i] for i in ids] for ids in read[0]] == [[1], [3], [], [5, 7], [8, 9, 10], [11], [12], [], [15]]
    assert handed[1] < read[1]  # and it read the source less often


async def test_a_request_parked_again_after_a_v2_timeout_is_answered_once(nursery, autojump_clock):
    """A V2 blocking request that timed out leaves its publish hook behind: the next parked
    request must not be answered twice from one publish, nor fed entries its position passed."""
    dialect = sig_submission_v2.DIALECT
    mempool = Mempool(ManualClock(NOW))
    known = KnownHeld()
    peer = Scripted(dialect, nursery, MempoolSigSource(mempool), known=known, blocking_timeout=17)
    await peer.start()
    for round_ in range(3):
        await peer.ask(True, 0, 3)
        assert await peer.nothing_yet()
        held = [msg(10 * round_ + n) for n in range(2)]
        known.add([m.message_id for m in held])
        mempool.append(held)  # every new id known: the request stays parked ...
        assert await peer.nothing_yet()
        await trio.sleep(18)  # ... until the V2 timeout answers it with no ids
        got = peer.driver.recv_nowait()
        assert isinstance(got, dialect.reply_no_ids), (round_, got, peer.failure)
    await peer.ask(True, 0, 3)
    assert await peer.nothing_yet()
    known.add([msg(100).message_id])
    mempool.append([msg(100), msg(101)])
    reply = await peer.reply()
    assert ids_of(reply) == [msg(101).message_id]
    await trio.testing.wait_all_tasks_blocked()
    assert peer.failure is None
