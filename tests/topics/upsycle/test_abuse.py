"""Every abuse and failure case of docs/topics-design.md 4.9, each with its reject reason.

After every reject the adapter store must be byte-identical to before (invariant C4).
"""

from __future__ import annotations

from topics.adapter import Defer, Origin
from topics.cbor import encode, head
from topics.upsycle.params import TAG, UpsycleParams
from topics.upsycle.timebase import minutes_to_posix
from topics.upsycle.wire import KIND_ROUTED, encode_advertisement, encode_envelope

from .harness import (
    NOW,
    advert_body,
    exp_minutes,
    key,
    multicast,
    pull_body,
    reissue_body,
    routed_body,
    unicast,
)


def _raw_routed(signer, kind: int, header_bytes: bytes, body: bytes, extra: list | None = None) -> bytes:
    """A routed message from hand-made header bytes, validly signed over what it carries."""
    preimage = encode(kind) + header_bytes + encode(body)
    parts = preimage + encode(signer.sign(preimage))
    count = 4 + len(extra or [])
    return head(4, count) + parts + b"".join(encode(e) for e in extra or [])


def _rejects(driver, body: bytes, reason: str, **offer) -> None:
    before = driver.store.snapshot()
    outcome = driver.offer(body, **offer)
    assert outcome.reason == reason, outcome.verdict
    assert driver.store.snapshot() == before


def test_bad_group_and_source_signatures(driver) -> None:
    group, other = key(1), key(2)
    forged = multicast(group)
    forged_raw = forged.raw[:-64] + other.sign(forged.signed_bytes)
    _rejects(driver, encode_envelope(KIND_ROUTED, forged_raw), "bad_signature")
    source = unicast(key(3), key(4).public)
    flipped = bytearray(source.raw)
    flipped[-70] ^= 1  # a bit of BODY
    _rejects(driver, encode_envelope(KIND_ROUTED, bytes(flipped)), "bad_signature")


def test_structural_cases_are_malformed(driver) -> None:
    group = key(1)
    exp = exp_minutes(NOW + 3600)
    good_header = {"grp": group.public, "ttl": 60, "exp": exp, "sn": []}
    via = _raw_routed(group, 1, encode(good_header), b"x", extra=[[key(5).public]])
    _rejects(driver, encode_envelope(KIND_ROUTED, via), "malformed")
    too_many_seen = _raw_routed(group, 1, encode({**good_header, "sn": [bytes([i]) * 32 for i in range(17)]}), b"x")
    _rejects(driver, encode_envelope(KIND_ROUTED, too_many_seen), "malformed")
    short_key = _raw_routed(group, 1, encode({**good_header, "grp": group.public[:31]}), b"x")
    _rejects(driver, encode_envelope(KIND_ROUTED, short_key), "malformed")
    for field in ("ttl", "exp"):
        wide = _raw_routed(group, 1, encode({**good_header, field: 2**32}), b"x")
        _rejects(driver, encode_envelope(KIND_ROUTED, wide), "malformed")


def test_non_deterministic_encoding_padding_and_size(driver) -> None:
    group = key(1)
    exp = exp_minutes(NOW + 3600)
    # Keys in insertion order (grp, ttl, exp, sn) instead of bytewise order of their encodings.
    unordered = head(5, 4) + b"".join(encode(k) + encode(v) for k, v in
                                      (("grp", group.public), ("ttl", 60), ("exp", exp), ("sn", [])))
    _rejects(driver, encode_envelope(KIND_ROUTED, _raw_routed(group, 1, unordered, b"x")), "non_canonical")
    # ttl in a four-byte head where one byte would do.
    wide_ttl = encode({"grp": group.public, "ttl": 60, "exp": exp, "sn": []}).replace(
        encode("ttl") + encode(60), encode("ttl") + b"\x1a\x00\x00\x00\x3c")
    _rejects(driver, encode_envelope(KIND_ROUTED, _raw_routed(group, 1, wide_ttl, b"x")), "non_canonical")
    # Needless padding on a body already over 90 bytes.
    message = multicast(group, b"y" * 80)
    padded = head(6, TAG) + head(4, 4) + encode(1) + encode(0) + message.raw + encode(b"\x00")
    _rejects(driver, padded, "non_canonical")
    # A routed message of 1941 bytes.
    base = len(multicast(group, b"").raw)
    big = multicast(group, b"z" * (1941 - base - 2))
    assert len(big.raw) == 1941
    _rejects(driver, routed_body(big), "too_large")
    fits = multicast(group, b"z" * (1940 - base - 2))
    assert driver.offer(routed_body(fits)).accepted


def test_time_cases(driver) -> None:
    group = key(1)
    past = multicast(group, exp=exp_minutes(NOW - 120))
    _rejects(driver, routed_body(past), "inner_expired", expires_at=NOW + 60)
    soon = multicast(group, exp=exp_minutes(NOW + 300))
    _rejects(driver, routed_body(soon), "expiry_exceeds_inner", expires_at=minutes_to_posix(soon.exp) + 1)
    short = multicast(group, ttl=60)
    params = UpsycleParams()
    bound = NOW + max(60, params.lifetime_floor) + params.skew
    _rejects(driver, routed_body(short), "expiry_exceeds_bound", expires_at=bound + 1)
    assert driver.offer(routed_body(short), expires_at=bound).accepted


