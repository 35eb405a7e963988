"""The LMDB-backed mempool: durability, restart, expiry deletion, pool state, group commit."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

import cbor2
import lmdb
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmq.clock import ManualClock
from dmq.mempool import (
    CorruptRecordWarning,
    DuplicateMessageError,
    DurableMempool,
    MempoolNotRunningError,
    MempoolStoreFormatError,
    MempoolStore,
    MempoolWriteError,
    MessageLog,
    open_durable_mempool,
)

from dmq.mempool.durable import CommitThread
from dmq.mempool.record import seal

from .messages import decode, make_message

NOW = 1_800_000_000


def open_mempool(path, clock, **options) -> DurableMempool:
    return DurableMempool(path, clock, decode=decode, **options)


def raw_env(path) -> lmdb.Environment:
    """The store's environment opened directly, to inspect or damage it while the mempool is closed."""
    return lmdb.open(str(path), subdir=True, max_dbs=4)


def test_appended_messages_come_back_after_restart_at_the_same_indices(tmp_path):
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600, body_size=90 + 17 * i) for i in range(20)]
    mempool = open_mempool(tmp_path, clock)
    assert mempool.append(messages[:12]) == list(range(12))
    assert mempool.append(messages[12:]) == list(range(12, 20))
    mempool.close()

    reopened = open_mempool(tmp_path, clock)
    assert reopened.load_report.loaded == 20 and reopened.load_report.corrupt == ()
    assert [(e.index, e.raw) for e in reopened] == [(i, m.raw) for i, m in enumerate(messages)]
    assert all(reopened.contains(m.message_id) for m in messages)
    assert reopened.bytes_held == sum(m.size for m in messages)
    assert reopened.append([make_message(99, NOW + 600)]) == [20]
    reopened.close()


def test_a_store_without_fsync_still_reads_back_what_it_committed(tmp_path):
    # A simulation's stores (thousands on one disk) commit without fsync; a reopen in the same
    # machine's life reads the page cache. A node's own store keeps the fsync.
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600) for i in range(5)]
    mempool = open_mempool(tmp_path / "nosync", clock, sync=False)
    assert mempool._store._env.flags()["sync"] is False
    mempool.append(messages)
    mempool.close()
    reopened = open_mempool(tmp_path / "nosync", clock)
    assert [e.raw for e in reopened] == [m.raw for m in messages]
    assert reopened._store._env.flags()["sync"] is True
    reopened.close()


def test_indices_never_go_back_even_when_everything_expired(tmp_path):
    clock = ManualClock(now=NOW)
    mempool = open_mempool(tmp_path, clock)
    mempool.append([make_message(i, NOW + 10) for i in range(5)])
    mempool.close()
    clock.advance(10)
    reopened = open_mempool(tmp_path, clock)
    assert len(reopened) == 0 and reopened.load_report.expired == 5
    assert reopened.store.stored_indices() == []  # expired records were deleted at load
    assert reopened.append([make_message(1, NOW + 600)]) == [5]
    reopened.close()
    again = open_mempool(tmp_path, clock)
    assert again.append([make_message(2, NOW + 600)]) == [6]
    again.close()


async def test_restart_serves_everything_unexpired_and_nothing_expired(tmp_path):
    clock = ManualClock(now=NOW)
    mempool = open_mempool(tmp_path, clock)
    messages = [make_message(i, NOW + (30 if i % 3 == 0 else 900)) for i in range(30)]
    mempool.append(messages)
    mempool.close()
    clock.advance(30)
    reopened = open_mempool(tmp_path, clock)
    expected = [m.raw for m in messages if m.expires_at > clock.now()]
    batch, has_more = await reopened.cursor().next_batch(blocking=True, limit=1000)
    assert [e.raw for e in batch] == expected and not has_more
    assert not any(reopened.contains(m.message_id) for m in messages if m.expires_at <= clock.now())
    reopened.close()


def test_expire_deletes_from_lmdb(tmp_path):
    clock = ManualClock(now=NOW)
    mempool = open_mempool(tmp_path, clock)
    mempool.append([make_message(i, NOW + 10 + i) for i in range(6)])
    clock.advance(12)
    assert [e.index for e in mempool.expire()] == [0, 1, 2]
    assert mempool.store.stored_indices() == [3, 4, 5]
    assert mempool.store.delete_transactions == 1
    mempool.close()
    with raw_env(tmp_path) as env, env.begin() as txn:
        assert txn.stat(env.open_db(b"messages", txn=txn))["entries"] == 3


