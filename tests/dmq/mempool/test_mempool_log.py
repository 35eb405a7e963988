"""The in-memory mempool: ordering, duplicate set, expiry, reader views."""

from __future__ import annotations

import pytest

from dmq.clock import ManualClock
from dmq.mempool import DuplicateMessageError, Mempool, MessageLog, StoredMessage

from .messages import decode, make_message

NOW = 1_800_000_000


def test_append_assigns_increasing_indices_from_zero_and_contains_sees_them():
    mempool = Mempool(ManualClock(now=NOW))
    first = [make_message(i, NOW + 100) for i in range(3)]
    second = [make_message(i, NOW + 100) for i in range(3, 5)]
    assert mempool.append(first) == [0, 1, 2]
    assert mempool.append(second) == [3, 4]
    assert len(mempool) == 5
    assert mempool.bytes_held == sum(m.size for m in first + second)
    for message in first + second:
        assert mempool.contains(message.message_id)
        assert mempool.get(message.message_id).raw == message.raw
    assert not mempool.contains(make_message(99, NOW + 100).message_id)
    assert [mempool.index_of(m.message_id) for m in first + second] == [0, 1, 2, 3, 4]
    assert mempool.index_of(make_message(99, NOW + 100).message_id) is None


def test_stored_entry_keeps_the_raw_bytes_and_decodes_back():
    mempool = Mempool(ManualClock(now=NOW))
    message = make_message(7, NOW + 60, body_size=2000)
    mempool.append([message])
    entry = mempool.get(message.message_id)
    assert entry.raw is message.raw
    assert entry.size == len(message.raw)
    assert entry.decode(decode) == message


def test_duplicate_id_rejects_the_whole_batch():
    mempool = Mempool(ManualClock(now=NOW))
    held = make_message(1, NOW + 60)
    mempool.append([held])
    fresh = make_message(2, NOW + 60)
    with pytest.raises(DuplicateMessageError) as raised:
        mempool.append([fresh, held])
    assert raised.value.message_id == held.message_id
    assert not mempool.contains(fresh.message_id)
    with pytest.raises(DuplicateMessageError):
        mempool.append([fresh, fresh])
    assert len(mempool) == 1 and mempool.next_index == 1


def test_expire_removes_at_expires_at_inclusive_and_frees_the_id():
    clock = ManualClock(now=NOW)
    mempool = Mempool(clock)
    messages = [make_message(i, NOW + 10 * (i + 1)) for i in range(4)]  # expire at +10, +20, +30, +40
    mempool.append(list(reversed(messages)))
    clock.advance(19.5)
    assert [e.message_id for e in mempool.expire()] == [messages[0].message_id]
    clock.advance(0.5)  # now == expires_at of messages[1]: purged (expires_at <= now)
    removed = mempool.expire()
    assert [e.message_id for e in removed] == [messages[1].message_id]
    assert not mempool.contains(messages[1].message_id)
    assert len(mempool) == 2
    assert mempool.bytes_held == messages[2].size + messages[3].size
    # the id left the duplicate set: the same message may be appended again, at a new index
    assert mempool.append([make_message(1, NOW + 20)]) == [4]


def test_readers_skip_expired_messages_before_they_are_purged():
    clock = ManualClock(now=NOW)
    mempool = Mempool(clock)
    short, long_ = make_message(1, NOW + 5), make_message(2, NOW + 500)
    mempool.append([short, long_])
    clock.advance(5)
    assert mempool.contains(short.message_id)  # held until purged
    assert [e.index for e in mempool.messages_after(-1, 10)] == [1]
    assert mempool.ids_after(-1, 10) == [(1, long_.message_id, long_.size)]
    assert mempool.lookup_unexpired(short.message_id) is None
    assert mempool.lookup_unexpired(long_.message_id).raw == long_.raw


def test_messages_after_respects_position_and_limit():
    mempool = Mempool(ManualClock(now=NOW))
    mempool.append([make_message(i, NOW + 100) for i in range(10)])
    assert [e.index for e in mempool.messages_after(3, 4)] == [4, 5, 6, 7]
    assert [e.index for e in mempool.messages_after(-1, 100)] == list(range(10))
    assert mempool.messages_after(9, 5) == []
    assert mempool.messages_after(-1, 0) == []


def test_log_stays_ordered_through_out_of_order_expiry_and_compaction():
    log = MessageLog()
    count = 5000
    # expiry times shuffled against index order; every third message lives long
    messages = [make_message(i, 1000 + (i * 7919) % count if i % 3 else 10**6) for i in range(count)]
    entries = log.append(messages)
    log.publish(entries[-1].index)
    removed = log.expire(1000 + count)
    assert len(removed) == count - len(range(0, count, 3))
    assert [e.expires_at for e in removed] == sorted(e.expires_at for e in removed)
    survivors = [e.index for e in log.messages_after(-1, count, now=0)]
    assert survivors == list(range(0, count, 3))
    assert [e.index for e in log.messages_after(2999, 3, now=0)] == [3000, 3003, 3006]
    assert len(log) == len(survivors) and log.bytes_held == sum(messages[i].size for i in survivors)


