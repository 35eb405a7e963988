"""A real ``dmq-node`` process driven by pallas-network's own clients, as Mithril drives it.

The harness (``tests/interop/pallas``) is built against each pallas-network release line
Mithril has shipped: 1.x (current layout; Mithril ``unstable``), 0.35 (legacy layout,
structured reject reasons; Mithril 2617.0) and 0.34 (legacy layout, reject reason as bare
text; Mithril 2603.x). Its signer publishes the way ``DmqPublisherClientPallas`` does (one
``DmqClient`` connection per message) and reports the verdict as pallas decoded it; its
aggregator consumes the way ``DmqConsumerClientPallas`` does (one cached connection,
blocking requests, a new connection after any error, de-duplication by body) and reports
every message pallas decoded, with pallas's own encoding of it. Nodes of the legacy lines
run with ``LegacyMessageFormat``, the only way such clients can publish at all.

Messages are signed with the devnet's real KES keys (``tests/e2e/messages.py``).
"""

from __future__ import annotations

import json
import signal

import pytest

from tests.e2e.messages import (
    DMQ_DEVNET_MAGIC as MAGIC,
    Signer,
    foreign_cold_signature,
    generated_signer,
    now_s,
    staked_pools,
    with_cold_signature,
    with_kes_signature,
    with_message_id,
)
from tests.interop.pallas_harness import LEGACY_VERSIONS, PALLAS_VERSIONS, HarnessProcess, run_signer, run_signers

pytestmark = pytest.mark.interop