def test_the_id_index_is_not_written_and_an_old_one_is_dropped(tmp_path):
    """Ids are indexed in memory only; a ``byid`` database of an earlier version goes at reopen."""
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600) for i in range(5)]
    mempool = open_mempool(tmp_path, clock)
    mempool.append(messages)
    mempool.close()
    with raw_env(tmp_path) as env:
        with pytest.raises(lmdb.NotFoundError):
            env.open_db(b"byid", create=False)
        legacy = env.open_db(b"byid")
        with env.begin(write=True) as txn:
            txn.put(b"\x07" * 32, b"\x00" * 8, db=legacy)
    reopened = open_mempool(tmp_path, clock)
    assert all(reopened.contains(m.message_id) for m in messages)
    with pytest.raises(DuplicateMessageError):
        reopened.append(messages[:1])
    reopened.close()
    with raw_env(tmp_path) as env:
        with pytest.raises(lmdb.NotFoundError):
            env.open_db(b"byid", create=False)


async def test_background_expiry_deletes_from_lmdb_while_running(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode, expiry_interval=0.001,
                                     expiry_max_sleep=0.01) as mempool:  # the clock jumps
        await mempool.submit([make_message(i, NOW + 5 + i) for i in range(4)])
        clock.advance(6)
        with trio.fail_after(5):
            while mempool.store.stored_indices() != [2, 3]:
                await trio.sleep(0.002)
        assert len(mempool) == 2


def closed_store_holding(path, clock, count: int) -> list:
    """``count`` messages appended to a durable mempool at ``path``, closed again (to damage it next)."""
    messages = [make_message(i, NOW + 600) for i in range(count)]
    mempool = open_mempool(path, clock)
    mempool.append(messages)
    mempool.close()
    return messages


def test_a_record_that_does_not_decode_is_reported_and_dropped(tmp_path):
    clock = ManualClock(now=NOW)
    good = closed_store_holding(tmp_path, clock, 3)
    with raw_env(tmp_path) as env, env.begin(write=True) as txn:
        messages_db = env.open_db(b"messages", txn=txn)
        txn.put((1).to_bytes(8, "big"), seal(good[1].raw[:200]), db=messages_db)  # torn record
        txn.put((7).to_bytes(8, "big"), seal(b"\xff\x00garbage"), db=messages_db)
        txn.put(b"bad-key", seal(good[0].raw), db=messages_db)

    with pytest.warns(CorruptRecordWarning) as warned:
        reopened = open_mempool(tmp_path, clock)
    report = reopened.load_report
    assert sorted(r.index for r in report.corrupt if r.index is not None) == [1, 7]
    assert any(r.index is None for r in report.corrupt)
    assert len(warned) == 3
    assert all("does not decode" in r.reason for r in report.corrupt if r.index is not None)
    assert [e.index for e in reopened] == [0, 2]
    assert not reopened.contains(good[1].message_id)
    assert reopened.store.stored_indices() == [0, 2]
    assert reopened.append([make_message(50, NOW + 600)]) == [8]  # past the garbage at 7
    reopened.close()


def test_a_record_repeating_a_held_id_is_reported_and_dropped(tmp_path):
    clock = ManualClock(now=NOW)
    held = closed_store_holding(tmp_path, clock, 2)
    with raw_env(tmp_path) as env, env.begin(write=True) as txn:
        txn.put((5).to_bytes(8, "big"), seal(held[0].raw), db=env.open_db(b"messages", txn=txn))

    with pytest.warns(CorruptRecordWarning, match="repeats the id of index 0"):
        reopened = open_mempool(tmp_path, clock)
    assert [(r.index, r.reason) for r in reopened.load_report.corrupt] == [(5, "repeats the id of index 0")]
    assert [(e.index, e.raw) for e in reopened] == [(0, held[0].raw), (1, held[1].raw)]
    assert reopened.get(held[0].message_id).index == 0
    assert reopened.store.stored_indices() == [0, 1]
    assert reopened.append([make_message(9, NOW + 600)]) == [6]
    reopened.close()


def test_a_store_loads_only_into_an_empty_log(tmp_path):
    clock = ManualClock(now=NOW)
    open_mempool(tmp_path, clock).close()
    store = MempoolStore(tmp_path)
    try:
        log = MessageLog()
        log.append([make_message(1, NOW + 600)])
        with pytest.raises(ValueError, match="empty log"):
            store.load(decode, NOW, into=log)
        with pytest.raises(ValueError, match="empty log"):
            store.load(decode, NOW, into=MessageLog(3))  # its indices would not be the store's
        fresh = MessageLog()
        assert store.load(decode, NOW, into=fresh).log is fresh
    finally:
        store.close()


