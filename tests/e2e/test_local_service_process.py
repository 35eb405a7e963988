"""The local service of a real ``dmq-node`` process, seen from its Unix socket.

Each test starts the node program with the reference's flags and a configuration file on
the conformance devnet (genesis stake, DMQ magic 2147483690, LMDB database), and speaks to
it with the raw bytes a Pallas client sends; every reply is checked byte for byte.
Expected reject replies are encoded with cbor2 (an independent encoder) from the Haskell
``show`` texts written out here.
"""

from __future__ import annotations

import json
import re
import time

import cbor2
import trio

from tests.e2e.messages import (
    DMQ_DEVNET_MAGIC as MAGIC,
    foreign_cold_signature,
    generated_signer,
    now_s,
    staked_pools,
    with_cold_signature,
    with_kes_signature,
    with_message_id,
)
from tests.e2e.raw_n2c import (
    ACCEPT,
    REJECT_ALREADY_RECEIVED,
    REJECT_EXPIRED,
    RawN2CClient,
    accept_version,
    blocking_reply,
    non_blocking_reply,
    publish_like_mithril_signer,
)


def invalid(text: str) -> bytes:
    """``MsgRejectMessage (SigValidationError text)``: ``[2, [0, text]]``."""
    return cbor2.dumps([2, [0, text]])


async def subscriber(node) -> RawN2CClient:
    client = await RawN2CClient.connect(node.socket_path)
    assert await client.handshake(MAGIC) == accept_version(MAGIC)
    return client


async def test_publish_then_subscribe_and_a_late_subscriber_gets_the_history(start_node, signers):
    node = start_node()
    first = signers[0].sign()
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, first.raw) == ACCEPT

    async with await subscriber(node) as aggregator:
        assert await aggregator.request(blocking=True) == blocking_reply([first.raw])
        # The next blocking request waits for the next accepted message.
        second = signers[1].sign()
        replies: list[bytes] = []
        async with trio.open_nursery() as nursery:
            async def wait_for_next() -> None:
                replies.append(await aggregator.request(blocking=True))

            nursery.start_soon(wait_for_next)
            await trio.sleep(0.3)
            assert replies == []
            assert await publish_like_mithril_signer(node.socket_path, MAGIC, second.raw) == ACCEPT
        assert replies == [blocking_reply([second.raw])]

    # A subscriber that connects afterwards first gets everything held, in order.
    async with await subscriber(node) as late:
        assert await late.request(blocking=False) == non_blocking_reply([first.raw, second.raw], False)
        assert await late.request(blocking=False) == bytes.fromhex("83019ffff4")


async def test_every_reject_reason_has_the_reference_bytes(start_node, signers):
    """Each reply of the node to a bad submission, on ONE connection that stays usable.

    ``[3, text]`` (``SigResultOther``) is absent on purpose: validation never produces it, in
    the reference or here; it exists only so that every reference reply can be represented.
    """
    node = start_node()
    pool0, pool1 = signers
    stranger = generated_signer(7)
    late_starter = generated_signer(8, start_kes_period=5)
    accepted = pool0.sign()
    other = pool1.sign()
    sibling = pool1.sign()  # same key and period as ``other``: its signature is well-formed there

    cases = [
        (accepted.raw, ACCEPT),
        (accepted.raw, REJECT_ALREADY_RECEIVED),
        (pool1.sign(expires_at=now_s() - 10).raw, REJECT_EXPIRED),
        (pool1.sign(expires_in=1900).raw, invalid("SigExpiresAtTooFarInTheFuture")),
        (with_message_id(other, bytes(32)), bytes.fromhex("820282006c496e76616c69645369674964")),
        (pool1.sign(kes_period=70, sign_period=0).raw, invalid("KESAfterEndOCERT (KESPeriod 60) (KESPeriod 70)")),
        (late_starter.sign(kes_period=2, sign_period=0).raw, invalid("KESBeforeStartOCERT (KESPeriod 5) (KESPeriod 2)")),
        (stranger.sign().raw, invalid("UnrecognizedPool")),
        (with_cold_signature(other, foreign_cold_signature(other.opcert)),
         invalid('InvalidSignatureOCERT 0 (KESPeriod 0) "Verification failed"')),
        (pool1.sign(kes_period=3, sign_period=0).raw, invalid('InvalidKESSignature (KESPeriod 0) (KESPeriod 3) "Reject"')),
        (with_kes_signature(other, sibling.kes_signature),
         invalid('InvalidKESSignature (KESPeriod 0) (KESPeriod 0) "Verification failed"')),
        (other.raw, ACCEPT),
    ]
    async with await subscriber(node) as client:
        for raw, expected in cases:
            assert (await client.submit(raw)).hex() == expected.hex()
        # The rate limit: another message of pool 0 within 60 s of its accepted one.
        reply = await client.submit(pool0.sign().raw)
        assert reply[:4] == bytes.fromhex("82028200")
        assert cbor2.loads(reply)[:1] == [2]
        text = cbor2.loads(reply)[1][1]
        assert re.fullmatch(r'SigTooFrequent \(KeyHash \{unKeyHash = "%s"\}\) \d+(\.\d+)?s' % pool0.pool_id.hex(),
                            text), text
        assert reply == invalid(text)
        # Only the two accepted messages are held, as their received bytes.
        assert await client.request(blocking=False) == non_blocking_reply([accepted.raw, other.raw], False)