@pytest.fixture(params=PALLAS_VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return request.param


def legacy(version: str) -> bool:
    return version in LEGACY_VERSIONS


def node_config(version: str, **config):
    """Legacy clients need ``LegacyMessageFormat``; 0.34 ones also ``LegacyRejectText`` to read
    rejects (without it they fail to decode every reject: see the test below)."""
    if version == "0.34":
        return {"LegacyMessageFormat": True, "LegacyRejectText": True, **config}
    return {"LegacyMessageFormat": True, **config} if legacy(version) else config


def invalid(version: str, text: str) -> dict:
    """How pallas ``version`` reads the node's reject for a validation error shown as ``text``."""
    kind = "text" if version == "0.34" else "invalid"
    return {"verdict": "rejected", "reason": {"kind": kind, "text": text}, "done_error": None}


def verdicts(version: str) -> dict[str, dict]:
    def rejected(kind: str, constructor: str) -> dict:
        reason = {"kind": "text", "text": constructor} if version == "0.34" else {"kind": kind}
        return {"verdict": "rejected", "reason": reason, "done_error": None}
    return {"accepted": {"verdict": "accepted", "done_error": None},
            "already-received": rejected("already-received", "SigDuplicate"),
            "expired": rejected("expired", "SigExpired")}


def outcome(result: dict) -> dict:
    """The part of a signer result a test states: the verdict, or the stage that failed."""
    if "error" in result:
        return {"error": result["error"]}
    return {key: result[key] for key in ("verdict", "reason", "done_error") if key in result}


def aggregator(program, version: str, node, *args: str) -> HarnessProcess:
    return HarnessProcess(program, version, "aggregator", "--socket", str(node.socket_path), "--magic", str(MAGIC),
                          *args)


def test_every_verdict_decodes_in_pallas_to_its_value(pallas_harness, version, start_node, signers):
    node = start_node(**node_config(version))
    is_legacy = legacy(version)
    pool0, pool1 = signers
    stranger = generated_signer(7)
    late_starter = generated_signer(8, start_kes_period=5)

    def sign(signer: Signer, **kwargs):
        return signer.sign(legacy=is_legacy, **kwargs)

    accepted = sign(pool0)
    other = sign(pool1)
    sibling = sign(pool1)
    expected = verdicts(version)
    cases = [
        (accepted.raw, expected["accepted"]),
        (accepted.raw, expected["already-received"]),
        (sign(pool1, expires_at=now_s() - 10).raw, expected["expired"]),
        (sign(pool1, expires_in=1900).raw, invalid(version, "SigExpiresAtTooFarInTheFuture")),
        (sign(pool1, kes_period=70, sign_period=0).raw, invalid(version, "KESAfterEndOCERT (KESPeriod 60) (KESPeriod 70)")),
        (sign(late_starter, kes_period=2, sign_period=0).raw,
         invalid(version, "KESBeforeStartOCERT (KESPeriod 5) (KESPeriod 2)")),
        (sign(stranger).raw, invalid(version, "UnrecognizedPool")),
        (sign(pool1, kes_period=3, sign_period=0).raw,
         invalid(version, 'InvalidKESSignature (KESPeriod 0) (KESPeriod 3) "Reject"')),
    ]
    if not is_legacy:  # these three rewrite a field of the current layout
        cases += [
            (with_message_id(other, bytes(32)), invalid(version, "InvalidSigId")),
            (with_cold_signature(other, foreign_cold_signature(other.opcert)),
             invalid(version, 'InvalidSignatureOCERT 0 (KESPeriod 0) "Verification failed"')),
            (with_kes_signature(other, sibling.kes_signature),
             invalid(version, 'InvalidKESSignature (KESPeriod 0) (KESPeriod 0) "Verification failed"')),
        ]
    cases.append((other.raw, expected["accepted"]))
    results = run_signer(pallas_harness, version, node.socket_path, MAGIC, [raw for raw, _ in cases])
    assert [outcome(result) for result in results] == [want for _, want in cases]
    # What pallas put on the wire is, byte for byte, the message it was given.
    assert [result["sent"] for result in results] == [raw.hex() for raw, _ in cases]
    # The rate limit: a second message of pool 0 within 60 s.
    [too_frequent] = run_signer(pallas_harness, version, node.socket_path, MAGIC, [sign(pool0).raw])
    assert too_frequent["reason"]["kind"] == invalid(version, "")["reason"]["kind"]
    assert too_frequent["reason"]["text"].startswith(f'SigTooFrequent (KeyHash {{unKeyHash = "{pool0.pool_id.hex()}"}}) ')


@pytest.mark.parametrize("legacy_reject_text", [False, True])
def test_each_legacy_line_reads_rejects_only_in_its_own_shape(pallas_harness, start_node, signers, legacy_reject_text):
    """pallas 0.34 and 0.35 send identical bytes and differ only in the reject they decode, so
    ``LegacyRejectText`` chooses which of them reads a legacy message's reject; the other
    fails to decode it. Clients of the current layout get the structured reason either way."""
    node = start_node(LegacyMessageFormat=True, LegacyRejectText=legacy_reject_text)
    pool0, pool1 = signers
    old = pool0.sign(legacy=True)
    current = pool1.sign()
    for raws in ([old.raw], [current.raw]):
        [first] = run_signer(pallas_harness, "1" if raws == [current.raw] else "0.35", node.socket_path, MAGIC, raws)
        assert first["verdict"] == "accepted"
    read = {version: outcome(run_signer(pallas_harness, version, node.socket_path, MAGIC, [old.raw])[0])
            for version in ("0.34", "0.35")}
    readable = "0.34" if legacy_reject_text else "0.35"
    unreadable = "0.35" if legacy_reject_text else "0.34"
    assert read[readable] == verdicts(readable)["already-received"]
    assert read[unreadable] == {"error": "verdict"}
    [again] = run_signer(pallas_harness, "1", node.socket_path, MAGIC, [current.raw])
    assert outcome(again) == verdicts("1")["already-received"]


def test_stake_dependent_rejects_decode_in_pallas(pallas_harness, version, start_node, tmp_path):
    """``PoolNotEligible`` and ``InvalidOCertCounter`` need a stake file (see the e2e test)."""
    pools = staked_pools()
    (tmp_path / "node").mkdir()
    (tmp_path / "node" / "stake.json").write_text(json.dumps(pools.stake_file()))
    node = start_node(flags=("--min-sig-delay", "0"), **node_config(version, StakeSource="stake.json"))
    is_legacy = legacy(version)
    raws = [pools.unstaked.sign(legacy=is_legacy).raw, pools.staked.sign(legacy=is_legacy).raw,
            pools.staked_lower_counter.sign(legacy=is_legacy).raw]
    results = run_signer(pallas_harness, version, node.socket_path, MAGIC, raws)
    assert [outcome(result) for result in results] == [
        invalid(version, "PoolNotEligible"), verdicts(version)["accepted"], invalid(version, "InvalidOCertCounter 1 0")]


@pytest.mark.parametrize("mode", ["blocking", "non-blocking"])
def test_notification_replays_history_then_follows_live_traffic(pallas_harness, version, mode, start_node, signers):
    node = start_node(flags=("--min-sig-delay", "0"), **node_config(version))
    history = [signers[i % 2].sign(legacy=legacy(version)) for i in range(3)]
    assert [r["verdict"] for r in run_signer(pallas_harness, version, node.socket_path, MAGIC,
                                             [m.raw for m in history])] == ["accepted"] * 3
    # No de-duplication: every copy the node sends is reported.
    with aggregator(pallas_harness, version, node, "--mode", mode, "--dedupe", "off") as consumer:
        replayed = consumer.wait_for(lambda e: e["event"] == "message", count=3)
        assert [event["cbor"] for event in replayed] == [m.raw.hex() for m in history]
        first = history[0]
        assert {key: replayed[0][key] for key in ("layout", "msg_id", "body", "kes_period", "expires_at",
                                                  "kes_signature", "cold_vk")} == {
            "layout": "legacy" if legacy(version) else "current", "msg_id": first.message_id.hex(),
            "body": first.body.hex(), "kes_period": first.kes_period, "expires_at": first.expires_at,
            "kes_signature": first.kes_signature.hex(), "cold_vk": first.cold_vk.hex()}
        assert replayed[0]["opcert"] == {
            "kes_vk": first.opcert.hot_vk.hex(), "issue_number": first.opcert.issue_number,
            "start_kes_period": first.opcert.start_kes_period, "cert_sig": first.opcert.cold_signature.hex()}
        live = [signers[i % 2].sign(legacy=legacy(version)) for i in range(2)]
        for message in live:
            [result] = run_signer(pallas_harness, version, node.socket_path, MAGIC, [message.raw])
            assert result["verdict"] == "accepted"
        followed = consumer.wait_for(lambda e: e["event"] == "message", count=5)[3:]
        assert [event["cbor"] for event in followed] == [m.raw.hex() for m in live]
        assert {event["connection"] for event in consumer.of_kind("message")} == {1}
        assert consumer.of_kind("error") == []


def test_a_thousand_messages_arrive_once_each(pallas_harness, start_node, signers):
    """1,000 messages published while a Mithril-style aggregator listens: none lost, none twice.
    Eight signers publish at once, each on one connection (a connection per message would
    spend the time on handshakes, which the other tests cover); the node notifies in the
    order it accepted, so each signer's messages arrive in that signer's order."""
    version = "1"
    node = start_node(flags=("--min-sig-delay", "0"))
    messages = [signers[i % 2].sign().raw.hex() for i in range(1000)]
    streams = [messages[start::8] for start in range(8)]
    with aggregator(pallas_harness, version, node, "--dedupe", "off", "--expect", "1000") as consumer:
        consumer.wait_for(lambda e: e["event"] == "connected")
        results = run_signers(pallas_harness, version, node.socket_path, MAGIC,
                              [[bytes.fromhex(raw) for raw in stream] for stream in streams])
        assert [[r["verdict"] for r in stream] for stream in results] == [["accepted"] * len(s) for s in streams]
        received = [event["cbor"] for event in consumer.wait_for(lambda e: e["event"] == "message", count=1000)]
        consumer.wait_for(lambda e: e["event"] == "done")
    assert len(set(received)) == 1000 and set(received) == set(messages)
    for stream in streams:
        members = set(stream)
        assert [raw for raw in received if raw in members] == stream
    assert consumer.of_kind("error") == []


def test_sigkill_and_restart_the_consumer_reconnects_and_misses_nothing(pallas_harness, version, start_node, signers):
    node = start_node(flags=("--min-sig-delay", "0"), **node_config(version))
    before = [signers[i % 2].sign(legacy=legacy(version)) for i in range(20)]
    after = [signers[i % 2].sign(legacy=legacy(version)) for i in range(20)]
    with aggregator(pallas_harness, version, node, "--reconnect-ms", "50") as consumer:
        assert [r["verdict"] for r in run_signer(pallas_harness, version, node.socket_path, MAGIC,
                                                 [m.raw for m in before])] == ["accepted"] * 20
        consumer.wait_for(lambda e: e["event"] == "message", count=20)
        node.kill(signal.SIGKILL)
        consumer.wait_for(lambda e: e["event"] == "error")
        node.start()
        assert [r["verdict"] for r in run_signer(pallas_harness, version, node.socket_path, MAGIC,
                                                 [m.raw for m in after])] == ["accepted"] * 20
        received = consumer.wait_for(lambda e: e["event"] == "message", count=40)
        # The new connection was first served the whole durable store again (the
        # de-duplication absorbed the copies).
        reconnected = max(event["connection"] for event in consumer.of_kind("connected"))
        assert reconnected >= 2
        # The harness reports a reply after the messages it brought: the 40th message may be read
        # before the reply that carried it.
        first_reply = consumer.wait_for(lambda e: e["event"] == "reply" and e["connection"] == reconnected)[0]
        assert first_reply["messages"] >= 20
    assert [event["cbor"] for event in received] == [m.raw.hex() for m in before + after]