def test_an_unknown_store_format_is_refused(tmp_path):
    open_mempool(tmp_path, ManualClock(now=NOW)).close()
    with raw_env(tmp_path) as env, env.begin(write=True) as txn:
        txn.put(b"format", b"something-else/9", db=env.open_db(b"meta", txn=txn))
    with pytest.raises(MempoolStoreFormatError, match="something-else"):
        open_mempool(tmp_path, ManualClock(now=NOW))


def test_pool_state_is_written_with_the_messages_and_survives_restart(tmp_path):
    clock = ManualClock(now=NOW)
    mempool = open_mempool(tmp_path, clock)
    pool_a, pool_b = b"\xaa" * 28, b"\xbb" * 28
    mempool.append([make_message(1, NOW + 600)], pool_state_updates={pool_a: [1000.5, 3]})
    assert mempool.store.append_transactions == 1
    mempool.append([make_message(2, NOW + 600)], pool_state_updates={pool_b: [1001.0, 0], pool_a: [1002.0, 4]})
    mempool.save_pool_state({pool_b: None})
    mempool.close()
    reopened = open_mempool(tmp_path, clock)
    assert reopened.load_pool_state() == {pool_a: [1002.0, 4]}
    reopened.close()


def test_a_failed_write_persists_neither_messages_nor_pool_state(tmp_path):
    clock = ManualClock(now=NOW)
    mempool = open_mempool(tmp_path, clock, map_size=256 * 1024)
    small = make_message(0, NOW + 600)
    mempool.append([small], pool_state_updates={b"p": [1, 1]})
    too_many = [make_message(i, NOW + 600, body_size=2000) for i in range(1, 200)]
    with pytest.raises(MempoolWriteError):
        mempool.append(too_many, pool_state_updates={b"p": [2, 2]})
    assert not any(mempool.contains(m.message_id) for m in too_many)
    assert len(mempool) == 1 and mempool.bytes_held == small.size
    assert [e.index for e in mempool.messages_after(-1, 1000)] == [0]
    assert mempool.append([make_message(500, NOW + 600)]) == [200]
    mempool.close()
    reopened = open_mempool(tmp_path, clock, map_size=256 * 1024)
    assert [e.index for e in reopened] == [0, 200]
    assert reopened.load_pool_state() == {b"p": [1, 1]}
    reopened.close()


async def test_submit_failure_reaches_every_submitter_of_the_group(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode, map_size=256 * 1024) as mempool:
        errors = []

        async def submitter(seed):
            try:
                await mempool.submit([make_message(seed * 1000 + i, NOW + 600, body_size=2000) for i in range(40)])
            except MempoolWriteError as exc:
                errors.append(exc)

        async with trio.open_nursery() as nursery:
            for seed in range(5):
                nursery.start_soon(submitter, seed)
        assert len(errors) == 5
        assert len(mempool) == 0
        assert await mempool.submit([make_message(1, NOW + 600)]) == [200]


async def test_submit_needs_the_writer(tmp_path):
    mempool = open_mempool(tmp_path, ManualClock(now=NOW))
    with pytest.raises(MempoolNotRunningError):
        await mempool.submit([make_message(1, NOW + 600)])
    mempool.close()


async def test_group_commit_batches_concurrent_submitters(tmp_path):
    clock = ManualClock(now=NOW)
    submitters, rounds = 64, 5
    results: dict[tuple[int, int], tuple[bytes, int]] = {}
    async with open_durable_mempool(tmp_path, clock, decode=decode) as mempool:

        async def submitter(number):
            for round_ in range(rounds):
                message = make_message(number * 1000 + round_, NOW + 600)
                (index,) = await mempool.submit([message])
                results[number, round_] = (message.message_id, index)
                # a submitter only sees its own result once it is readable
                assert mempool.lookup_unexpired(message.message_id).index == index
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            for number in range(submitters):
                nursery.start_soon(submitter, number)
        transactions = mempool.store.append_transactions
        assert mempool.submissions == submitters * rounds
        assert transactions * 8 <= mempool.submissions, (transactions, mempool.submissions)
        assert sorted(index for _, index in results.values()) == list(range(submitters * rounds))
    reopened = open_mempool(tmp_path, clock)
    assert {e.message_id: e.index for e in reopened} == dict(results.values())
    reopened.close()