async def test_pool_eligibility_and_opcert_counter_rejects(start_node, tmp_path):
    """The two reasons that need a stake map the genesis cannot express (a pool with zero set
    stake) or a pool whose cold key the test holds (a second, lower opcert). The node reads a
    JSON stake file; ``--min-sig-delay 0`` (a devnet setting) lets one pool publish twice.
    ``NotInitialized`` needs a node still waiting for its first stake query, which neither a
    genesis nor a stake file can be: it is covered by the validation unit tests."""
    pools = staked_pools()
    staked_v1, staked_v0, unstaked = pools.staked, pools.staked_lower_counter, pools.unstaked
    (tmp_path / "node").mkdir()
    (tmp_path / "node" / "stake.json").write_text(json.dumps(pools.stake_file()))
    node = start_node(StakeSource="stake.json", flags=("--min-sig-delay", "0"))
    async with await subscriber(node) as client:
        assert await client.submit(unstaked.sign().raw) == invalid("PoolNotEligible")
        assert await client.submit(staked_v1.sign().raw) == ACCEPT
        assert await client.submit(staked_v0.sign().raw) == invalid("InvalidOCertCounter 1 0")
        assert await client.submit(staked_v1.sign().raw) == ACCEPT


async def test_messages_expire_on_the_real_clock(start_node, signers):
    node = start_node()
    short = signers[0].sign(expires_in=3)
    long = signers[1].sign(expires_in=1700)
    for message in (short, long):
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT
    async with await subscriber(node) as early:
        assert await early.request(blocking=False) == non_blocking_reply([short.raw, long.raw], False)

    deadline = time.time() + 8
    while time.time() <= short.expires_at:
        await trio.sleep(0.1)
    while True:
        async with await subscriber(node) as later:
            reply = await later.request(blocking=False)
        if reply == non_blocking_reply([long.raw], False) or time.time() > deadline:
            break
        await trio.sleep(0.1)
    assert reply == non_blocking_reply([long.raw], False)
    # Notification skips an expired message at once; the duplicate set lets go of it when the
    # expiry loop purges it (docs/protocol/validation.md 6.10), which the node traces. On a loaded machine that
    # loop may run late, so wait for its trace rather than for a fixed time.
    def expired_ids() -> set[str]:
        return {event["message_id"] for event in node.trace_events("MessageExpired")}

    while short.message_id.hex() not in expired_ids() and time.time() <= deadline + 30:
        await trio.sleep(0.1)
    assert expired_ids() == {short.message_id.hex()}
    # Gone from the duplicate set too: the same bytes are now simply expired.
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, short.raw) == REJECT_EXPIRED
    assert await publish_like_mithril_signer(node.socket_path, MAGIC, long.raw) == REJECT_ALREADY_RECEIVED



async def test_submission_starts_again_on_the_same_connection_after_msg_done(start_node, signers):
    """After MsgDone on 14 a client may submit again on the same connection: the node starts
    a new submission server on demand, as the reference's inbound governor restarts a
    responder after a clean finish (docs/protocol/mux.md 2.3)."""
    node = start_node()
    first, second = signers[0].sign(), signers[1].sign()
    async with await subscriber(node) as client:
        with trio.fail_after(10):  # a protocol not started again leaves the submission unanswered
            assert await client.submit(first.raw) == ACCEPT
            await client.submission_done()
            assert await client.submit(second.raw) == ACCEPT
            await client.submission_done()
            assert await client.submit(first.raw) == REJECT_ALREADY_RECEIVED
            # Both protocols finished: the connection stays open for the client, as the reference's.
            await client.submission_done()
            assert await client.request(blocking=False) == non_blocking_reply([first.raw, second.raw], False)
            await client.notification_done()
            await trio.sleep(0.2)
            assert await client.request(blocking=False) == non_blocking_reply([first.raw, second.raw], False)


async def test_notification_starts_again_on_the_same_connection_from_the_start(start_node, signers):
    """After MsgClientDone on 15 a client may ask again on the same connection. The new
    instance is a new server whose cursor begins at the start of the mempool, as the
    reference's server begins every instance at the mempool's first index."""
    node = start_node()
    first, second = signers[0].sign(), signers[1].sign()
    for message in (first, second):
        assert await publish_like_mithril_signer(node.socket_path, MAGIC, message.raw) == ACCEPT
    async with await subscriber(node) as client:
        with trio.fail_after(10):  # a protocol not started again leaves the request unanswered
            assert await client.request(blocking=False) == non_blocking_reply([first.raw, second.raw], False)
            assert await client.request(blocking=False) == non_blocking_reply([], False)
            await client.notification_done()
            assert await client.request(blocking=False) == non_blocking_reply([first.raw, second.raw], False)
            await client.notification_done()
            assert await client.request(blocking=True) == blocking_reply([first.raw, second.raw])


async def test_legacy_reject_text_answers_legacy_messages_with_a_bare_text(start_node, signers):
    """``LegacyRejectText``: ``[2, tstr]`` for a legacy-format message (what pallas 0.34 reads),
    the structured reason still for a current-format one, on the same connection."""
    node = start_node(LegacyMessageFormat=True, LegacyRejectText=True, flags=("--min-sig-delay", "0"))
    legacy = signers[0].sign(legacy=True)
    current = signers[1].sign()
    async with await subscriber(node) as client:
        assert await client.submit(legacy.raw) == ACCEPT
        assert await client.submit(current.raw) == ACCEPT
        assert await client.submit(legacy.raw) == cbor2.dumps([2, "SigDuplicate"])
        assert await client.submit(current.raw) == REJECT_ALREADY_RECEIVED
        assert await client.submit(signers[0].sign(legacy=True, expires_at=now_s() - 10).raw) == cbor2.dumps(
            [2, "SigExpired"])
        assert await client.submit(signers[0].sign(legacy=True, kes_period=3, sign_period=0).raw) == cbor2.dumps(
            [2, 'InvalidKESSignature (KESPeriod 0) (KESPeriod 3) "Reject"'])
