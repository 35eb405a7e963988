"""Per-record checksums: bytes changed on disk outside the id's reach are never served.

The message id covers the signed payload only. A torn page that changes the KES signature,
the operational certificate or the cold key leaves a record that decodes and whose id still
matches; only the record's checksum tells it apart.
"""

from __future__ import annotations

import struct

import pytest

from dmq.clock import ManualClock
from dmq.mempool import CorruptRecordWarning
from dmq.mempool.record import CHECKSUM_SIZE, seal
from dmq.mempool.store import STORE_FORMAT

from .messages import COLD_VK, OPCERT, decode, make_message
from .test_mempool_durable import NOW, open_mempool, raw_env

#: Where each field the id does not cover sits in a stored message (a byte found only there).
REGIONS = {
    "kes signature": lambda m: m.raw.index(m.kes_signature) + 5,
    "opcert cold signature": lambda m: m.raw.index(OPCERT.cold_signature) + 30,
    "cold key": lambda m: m.raw.rindex(COLD_VK) + 17,
}


def flip_stored_byte(path, index: int, offset: int) -> bytes:
    """Invert one byte of the raw message stored at ``index``; the altered raw bytes."""
    with raw_env(path) as env, env.begin(write=True) as txn:
        messages_db = env.open_db(b"messages", txn=txn)
        key = struct.pack(">Q", index)
        record = bytearray(txn.get(key, db=messages_db))
        record[CHECKSUM_SIZE + offset] ^= 0xFF
        txn.put(key, bytes(record), db=messages_db)
    return bytes(record[CHECKSUM_SIZE:])


@pytest.mark.parametrize("region", REGIONS)
def test_a_byte_changed_outside_the_id_is_dropped_at_reopen_and_reported(tmp_path, region):
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600) for i in range(5)]
    mempool = open_mempool(tmp_path, clock)
    mempool.append(messages)
    mempool.close()

    altered = flip_stored_byte(tmp_path, 2, REGIONS[region](messages[2]))
    assert altered != messages[2].raw
    assert decode(altered).has_valid_id()  # the decoder and the id check alone would serve it

    with pytest.warns(CorruptRecordWarning, match="checksum") as warned:
        reopened = open_mempool(tmp_path, clock)
    report = reopened.load_report
    assert [(r.index, r.reason) for r in report.corrupt] == [(2, "its bytes do not match their checksum")]
    assert len(warned) == 1 and "index 2" in str(warned[0].message)
    assert report.loaded == 4
    assert [e.raw for e in reopened] == [m.raw for i, m in enumerate(messages) if i != 2]
    assert not reopened.contains(messages[2].message_id)
    assert reopened.store.stored_indices() == [0, 1, 3, 4]  # deleted, not only skipped
    assert reopened.append([make_message(9, NOW + 600)]) == [5]
    reopened.close()


def test_records_are_stored_as_checksum_then_the_raw_bytes(tmp_path):
    mempool = open_mempool(tmp_path, ManualClock(now=NOW))
    messages = [make_message(i, NOW + 600, body_size=40 + i) for i in range(3)]
    mempool.append(messages)
    mempool.close()
    with raw_env(tmp_path) as env, env.begin() as txn:
        stored = [value for _, value in txn.cursor(db=env.open_db(b"messages", txn=txn))]
        assert txn.get(b"format", db=env.open_db(b"meta", txn=txn)) == STORE_FORMAT
    assert [value[CHECKSUM_SIZE:] for value in stored] == [m.raw for m in messages]
    assert len({value[:CHECKSUM_SIZE] for value in stored}) == 3


def write_unchecked_store(path, messages, *, next_index: int) -> None:
    """A store as format ``dmq-mempool/1`` left it: bare raw bytes under big-endian indices."""
    with raw_env(path) as env, env.begin(write=True) as txn:
        messages_db = env.open_db(b"messages", txn=txn)
        meta = env.open_db(b"meta", txn=txn)
        txn.put(b"format", b"dmq-mempool/1", db=meta)
        txn.put(b"next_index", struct.pack(">Q", next_index), db=meta)
        for index, raw in messages:
            txn.put(struct.pack(">Q", index), raw, db=messages_db)


def test_a_store_of_the_unchecked_format_loads_and_gains_checksums(tmp_path):
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600) for i in range(6)]
    damaged_payload = bytearray(messages[4].raw)
    damaged_payload[messages[4].raw.index(messages[4].signed_bytes) + 12] ^= 0x01
    stored = [(i, m.raw) for i, m in enumerate(messages) if i != 4] + [(4, bytes(damaged_payload))]
    write_unchecked_store(tmp_path, stored, next_index=6)

    with pytest.warns(CorruptRecordWarning, match="id does not match"):
        mempool = open_mempool(tmp_path, clock)
    assert mempool.load_report.loaded == 5
    assert [r.index for r in mempool.load_report.corrupt] == [4]  # the old checks still apply
    assert [e.raw for e in mempool] == [m.raw for i, m in enumerate(messages) if i != 4]
    assert mempool.append([make_message(10, NOW + 600)]) == [6]
    mempool.close()

    with raw_env(tmp_path) as env, env.begin() as txn:
        assert txn.get(b"format", db=env.open_db(b"meta", txn=txn)) == STORE_FORMAT
        on_disk = [value for _, value in txn.cursor(db=env.open_db(b"messages", txn=txn))]
    expected = [m.raw for i, m in enumerate(messages) if i != 4] + [make_message(10, NOW + 600).raw]
    assert on_disk == [seal(raw) for raw in expected]

    reopened = open_mempool(tmp_path, clock)
    assert reopened.load_report.loaded == 6 and reopened.load_report.corrupt == ()
    reopened.close()


def test_an_upgraded_store_catches_damage_from_then_on(tmp_path):
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600) for i in range(3)]
    write_unchecked_store(tmp_path, list(enumerate(m.raw for m in messages)), next_index=3)
    open_mempool(tmp_path, clock).close()
    flip_stored_byte(tmp_path, 0, REGIONS["kes signature"](messages[0]))
    with pytest.warns(CorruptRecordWarning, match="checksum"):
        reopened = open_mempool(tmp_path, clock)
    assert [r.index for r in reopened.load_report.corrupt] == [0]
    assert [e.raw for e in reopened] == [m.raw for m in messages[1:]]
    reopened.close()