async def test_the_commit_thread_gives_each_entry_its_own_copy_of_the_received_bytes(tmp_path):
    """Held messages are copied by the thread that commits them (so they sit in its malloc arena,
    apart from the connections' buffers): the same bytes, a new object, and what is on disk."""
    clock = ManualClock(now=NOW)
    waited, relayed = make_message(1, NOW + 600), make_message(2, NOW + 600)
    received = {message.message_id: message.raw for message in (waited, relayed)}
    written: dict[bytes, tuple[int, bool]] = {}  # id -> (writing thread, whether its bytes were a copy by then)
    async with open_durable_mempool(tmp_path, clock, decode=decode, relay_commit_interval=0.05) as mempool:
        real_write = mempool.store.write

        def recording_write(entries, *args):
            written.update((e.message_id, (threading.get_ident(), e.raw is not received[e.message_id])) for e in entries)
            return real_write(entries, *args)

        mempool.store.write = recording_write
        await mempool.submit([relayed], relayed=True)
        await mempool.submit([waited])
        for message in (waited, relayed):
            entry = mempool.get(message.message_id)
            assert entry.raw == message.raw and entry.raw is not message.raw
            thread, copied = written[message.message_id]
            assert copied and thread != threading.get_ident()
    reopened = open_mempool(tmp_path, clock)
    assert {e.message_id: e.raw for e in reopened} == {m.message_id: m.raw for m in (waited, relayed)}
    reopened.close()


async def test_a_commit_in_the_loops_own_thread_keeps_the_received_bytes_object(tmp_path):
    """Run inline (a simulated clock's ``run_blocking``), a commit copies nothing: a copy would
    land in the loop's heap anyway, and the simulation shares one bytes object per message."""
    clock = ManualClock(now=NOW)
    message = make_message(1, NOW + 600)

    async def run_inline(function, *args):
        await trio.lowlevel.checkpoint()
        return function(*args)

    async with open_durable_mempool(tmp_path, clock, decode=decode, run_blocking=run_inline) as mempool:
        await mempool.submit([message])
        assert mempool.get(message.message_id).raw is message.raw
    reopened = open_mempool(tmp_path, clock)
    assert [e.raw for e in reopened] == [message.raw]
    reopened.close()


@contextmanager
def held_writes(store):
    """The store's writes wait in the writer thread until ``release`` is set; ``entered`` when one starts."""
    entered, release = threading.Event(), threading.Event()
    real_write = store.write

    def held_write(*args):
        entered.set()
        release.wait(10)
        real_write(*args)

    store.write = held_write
    try:
        yield entered, release
    finally:
        release.set()
        store.write = real_write


async def test_readers_see_a_message_only_once_it_is_on_disk(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode) as mempool:
        with held_writes(mempool.store) as (entered, release):
            message = make_message(1, NOW + 600)
            cursor = mempool.cursor()
            delivered = []

            async def reader():
                delivered.extend((await cursor.next_batch(blocking=True, limit=10))[0])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(reader)
                nursery.start_soon(mempool.submit, [message])
                await trio.to_thread.run_sync(entered.wait, 10)
                assert mempool.contains(message.message_id)  # a concurrent copy is already a duplicate
                assert mempool.lookup_unexpired(message.message_id) is None
                assert mempool.ids_after(-1, 10) == [] and delivered == []
                release.set()
            assert [e.message_id for e in delivered] == [message.message_id]


async def test_relayed_messages_are_visible_at_once_and_committed_together_later(tmp_path):
    clock = ManualClock(now=NOW)
    messages = [make_message(i, NOW + 600) for i in range(6)]
    async with open_durable_mempool(tmp_path, clock, decode=decode, relay_commit_interval=0.5) as mempool:
        store = mempool.store
        before = store.append_transactions
        for i, message in enumerate(messages):
            assert await mempool.submit([message], relayed=True) == [i]
            # readable at once, before any transaction
            assert mempool.lookup_unexpired(message.message_id).index == i
        assert [i for i, _, _ in mempool.ids_after(-1, 10)] == list(range(6))
        assert store.append_transactions == before and store.stored_indices() == []
        with trio.fail_after(10):
            while store.append_transactions == before:
                await trio.sleep(0.05)
        assert store.append_transactions == before + 1  # one group for all six
        assert store.stored_indices() == list(range(6))