def test_same_inner_message_wrapped_again(driver) -> None:
    member, group = key(2), key(1)
    driver.join(member, group)
    message = multicast(group)
    assert driver.offer(routed_body(message), pool=1).accepted
    _rejects(driver, routed_body(message), "duplicate_inner", pool=2)
    assert [item.body[1][2] for item in driver.read(member)] == [message.id]


def test_answers_without_request_or_beyond_quota(driver) -> None:
    group, other = key(1), key(9)
    wanted = multicast(group, b"wanted")
    unrequested = multicast(group, b"not asked for")
    foreign = multicast(other, b"other group")
    outcome = driver.offer(reissue_body(bytes(32), wanted))
    assert isinstance(outcome.verdict, Defer) and outcome.verdict.missing == {bytes(32)}
    request = driver.offer(pull_body(group.public, [wanted.id, foreign.id]), pool=3)
    assert request.accepted
    _rejects(driver, reissue_body(request.dmq_id, unrequested), "unsolicited")
    _rejects(driver, reissue_body(request.dmq_id, foreign), "unsolicited")
    assert driver.offer(reissue_body(request.dmq_id, wanted), pool=4).accepted
    assert driver.offer(reissue_body(request.dmq_id, wanted), pool=5).accepted
    _rejects(driver, reissue_body(request.dmq_id, wanted), "answer_quota", pool=6)
    driver.clock.advance(UpsycleParams().request_lifetime + 1)
    later = multicast(group, b"later")
    second = driver.offer(pull_body(group.public, [later.id]), pool=3)
    driver.clock.advance(UpsycleParams().request_lifetime + 1)
    _rejects(driver, reissue_body(second.dmq_id, later), "unsolicited")


def test_pull_request_limits(driver) -> None:
    group = key(1)
    ids = [bytes([i]) * 32 for i in range(9)]
    _rejects(driver, pull_body(group.public, ids), "malformed")
    _rejects(driver, pull_body(group.public, [ids[0], ids[0]]), "malformed")
    for n in range(UpsycleParams().requests_per_window):
        assert driver.offer(pull_body(group.public, [ids[n]]), pool=2).accepted
    _rejects(driver, pull_body(group.public, [ids[8]]), "rate_limited", pool=2)
    assert driver.offer(pull_body(group.public, [ids[8]]), pool=3).accepted


def test_older_and_conflicting_advertisements(driver) -> None:
    peer = key(7)
    exp = exp_minutes(NOW + 86400)

    def ad(rev: int, port: int = 3001) -> bytes:
        return advert_body(encode_advertisement(peer.sign, peer.public, (1, b"\x7f\x00\x00\x01", port), {},
                                                [], rev, 600, exp).raw)

    assert driver.offer(ad(5)).accepted
    _rejects(driver, ad(4), "stale")
    _rejects(driver, ad(5, port=3002), "conflict")
    _rejects(driver, ad(5), "duplicate_inner")
    signed = ad(6)
    forged = bytearray(signed)
    forged[signed.index(b"csig") + 10] ^= 1
    _rejects(driver, bytes(forged), "bad_signature")
    assert driver.offer(ad(6)).accepted


def test_unicast_from_a_service_not_permitted(make_driver) -> None:
    allowed, stranger = key(1), key(2)
    driver = make_driver(services=[allowed.public])
    _rejects(driver, routed_body(unicast(stranger, key(3).public)), "not_authorized", origin=Origin.OWN)
    assert driver.offer(routed_body(unicast(allowed, key(3).public)), origin=Origin.OWN).accepted
    # From the network the allow-list does not apply: it restricts local publishers only.
    assert driver.offer(routed_body(unicast(stranger, key(3).public, b"net"))).accepted


def test_join_with_bad_or_old_auth(driver) -> None:
    member, group, other = key(2), key(1), key(3)
    with driver.store.write() as txn:
        old = driver.adapter.join(txn, member.public, group.public, False,
                                  member.auth("join", group.public, driver.now - 121), driver.now)
        forged = driver.adapter.join(txn, member.public, group.public, False,
                                     other.auth("join", group.public, driver.now), driver.now)
        wrong_op = driver.adapter.join(txn, member.public, group.public, False,
                                       member.auth("leave", group.public, driver.now), driver.now)
    for ack in (old, forged, wrong_op):
        assert (ack.result, int(ack.detail)) == (1, 1)
    assert driver.join(member, group).ok
    assert (lambda a: (a.result, int(a.detail)))(driver.leave(member, other)) == (1, 3)


def test_queue_flood_drops_oldest_with_a_notice(make_driver) -> None:
    driver = make_driver(params=UpsycleParams(queue_max_items=10))
    member, group = key(2), key(1)
    driver.join(member, group)
    messages = [multicast(group, f"m{i}".encode()) for i in range(15)]
    for message in messages:
        assert driver.offer(routed_body(message)).accepted
    items = driver.read(member)
    assert len(items) <= 10
    dropped = [item.body[1] for item in items if item.body[0] == 4]
    kept = [item.body[1][2] for item in items if item.body[0] == 0]
    assert kept == [m.id for m in messages[-len(kept):]]
    assert sum(dropped) == len(messages) - len(kept)
