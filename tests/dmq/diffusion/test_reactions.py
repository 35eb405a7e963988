"""The reaction table of docs/protocol/validation.md 6.2 at a running node, and nothing invalid relayed.

A scripted peer serves node X one message that fails one validation rule, with the real
serving peer over a list-backed source. The table says whether X drops the message and
keeps the connection (trace) or closes it (disconnect). Either way X never holds the
message, so its peer B, which receives everything X relays, never sees it: B neither holds
it nor rejected it (it was never even offered).
"""

from __future__ import annotations

import hashlib

import pytest
import trio

from miniprotocols.local_msg_submission import ACCEPTED
from miniprotocols.sig_submission import Side
from dmq.diffusion.sig_submission import ServingPeer
from ouroboros_mux.mux import Mode

from dmq.message import OperationalCertificate
from dmq.trace import ConnectionClosed, MessageRejected

from tests.miniprotocols.sig_submission.helpers import ListSigSource

from .conftest import UNKNOWN, UNSTAKED
from .network import NOW, Network, pool, submit, wait_until
from .rogue import Rogue

EXPIRES = int(NOW) + 900


def tampered_id():
    message = pool(1).sign(20, EXPIRES)
    other = hashlib.blake2b(b"not the payload", digest_size=32).digest()
    return message.raw[:3] + other + message.raw[35:]


def bad_cold_signature():
    p = pool(1)
    forged = OperationalCertificate(p.opcert.hot_vk, p.opcert.issue_number, p.opcert.start_kes_period, bytes(64))
    return type(p)(p.cold_sk, p.cold_vk, p.kes, forged).sign(21, EXPIRES).raw


async def counter_seen_at_2(x):
    """X learns that pool 2 is at opcert issue 2 (a local submission)."""
    assert await submit(x, [pool(2).with_opcert(2).sign(22, EXPIRES)]) == [ACCEPTED]


#: rule -> (the offending raw message, the reaction, what X must know first)
CASES = {
    "SigExpired": (lambda: pool(1).sign(10, int(NOW) - 1).raw, "trace", None),
    "SigExpiresAtTooFarInTheFuture": (lambda: pool(1).sign(11, int(NOW) + 1800).raw, "disconnect", None),
    "InvalidSigId": (tampered_id, "disconnect", None),
    "KESAfterEndOCERT": (lambda: pool(1).sign(12, EXPIRES, kes_period=62).raw, "disconnect", None),
    "KESBeforeStartOCERT": (lambda: pool(1).with_opcert(0, 5).sign(13, EXPIRES, kes_period=2, sign_period=0).raw,
                            "disconnect", None),
    "UnrecognizedPool": (lambda: pool(UNKNOWN).sign(14, EXPIRES).raw, "trace", None),
    "PoolNotEligible": (lambda: pool(UNSTAKED).sign(15, EXPIRES).raw, "trace", None),
    "InvalidOCertCounter": (lambda: pool(2).with_opcert(1).sign(16, EXPIRES).raw, "disconnect", counter_seen_at_2),
    "InvalidSignatureOCERT": (bad_cold_signature, "disconnect", None),
    "InvalidKESSignature": (lambda: pool(1).sign(17, EXPIRES, sign_period=1).raw, "disconnect", None),
}


def rejections_of(node, message_id: bytes) -> list[MessageRejected]:
    return [e for e in node.events if isinstance(e, MessageRejected) and e.message_id == message_id]


async def serve_to(x, rogue: Rogue, source: ListSigSource, nursery: trio.Nursery) -> None:
    d = rogue.dialect
    peer = ServingPeer(d, rogue.channel(Side.SERVING), source,
                       blocking_timeout=None if d.reply_no_ids is None else 1.0)

    async def run():
        try:
            await peer.run()
        except Exception:
            pass  # the node closing the connection ends the peer

    nursery.start_soon(run)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("rule", CASES)
async def test_each_rule_gets_its_reaction_and_nothing_invalid_is_relayed(pair, rule, version):
    build, reaction, prepare = CASES[rule]
    x, b = pair.x, pair.b
    if prepare is not None:
        await prepare(x)
    bad = build()
    bad_id = bad[3:35]
    source = ListSigSource([bad])
    async with Rogue(x.port, version) as rogue, trio.open_nursery() as nursery:
        await serve_to(x, rogue, source, nursery)
        await wait_until(lambda: rejections_of(x, bad_id), 5, what=f"X rejecting the {rule} message")
        rejected = rejections_of(x, bad_id)[0]
        assert rejected.reason.split(" ", 1)[0] == rule and rejected.reaction == reaction
        assert rejected.origin == rogue.label
        if reaction == "disconnect":
            await rogue.wait_closed()
            closed = [e for e in x.events if isinstance(e, ConnectionClosed) and e.peer == rogue.label]
            assert rule in closed[0].error
        else:
            # Dropped, connection kept: the next message on the same connection is accepted.
            marker = pool(8).sign(1000 + len(rule), EXPIRES)
            source.append(marker.raw)
            await wait_until(lambda: marker.message_id in x.held(), 5, what="the next message from the same peer")
            assert not rogue.ended.is_set()
        nursery.cancel_scope.cancel()
    # Whatever X relays reaches B; the bad message never did, and was never even offered to B.
    after = pool(9).sign(2000 + len(rule), EXPIRES)
    assert await submit(x, [after]) == [ACCEPTED]
    await wait_until(lambda: after.message_id in b.held(), 5, what="X's next message at B")
    assert bad_id not in x.held() and bad_id not in b.held()
    assert not rejections_of(b, bad_id)
    await pair.assert_healthy()


async def test_timing_errors_may_be_trace_only_by_configuration(stake_file, nursery):
    net = Network(nursery, stake_file)
    x = await net.start("x", config_overrides={"trace_only_reactions": True})
    too_far = pool(1).sign(30, int(NOW) + 1800).raw
    source = ListSigSource([too_far])
    async with Rogue(x.port, 2) as rogue, trio.open_nursery() as nursery:
        await serve_to(x, rogue, source, nursery)
        await wait_until(lambda: rejections_of(x, too_far[3:35]), 5, what="the rejection")
        assert rejections_of(x, too_far[3:35])[0].reaction == "trace"
        marker = pool(8).sign(31, EXPIRES)
        source.append(marker.raw)
        await wait_until(lambda: marker.message_id in x.held(), 5, what="the next message")
        assert not rogue.ended.is_set() and (11, Mode.INITIATOR) in rogue.channels
        nursery.cancel_scope.cancel()