async def test_a_waited_submission_takes_the_relayed_group_with_it_at_once(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode, relay_commit_interval=3600) as mempool:
        store = mempool.store
        before = store.append_transactions
        await mempool.submit([make_message(1, NOW + 600)], relayed=True)
        await mempool.submit([make_message(2, NOW + 600)], relayed=True)
        with trio.fail_after(10):  # not an hour: the local submission ends the hold
            assert await mempool.submit([make_message(3, NOW + 600)]) == [2]
        assert store.append_transactions == before + 1
        assert store.stored_indices() == [0, 1, 2]


async def test_a_relayed_message_behind_an_unwritten_local_one_waits_for_it(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode) as mempool:
        with held_writes(mempool.store) as (entered, release):
            local, relayed = make_message(1, NOW + 600), make_message(2, NOW + 600)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(mempool.submit, [local])
                await trio.to_thread.run_sync(entered.wait, 10)
                await mempool.submit([relayed], relayed=True)
                # neither is visible while the local one is not on disk
                assert mempool.ids_after(-1, 10) == []
                release.set()
        assert [message_id for _, message_id, _ in mempool.ids_after(-1, 10)] == [local.message_id,
                                                                                   relayed.message_id]


async def test_relayed_messages_still_queued_are_written_when_the_mempool_closes(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode, relay_commit_interval=3600) as mempool:
        await mempool.submit([make_message(i, NOW + 600) for i in range(3)], relayed=True)
    reopened = open_mempool(tmp_path, clock)
    assert [e.index for e in reopened] == [0, 1, 2]
    reopened.close()


def test_validation_pool_state_export_round_trips_through_the_store(tmp_path):
    from dmq.validation.pool_state import PoolState

    clock = ManualClock(now=NOW)
    state = PoolState()
    message = make_message(1, NOW + 600)
    state.record_accepted(message.pool_id, 7, clock.monotonic(), clock.now())
    mempool = open_mempool(tmp_path, clock)
    mempool.append([message], pool_state_updates={message.pool_id.hex(): state.export_pool(message.pool_id)})
    mempool.close()
    clock.advance(30)
    reopened = open_mempool(tmp_path, clock)
    restored = PoolState.restore(reopened.load_pool_state(), clock)
    reopened.close()
    assert restored.export() == state.export()
    assert restored.opcert_counter(message.pool_id) == 7
    assert restored.last_accepted(message.pool_id) == clock.monotonic() - 30


async def test_synchronous_writes_wait_for_an_in_flight_group_commit(tmp_path):
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode) as mempool:

        async def submitter(number):
            for round_ in range(60):
                await mempool.submit([make_message(number * 1000 + round_, NOW + 600)])

        async def direct_writer():
            for round_ in range(60):
                mempool.append([make_message(10**6 + round_, NOW + 600)])
                mempool.save_pool_state({f"pool-{round_}": [round_]})
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            for number in range(8):
                nursery.start_soon(submitter, number)
            nursery.start_soon(direct_writer)
        assert len(mempool) == 8 * 60 + 60
        assert len(mempool.load_pool_state()) == 60


def _mapped_kib(path) -> int | None:
    """Resident KiB of this process's mappings of ``path`` (None without /proc)."""
    try:
        smaps = open("/proc/self/smaps").read().splitlines()
    except OSError:
        return None
    target, inside, total = str(os.path.realpath(path)), False, 0
    for line in smaps:
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
            inside = fields[-1] == target
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


def test_the_data_file_is_not_left_mapped_after_writes(tmp_path):
    """Commits read the log's last pages through LMDB's map (and the kernel maps their
    neighbours too); the store releases them, so the file does not count in the node's memory."""
    clock = ManualClock(now=NOW)
    mempool = open_mempool(tmp_path, clock)
    for i in range(0, 300, 6):
        mempool.append([make_message(j, NOW + 600, body_size=2500) for j in range(i, i + 6)])
    resident = _mapped_kib(tmp_path / "data.mdb")
    if resident is None:
        pytest.skip("no /proc/self/smaps here")
    assert (tmp_path / "data.mdb").stat().st_size > 1 << 20
    assert resident < 64
    mempool.close()


class _HorizonChecked(DurableMempool):
    """Holds every publish to the reader horizon the scan of the in-flight and queued batches gives."""

    published: list[tuple[int, int]]

    def _publish(self, upto: int) -> None:
        scanned = self._log.next_index - 1
        for pending in (*self._in_flight, *self._queue):
            if pending.entries and pending.done is not None:
                scanned = pending.entries[0].index - 1
                break
        self.published.append((upto, scanned))  # compared by the test, not raised inside the writer
        super()._publish(upto)