def test_unpublished_entries_are_duplicates_but_invisible():
    log = MessageLog()
    entries = log.append([make_message(i, 500) for i in range(3)])
    assert all(log.contains(e.message_id) for e in entries)
    assert log.messages_after(-1, 10, now=0) == []
    assert log.lookup_unexpired(entries[0].message_id, now=0) is None
    assert [log.index_of(e.message_id) for e in entries] == [0, 1, 2]  # held, so indexed, visible or not
    assert log.publish(1)
    assert [e.index for e in log.messages_after(-1, 10, now=0)] == [0, 1]
    assert not log.publish(0)  # the horizon never moves back


def test_discard_withdraws_entries_completely():
    log = MessageLog()
    kept = log.append([make_message(1, 500)])
    withdrawn = log.append([make_message(2, 400), make_message(3, 600)])
    log.discard(withdrawn)
    assert len(log) == 1 and log.bytes_held == kept[0].size
    assert not any(log.contains(e.message_id) for e in withdrawn)
    assert log.expire(10**9) == kept
    assert log.next_index == 3  # indices are never reused


def test_restore_requires_increasing_indices():
    log = MessageLog()
    log.restore(StoredMessage(4, b"a" * 32, 10, b"x"))
    with pytest.raises(ValueError):
        log.restore(StoredMessage(4, b"b" * 32, 10, b"y"))
    log.reserve_through(9)
    assert log.append([make_message(1, 10)])[0].index == 9


def _fresh_int(value: int) -> int:
    """An int equal to ``value`` that is a distinct object, as every decoded message brings its own."""
    return int(str(value))


def test_entries_expiring_in_the_same_second_share_one_expiry_object():
    log = MessageLog()
    appended = log.append([make_message(i, _fresh_int(NOW + 60)) for i in range(3)])
    log.restore(StoredMessage(7, b"r" * 32, _fresh_int(NOW + 60), b"x"))
    other = log.append([make_message(9, _fresh_int(NOW + 61))])[0]
    restored = log.get(b"r" * 32)
    assert all(entry.expires_at is appended[0].expires_at for entry in (*appended, restored))
    assert other.expires_at == NOW + 61 and other.expires_at is not appended[0].expires_at


def test_shared_expiry_values_are_released_with_the_entries():
    log = MessageLog()
    log.append([make_message(i, NOW + i) for i in range(50)])
    withdrawn = log.append([make_message(100 + i, NOW + 1000 + i) for i in range(10)])
    log.discard(withdrawn)
    log.expire(NOW + 24)
    assert len(log._expiry_values) == len(log) == 25  # one value per remaining second, none withdrawn
    log.expire(NOW + 10**6)
    assert log._expiry_values == {}


def test_cursor_start_positions():
    mempool = Mempool(ManualClock(now=NOW))
    mempool.append([make_message(i, NOW + 100) for i in range(3)])
    assert mempool.cursor().position == -1
    assert mempool.cursor("end").position == 2
    assert mempool.cursor(1).position == 1
    for bad in ("middle", -2, True):
        with pytest.raises(ValueError):
            mempool.cursor(bad)


def test_readers_find_their_place_across_skipped_indices_and_purged_fronts():
    """Indices skipped at a reopen and fronts dropped by expiry leave readers exactly where they were."""
    import random

    rng = random.Random(24)
    log = MessageLog()
    held: dict[int, int] = {}  # index -> expires_at, the model
    seed = 0
    now = 0
    for round_ in range(60):
        if round_ % 7 == 3:  # a reopen's records: indices with gaps, as expired ones were skipped
            index = log.next_index + rng.randrange(0, 2000)
            for _ in range(rng.randrange(1, 50)):
                expires_at = now + rng.randrange(1, 40)
                log.restore(StoredMessage(index, seed.to_bytes(32, "big"), expires_at, b"x"))
                held[index] = expires_at
                seed += 1
                index += rng.randrange(1, 30)
        else:
            messages = [make_message(seed + i, now + rng.randrange(1, 40)) for i in range(rng.randrange(1, 400))]
            seed += len(messages)
            for entry in log.append(messages):
                held[entry.index] = entry.expires_at
        log.publish(log.next_index - 1)
        now += rng.randrange(0, 6)
        removed = log.expire(now)
        assert sorted(e.index for e in removed) == sorted(i for i, t in held.items() if t <= now)
        held = {i: t for i, t in held.items() if t > now}
        live = sorted(held)
        for position in [-5, -1, *rng.sample(range(-1, log.next_index + 5), 20)]:
            want = [i for i in live if i > position][:7]
            assert [e.index for e in log.messages_after(position, 7, now)] == want
        assert [e.index for e in log] == live
        assert len(log) == len(live)
