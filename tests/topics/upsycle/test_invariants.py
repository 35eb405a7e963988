"""The UPSYCLE invariants U1 to U7 of docs/topics-design.md 4.8 as hypothesis properties.

Every example runs the adapter on a fresh LMDB directory in simulated time, with DMQ
messages signed by real test pools; models below are plain lists and sets.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path

import blake3
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from topics.cbor import decode, encode
from topics.upsycle.errors import UpsycleReject
from topics.upsycle.params import UpsycleParams
from topics.upsycle.timebase import UINT32_MAX, minutes_to_posix, wrap_expires_at
from topics.upsycle.wire import decode_routed, encode_multicast, encode_unicast

from .harness import NOW, Driver, advert_body, exp_minutes, inner_ids, key, multicast, pull_body, reissue_body, routed_body

PROPS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PARAMS = UpsycleParams()


@contextmanager
def fresh(**adapter_args):
    with tempfile.TemporaryDirectory() as directory:
        driver = Driver(Path(directory) / "node", **adapter_args)
        try:
            yield driver
        finally:
            driver.close()


# -- U1 ids, signatures, encoding -------------------------------------------------------------

routed_messages = st.builds(
    lambda kind, n, body, ttl, exp, seen: (
        encode_multicast(key(n).sign, key(n).public, ttl, exp, body, seen) if kind
        else encode_unicast(key(n).sign, key(n).public, key(n + 1).public, ttl, exp, body)),
    st.booleans(), st.integers(0, 50), st.binary(max_size=300), st.integers(0, UINT32_MAX),
    st.integers(0, UINT32_MAX), st.lists(st.binary(min_size=32, max_size=32), max_size=16),
)


@PROPS
@given(routed_messages, st.data())
def test_u1_ids_signatures_and_encoding(message, data) -> None:
    assert message.id == blake3.blake3(message.raw[1:]).digest()
    assert encode(decode(message.raw)) == message.raw
    assert decode_routed(message.raw) == message
    position = data.draw(st.integers(1, len(message.raw) - 1))
    bit = data.draw(st.integers(0, 7))
    flipped = bytearray(message.raw)
    flipped[position] ^= 1 << bit
    try:
        altered = decode_routed(bytes(flipped))
    except UpsycleReject:
        return
    assert altered.id != message.id
    if position < len(message.raw) - 64:
        from topics.upsycle.identity import verify

        assert not verify(altered.signer, altered.signed_bytes, altered.sig)


@PROPS
@given(routed_messages, st.data())
def test_u1_non_deterministic_variants_are_rejected(message, data) -> None:
    # Widen one integer head (type, ttl or exp) to a longer form: same value, other bytes.
    value = decode(message.raw)
    field = data.draw(st.sampled_from(["type", "ttl", "exp"]))
    encoded = encode(value[0] if field == "type" else value[1][field])
    number = value[0] if field == "type" else value[1][field]
    wider = b"\x1b" + number.to_bytes(8, "big")
    if field == "type":
        variant = message.raw[:1] + wider + message.raw[2:]
    else:
        marker = encode(field) + encoded
        variant = message.raw.replace(marker, encode(field) + wider, 1)
    try:
        decode_routed(variant)
    except UpsycleReject as exc:
        assert exc.reason.name == "non_canonical"
    else:
        raise AssertionError("a non-deterministic variant was accepted")


# -- U2 time ------------------------------------------------------------------------------------

@PROPS
@given(st.integers(NOW - 10**6, NOW + 10**6), st.integers(0, UINT32_MAX), st.integers(0, UINT32_MAX))
def test_u2_expires_at_bounds(t, ttl, exp) -> None:
    inner = minutes_to_posix(exp)
    expires_at = wrap_expires_at(inner, ttl, t, PARAMS)
    assert expires_at <= inner
    assert expires_at <= t + max(ttl, PARAMS.lifetime_floor)
    assert expires_at <= t + PARAMS.max_network_lifetime
    assert expires_at == min(inner, t + max(ttl, PARAMS.lifetime_floor), t + PARAMS.max_network_lifetime)


def test_u2_minutes_at_the_edges() -> None:
    assert minutes_to_posix(0) == 1_577_836_800
    assert minutes_to_posix(1) == 1_577_836_860
    assert minutes_to_posix(UINT32_MAX) == 1_577_836_800 + 60 * (2**32 - 1)


@PROPS
@given(st.integers(0, 4000), st.integers(-600, 86400))
def test_u2_a_wrapping_passes_validation_at_every_node(ttl, inner_offset) -> None:
    with fresh() as driver:
        message = multicast(key(1), ttl=ttl, exp=exp_minutes(NOW + inner_offset))
        outcome = driver.offer(routed_body(message))
        if minutes_to_posix(message.exp) <= NOW:
            assert outcome.reason == "inner_expired"
        else:
            assert outcome.accepted, outcome.verdict


# -- U3 routing ---------------------------------------------------------------------------------

MEMBERS = [key(100 + i) for i in range(3)]
GROUPS = [key(200 + i) for i in range(2)]

operations = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("leave"), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("multicast"), st.integers(0, 1), st.just(0)),
    st.tuples(st.just("unicast"), st.integers(0, 2), st.just(0)),
), max_size=20)


@PROPS
@given(operations)
def test_u3_routing_follows_membership_at_arrival(ops) -> None:
    with fresh() as driver:
        for member in MEMBERS:
            driver.subscribe(member)
        joined: set[tuple[int, int]] = set()
        expected: list[list[tuple[bytes, int | None]]] = [[] for _ in MEMBERS]
        for n, (op, a, b) in enumerate(ops):
            if op == "join":
                assert driver.join(MEMBERS[a], GROUPS[b]).ok
                joined.add((a, b))
            elif op == "leave":
                ack = driver.leave(MEMBERS[a], GROUPS[b])
                assert ack.ok == ((a, b) in joined)
                joined.discard((a, b))
                expected[a] = [(i, g) for i, g in expected[a] if g != b]
            elif op == "multicast":
                message = multicast(GROUPS[a], f"m{n}".encode())
                assert driver.offer(routed_body(message)).accepted
                for m in range(len(MEMBERS)):
                    if (m, a) in joined:
                        expected[m].append((message.id, a))
            else:
                from .harness import unicast

                message = unicast(key(300), MEMBERS[a].public, f"u{n}".encode())
                assert driver.offer(routed_body(message)).accepted
                expected[a].append((message.id, None))
        for m, member in enumerate(MEMBERS):
            assert inner_ids(driver.read(member)) == [i for i, _ in expected[m]]


# -- U4 store and forward -----------------------------------------------------------------------

events = st.lists(st.one_of(
    st.tuples(st.just("message"), st.sampled_from([0, 30, 120, 3600])),
    st.tuples(st.just("advance"), st.integers(1, 200)),
    st.tuples(st.just("ack"), st.integers(0, 5)),
    st.tuples(st.just("restart"), st.just(0)),
), max_size=25)


@PROPS
@given(events)
# An item that expired unread sits ahead of the one a read handed out: the ack must pass over it.
@example([("message", 30), ("message", 120), ("advance", 30), ("ack", 0)])
def test_u4_queues_keep_order_survive_restarts_and_honour_deadlines(script) -> None:
    member, group = key(2), key(1)
    with fresh() as driver:
        driver.join(member, group)
        queued: list[tuple[bytes, int]] = []   # (id, deadline) not yet acknowledged, in order
        for n, (op, value) in enumerate(script):
            if op == "message":
                message = multicast(group, f"q{n}".encode(), ttl=value)
                assert driver.offer(routed_body(message)).accepted
                if value > 0:
                    queued.append((message.id, driver.now + value))
            elif op == "advance":
                driver.clock.advance(value)
                if n % 2:
                    driver.prune()
            elif op == "restart":
                driver.restart()
            else:
                items = driver.read(member)
                live = [(i, d) for i, d in queued if d > driver.now]
                assert inner_ids(items) == [i for i, _ in live]
                assert all(item.deadline > driver.now for item in items)
                if items:
                    upto = items[min(value, len(items) - 1)]
                    driver.ack(member, upto.dseq)
                    acked = set(inner_ids([i for i in items if i.dseq <= upto.dseq]))
                    queued = [(i, d) for i, d in live if i not in acked]
        live = [i for i, d in queued if d > driver.now]
        assert inner_ids(driver.read(member)) == live


# -- U5 deduplication and answers ---------------------------------------------------------------

@PROPS
@given(st.integers(1, 6), st.integers(0, 4), st.booleans())
def test_u5_one_delivery_per_inner_message(copies, answers, pulled) -> None:
    member, group = key(2), key(1)
    with fresh() as driver:
        driver.join(member, group)
        message = multicast(group)
        outcomes = [driver.offer(routed_body(message), pool=10 + i) for i in range(copies)]
        assert [o.accepted for o in outcomes] == [True] + [False] * (copies - 1)
        request = driver.offer(pull_body(group.public, [message.id]), pool=3)
        accepted_answers = sum(driver.offer(reissue_body(request.dmq_id, message), pool=20 + i).accepted
                               for i in range(answers))
        assert accepted_answers == min(answers, PARAMS.answers_per_item)
        if pulled:
            assert driver.pull(member, group, [message.id]) == [(message.id, 0)]
        assert inner_ids(driver.read(member)) == [message.id] * (1 + int(pulled))


# -- U6 gaps ------------------------------------------------------------------------------------

@PROPS
@given(st.lists(st.booleans(), min_size=1, max_size=16), st.integers(0, 9))
def test_u6_a_gap_notice_once_for_ids_that_never_arrive(arrives, delay) -> None:
    member, group = key(2), key(1)
    with fresh() as driver:
        driver.join(member, group)
        earlier = [multicast(group, f"e{i}".encode()) for i in range(len(arrives))]
        head = multicast(group, b"head", seen=tuple(m.id for m in earlier))
        assert driver.offer(routed_body(head)).accepted
        driver.clock.advance(delay)
        for message, comes in zip(earlier, arrives):
            if comes:
                assert driver.offer(routed_body(message)).accepted
        notices = []
        for _ in range(4):
            driver.clock.advance(PARAMS.gap_delay)
            notices.extend(driver.prune())
        missing = [m.id for m, comes in zip(earlier, arrives) if not comes]
        notified = [i for notice in notices for i in notice.ids]
        assert sorted(notified) == sorted(missing)
        gap_items = [item.body[1] for item in driver.read(member) if item.body[0] == 2]
        assert sorted(i for notice in gap_items for i in notice[1]) == sorted(missing)


# -- U7 advertisements and memory ---------------------------------------------------------------

@PROPS
@given(st.permutations(list(range(6))))
def test_u7_the_highest_revision_wins_whatever_the_order(order) -> None:
    from topics.upsycle.wire import encode_advertisement

    peer = key(7)
    with fresh() as driver:
        bodies = {rev: advert_body(encode_advertisement(peer.sign, peer.public, (1, b"\x7f\x00\x00\x01", 3000 + rev),
                                                        {}, [], rev, 600, exp_minutes(NOW + 86400)).raw)
                  for rev in order}
        for rev in order:
            driver.offer(bodies[rev])
        with driver.store.read() as view:
            held = driver.adapter.state.advertisement(view, peer.public)
        assert held[2] == max(order)


@PROPS
@given(st.lists(st.tuples(st.sampled_from([0, 60, 600, 7200]), st.integers(0, 300)), min_size=1, max_size=15))
def test_u7_memory_follows_deadlines(messages) -> None:
    member, group = key(2), key(1)
    with fresh() as driver:
        driver.join(member, group)
        for n, (ttl, gap) in enumerate(messages):
            driver.offer(routed_body(multicast(group, f"x{n}".encode(), ttl=ttl, exp=exp_minutes(NOW + 3 * 86400),
                                               seen=(bytes([n]) * 32,))))
            driver.clock.advance(gap)
            driver.prune()
        # Gap notices emitted by the last prune live for Q themselves.
        for _ in range(2):
            driver.clock.advance(PARAMS.queue_lifetime + 1)
            driver.prune()
        snapshot = driver.store.snapshot()
        for db in ("msg", "seen", "q", "gap", "req", "ad"):
            assert snapshot[db] == {}, db