@pytest.mark.parametrize("seed", range(6))
async def test_the_reader_horizon_is_the_oldest_unwritten_local_submission_whatever_the_mix(tmp_path, seed):
    """Local submissions (waited for), relayed ones and group writes interleaved at random: every
    publish moves the horizon exactly where a scan of the unwritten batches puts it (the mempool keeps
    the waited-for batches in order instead of scanning), and a reader sees a local submission only
    once its group is written."""
    import random

    rng = random.Random(seed)
    clock = ManualClock(now=NOW)
    writes = trio.Semaphore(0)

    async def gated(fn, *args):
        with trio.move_on_after(10):  # the writer's wait is shielded: a failing test must not hang in it
            await writes.acquire()
        return fn(*args)

    mempool = _HorizonChecked(tmp_path, clock, decode=decode, relay_commit_interval=3600, run_blocking=gated)
    mempool.published = []
    counter = iter(range(1, 1000))
    local_ids: list[bytes] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(mempool.run)
            for _ in range(40):
                op = rng.choice(("relayed", "relayed", "local", "write"))
                if op == "relayed":
                    await mempool.submit([make_message(next(counter), NOW + 600)], relayed=True)
                elif op == "local":
                    message = make_message(next(counter), NOW + 600)
                    local_ids.append(message.message_id)
                    nursery.start_soon(mempool.submit, [message])
                else:
                    writes.release()
                for _ in range(3):
                    await trio.lowlevel.checkpoint()
                written = set(mempool.store.stored_indices())
                for index, message_id, _ in mempool.ids_after(-1, 1000):
                    if message_id in local_ids:
                        assert index in written  # durable before it is visible
            for _ in range(100):
                writes.release()
            while mempool._waited:  # the relayed rest waits for the hour's hold, or the close
                await trio.sleep(0.01)
            assert {m for _, m, _ in mempool.ids_after(-1, 1000)} >= set(local_ids)
            nursery.cancel_scope.cancel()
    mempool.close()
    assert mempool.published  # the checked publish ran
    assert [upto for upto, _ in mempool.published] == [scanned for _, scanned in mempool.published]


_STATE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(min_size=1, max_size=8) | st.binary(min_size=1, max_size=8), _STATE_VALUES,
                       min_size=1, max_size=6))
def test_pool_state_is_stored_as_canonical_cbor_whatever_was_encoded_before(tmp_path_factory, items):
    """The store keeps one encoder for pool state between writes: each key and value is stored
    as the bytes ``cbor2.dumps(..., canonical=True)`` gives, also right after a value that
    could not be encoded (and a value of None deletes its key)."""
    store = MempoolStore(tmp_path_factory.mktemp("poolstate"))
    try:
        with pytest.raises(cbor2.CBOREncodeError):
            store.save_pool_state({"broken": [1, {"x": object()}]})
        store.save_pool_state(items)
        with store.env.begin() as txn:
            stored = dict(txn.cursor(db=store.env.open_db(b"poolstate", txn=txn)))
    finally:
        store.close()
    expected = {cbor2.dumps(key, canonical=True): cbor2.dumps(value, canonical=True)
                for key, value in items.items() if value is not None}      # None deletes
    assert stored == expected


def _commit_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "dmq-mempool-commit" and thread.is_alive())


def _refuse() -> None:
    raise ValueError("refused in the commit thread")


async def test_the_commit_thread_hands_back_answers_and_errors_from_one_thread_of_its_own():
    thread = CommitThread()
    try:
        assert await thread.run_sync(lambda a, b: a + b, 2, 3) == 5
        with pytest.raises(ValueError, match="refused in the commit thread"):
            await thread.run_sync(_refuse)
        idents = {await thread.run_sync(threading.get_ident) for _ in range(5)}
        assert len(idents) == 1 and threading.get_ident() not in idents
    finally:
        thread.close()
    assert idents.isdisjoint(t.ident for t in threading.enumerate())      # ended at close
    thread.close()                                                          # idempotent


async def test_a_mempool_commits_in_its_own_thread_and_ends_it_when_it_closes(tmp_path):
    before = _commit_threads()
    clock = ManualClock(now=NOW)
    async with open_durable_mempool(tmp_path, clock, decode=decode) as mempool:
        await mempool.submit([make_message(1, NOW + 600)])
        assert _commit_threads() == before + 1
        assert mempool.store.append_transactions == 1
    assert _commit_threads() == before
