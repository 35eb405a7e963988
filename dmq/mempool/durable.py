"""The mempool with LMDB persistence and group commit.

A message acknowledged to a client is durable (docs/architecture.md principle 5): ``submit``
returns only after the write transaction holding it has been committed and synced. One
fsync per message would cap throughput at the disk's sync rate, so a single writer task
collects every submission that arrives while it waits or while a commit is in flight, and
writes them all in ONE transaction with one fsync, then wakes every submitter at once.

Messages relayed from peers are not waited for: :meth:`DurableMempool.submit` with
``relayed=True`` returns at once, its messages visible to readers a round of the event loop
later (as in :class:`~dmq.mempool.memory.Mempool`), and they are
committed with the next group, which the writer holds open for up to
``relay_commit_interval`` seconds (or until a submitter that waits arrives): at mainnet's
rate one transaction, one fsync and one thread hop per interval instead of per message. A
crash may lose the relayed messages of the last interval; the peers that offered them offer
them again (docs/architecture.md principle 5).

The blocking commit runs in a worker thread: LMDB's fsync blocks, and that must not stall
the event loop. Only the writer task ever dispatches writes, so there is exactly one writer
at a time, and it has one thread of its own (:class:`CommitThread`), started at its first
commit and ended when the mempool closes. A simulated network on trio's virtual
clock runs the commit in the loop's own thread instead (``run_blocking``): a worker thread
would let virtual time jump while the commit runs, by however long the thread happened to
take, and the run would no longer follow from its seed.

Readers never see a message whose submitter waits for the disk before it is on disk:
such entries are held (they count as duplicates at once, so a concurrent second copy is
refused) but are published to cursors only when their transaction has committed, and a
relayed message behind them in the log waits with them. A write that fails withdraws the
waited-for messages and raises :class:`MempoolWriteError` in each of their submitters:
nothing was acknowledged. Relayed messages of a failed write stay in memory (they were
visible already); ``relayed_write_errors`` counts such failures.

Expired messages are purged from memory at once and deleted from LMDB in their own
batched transactions by the same writer, after any pending append that wrote them.
"""

from __future__ import annotations

import collections
import os
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Callable

import trio

from dmq.clock import Clock
from dmq.message import DmqMessage

from .entry import StoredMessage, default_decoder
from .errors import MempoolNotRunningError, MempoolWriteError
from .log import AppendableMessage
from .memory import DEFAULT_EXPIRY_INTERVAL, EXPIRY_MAX_SLEEP, Mempool
from .store import DEFAULT_MAP_SIZE, InTxn, LoadReport, MempoolStore

__all__ = ["DurableMempool", "CommitThread", "open_durable_mempool", "DEFAULT_COMMIT_WINDOW", "DEFAULT_RELAY_COMMIT_INTERVAL"]

#: How long the writer lingers after the first submission of a group before committing.
#: Zero still lets every submitter that is ready in the same scheduler pass join, and every
#: submitter that arrives during a commit joins the next one.
DEFAULT_COMMIT_WINDOW = 0.0
#: How long relayed messages may wait in memory for their commit, at most: what a crash can
#: lose of them, and what bounds the fsyncs and thread hops they cost to one per interval.
DEFAULT_RELAY_COMMIT_INTERVAL = 1.0


class _Job:
    """One blocking call handed to the commit thread, and what came of it."""

    __slots__ = ("call", "args", "token", "task", "result", "error")

    def __init__(self, call: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.call, self.args = call, args
        self.token = trio.lowlevel.current_trio_token()
        self.task = trio.lowlevel.current_task()
        self.result: Any = None
        self.error: BaseException | None = None


def _cannot_abort(_raise_cancel: Any) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED


class CommitThread:
    """One long-lived thread that runs the writer's blocking calls (commits, deletions), one at a time.

    ``await run_sync(fn, *args)`` is ``trio.to_thread.run_sync(fn, *args)`` for one caller that
    waits for each call to finish in a shielded scope, which is what the writer is: so there is
    no capacity limiter to pass, no thread to find in the cache, no context to copy. That halves
    the CPU of each hop (``bench/ingress_cost.py --cases hop``: about 25 against 55 µs on a
    small VM), which a local submission pays once per group commit. All of a mempool's
    commits run in this one thread, so the copies ``_write_own_copies`` makes land in one heap.
    The waiting caller cannot be cancelled (the writer's scope is shielded): the call always
    finishes, and its answer or exception is handed back.
    """

    def __init__(self, name: str = "dmq-mempool-commit") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    @trio.lowlevel.enable_ki_protection
    async def run_sync(self, call: Callable[..., Any], *args: Any) -> Any:
        """Run ``call(*args)`` in the thread and wait for its answer.

        Protected from KeyboardInterrupt like trio's own ``to_thread``: a Ctrl-C raised between
        queueing the job and parking would leave the thread to reschedule a task that is not
        waiting, which ends the run with an internal error instead of a clean stop; protected,
        the interrupt reaches the run's main task at its next checkpoint.
        """
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
            self._thread.start()
        job = _Job(call, args)
        self._jobs.put(job)
        await trio.lowlevel.wait_task_rescheduled(_cannot_abort)
        if job.error is not None:
            raise job.error
        return job.result

    def _serve(self) -> None:
        jobs = self._jobs
        while (job := jobs.get()) is not None:
            try:
                job.result = job.call(*job.args)
            except BaseException as exc:  # handed to the caller, like trio.to_thread.run_sync
                job.error = exc
            try:
                job.token.run_sync_soon(trio.lowlevel.reschedule, job.task)
            except trio.RunFinishedError:  # pragma: no cover - the caller waits in a shielded scope
                pass

    def close(self) -> None:
        """End the thread once the call in progress, if any, is done (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()


class _PendingAppend:
    """One submitter's batch waiting for its transaction."""

    __slots__ = ("entries", "pool_state_updates", "in_txn", "done", "error")

    def __init__(self, entries: list[StoredMessage], pool_state_updates: Mapping[Any, Any] | None,
                 in_txn: InTxn | None = None, waited: bool = True) -> None:
        self.entries = entries
        self.pool_state_updates = pool_state_updates
        self.in_txn = in_txn
        #: None for a relayed batch: nobody waits for it.
        self.done: trio.Event | None = trio.Event() if waited else None
        self.error: BaseException | None = None


class DurableMempool(Mempool):
    """A :class:`Mempool` whose every acknowledged message is in an LMDB environment."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        clock: Clock,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        decode: Callable[[bytes], DmqMessage] | None = None,
        commit_window: float = DEFAULT_COMMIT_WINDOW,
        relay_commit_interval: float = DEFAULT_RELAY_COMMIT_INTERVAL,
        expiry_interval: float = DEFAULT_EXPIRY_INTERVAL,
        expiry_max_sleep: float = EXPIRY_MAX_SLEEP,
        run_blocking: Callable[..., Awaitable[Any]] | None = None,
        sync: bool = True,
    ) -> None:
        super().__init__(clock, expiry_interval=expiry_interval, expiry_max_sleep=expiry_max_sleep)
        #: The writer's own thread, unless ``run_blocking`` says where the blocking calls run.
        self._commit_thread = CommitThread() if run_blocking is None else None
        self._run_blocking = run_blocking if run_blocking is not None else self._commit_thread.run_sync
        self._store = MempoolStore(path, map_size=map_size, sync=sync)
        try:
            loaded = self._store.load(decode or default_decoder(), clock.now(), into=self._log)
        except BaseException:
            self._store.close()
            raise
        self._log.publish(self._log.next_index - 1)
        #: What the reopen found (loaded, expired and corrupt records).
        self.load_report: LoadReport = loaded.report
        self._commit_window = commit_window
        self._relay_commit_interval = relay_commit_interval
        self._queue: list[_PendingAppend] = []
        #: Relayed batches queued: only the first wakes the writer, which then holds the group open.
        self._relayed_queued = 0
        #: Failed writes that held relayed messages only (nobody to raise to).
        self.relayed_write_errors = 0
        self._in_flight: list[_PendingAppend] = []
        #: The waited-for batches (local submissions) queued or in flight, oldest first: the
        #: first of them with entries is the reader horizon (:meth:`_publish_durable`), so a
        #: relayed submit does not scan the queue for it.
        self._waited: collections.deque[_PendingAppend] = collections.deque()
        self._deletes: list[StoredMessage] = []
        self._work = trio.Event()
        self._writer_running = False
        self._closed = False
        #: Batches handed to ``submit`` (compare with ``store.append_transactions``).
        self.submissions = 0

    @property
    def store(self) -> MempoolStore:
        return self._store

    # -- writing ----------------------------------------------------------------------------

    def append(
        self,
        messages: Iterable[AppendableMessage],
        pool_state_updates: Mapping[Any, Any] | None = None,
        in_txn: InTxn | None = None,
    ) -> list[int]:
        """Append and commit in the calling thread, one transaction, before returning.

        For start-up, tools and tests; inside the node prefer ``await submit(...)``, which
        shares fsyncs between concurrent submitters and does not block the event loop.
        """
        self._check_open()
        entries = self._log.append(messages)
        if not entries and not pool_state_updates and in_txn is None:
            return []
        try:
            self._store.write(entries, pool_state_updates, self._log.next_index, () if in_txn is None else (in_txn,))
        except Exception as exc:
            self._log.discard(entries)
            raise MempoolWriteError(f"writing {len(entries)} message(s) to {self._store.path} failed: {exc}") from exc
        self._publish_durable()
        return [entry.index for entry in entries]

    async def submit(
        self,
        messages: Iterable[AppendableMessage],
        pool_state_updates: Mapping[Any, Any] | None = None,
        in_txn: InTxn | None = None,
        *,
        relayed: bool = False,
    ) -> list[int]:
        """Append; return the indices once the group transaction holding them is on disk.

        ``pool_state_updates`` (exported per-pool validation state) is written in the same
        transaction as the messages that changed it, and so is whatever ``in_txn`` writes
        (topic state, docs/topics-design.md 2.5 step 7); if ``in_txn`` raises, nothing of the group is
        written. Duplicates raise at once, before
        anything is queued. Cancelling the caller does not withdraw a queued batch.

        ``relayed``: messages from a peer, which offers them again if they are lost; they are
        visible a round later and committed with the next group (see the module docstring), and
        the call returns without waiting for it (nor yielding: there is nothing to wait for).
        """
        if relayed and in_txn is None:
            return self.submit_relayed(messages, pool_state_updates)
        self._check_running()
        entries = self._log.append(messages)
        if not entries and not pool_state_updates and in_txn is None:
            await trio.lowlevel.checkpoint()
            return []
        pending = _PendingAppend(entries, pool_state_updates, in_txn)
        self._queue.append(pending)
        self._waited.append(pending)
        self.submissions += 1
        self._work.set()
        assert pending.done is not None
        await pending.done.wait()
        if pending.error is not None:
            raise MempoolWriteError(
                f"writing {len(entries)} message(s) to {self._store.path} failed: {pending.error}"
            ) from pending.error
        return [entry.index for entry in entries]

    def submit_relayed(
        self,
        messages: Iterable[AppendableMessage],
        pool_state_updates: Mapping[Any, Any] | None = None,
    ) -> list[int]:
        """Append relayed messages: visible a round later, committed with the next group (module docstring).

        What ``submit(..., relayed=True)`` does, without a coroutine or a checkpoint, so the
        node-to-node ingress can run in the connection's reader. Duplicates raise at once.
        """
        if self._closed or not self._writer_running:
            self._check_running()
        entries = self._log.append(messages)
        if not entries and not pool_state_updates:
            return []
        self._queue.append(_PendingAppend(entries, pool_state_updates, waited=False))
        self.submissions += 1
        self._relayed_queued += 1
        if self._relayed_queued == 1:
            self._work.set()
        self._publish_durable(relayed=True)
        return [entry.index for entry in entries]

    def expire(self, now: float | None = None) -> list[StoredMessage]:
        """Purge expired messages from memory and delete them from LMDB in one transaction.

        With the writer running, the deletion is queued behind any pending append; otherwise
        it is committed here.
        """
        removed = super().expire(now)
        if removed and not self._closed:
            if self._writer_running:
                self._deletes.extend(removed)
                self._work.set()
            else:
                self._store.delete(removed)
        return removed

    def save_pool_state(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        """Store exported per-pool state on its own (outside an append)."""
        self._check_open()
        self._store.save_pool_state(items)

    def load_pool_state(self) -> dict[Any, Any]:
        """The per-pool state last stored, as plain values."""
        self._check_open()
        return self._store.load_pool_state()

    # -- the writer -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the group-commit writer and the expiry loop until cancelled.

        On the way out, whatever is still queued is committed synchronously, so no
        submitter is left waiting on a writer that is gone.
        """
        self._check_open()
        if self._writer_running:
            raise RuntimeError("the mempool writer is already running")
        self._writer_running = True
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(super().run)
                task_status.started()
                await self._write_loop()
        finally:
            self._writer_running = False
            self._drain_sync()

    def _only_relayed(self) -> bool:
        """Whether nothing queued is waited for: no submitter, no deletion."""
        return not self._deletes and not self._waited

    async def _write_loop(self) -> None:
        while True:
            await self._work.wait()
            self._work = trio.Event()
            if self._only_relayed():
                # Hold the group open for more relayed messages; a submitter that waits, or
                # a deletion, ends the hold at once.
                with trio.move_on_after(self._relay_commit_interval):
                    await self._work.wait()
                self._work = trio.Event()
            if self._commit_window > 0:
                await trio.sleep(self._commit_window)
            else:
                await trio.lowlevel.checkpoint()
            batch, self._queue = self._queue, []
            self._relayed_queued = 0
            deletes, self._deletes = self._deletes, []
            if batch:
                entries, updates, hooks = self._merge(batch)
                self._in_flight = batch
                error: BaseException | None = None
                # Shielded: once a group is taken from the queue it is written and its
                # submitters are answered, even if the writer is being cancelled.
                with trio.CancelScope(shield=True):
                    try:
                        await self._run_blocking(_write_own_copies, self._store, entries, updates, self._log.next_index, hooks,
                                                 threading.get_ident())
                    except Exception as exc:
                        error = exc
                    finally:
                        self._in_flight = []
                self._finish(batch, error)
            if deletes:
                with trio.CancelScope(shield=True):
                    await self._run_blocking(self._store.delete, deletes)

    @staticmethod
    def _merge(batch: list[_PendingAppend]) -> tuple[list[StoredMessage], dict[Any, Any], list[InTxn]]:
        entries: list[StoredMessage] = []
        updates: dict[Any, Any] = {}
        hooks: list[InTxn] = []
        for pending in batch:
            entries.extend(pending.entries)
            if pending.pool_state_updates:
                updates.update(pending.pool_state_updates)
            if pending.in_txn is not None:
                hooks.append(pending.in_txn)
        return entries, updates, hooks

    def _finish(self, batch: list[_PendingAppend], error: BaseException | None) -> None:
        # The batch is the oldest of the queue, so its waited-for ones are the first of ``_waited``.
        waited_queue = self._waited
        for pending in batch:
            if pending.done is not None:
                waited_queue.popleft()
        if error is not None:
            waited = [pending for pending in batch if pending.done is not None]
            for pending in waited:
                self._log.discard(pending.entries)
                pending.error = error
            if len(waited) < len(batch):
                self.relayed_write_errors += 1
        self._publish_durable()
        for pending in batch:
            if pending.done is not None:
                pending.done.set()

    def _drain_sync(self) -> None:
        batch, self._queue = self._queue, []
        self._relayed_queued = 0
        deletes, self._deletes = self._deletes, []
        if batch:
            entries, updates, hooks = self._merge(batch)
            error: BaseException | None = None
            try:
                self._store.write(entries, updates, self._log.next_index, hooks)
            except Exception as exc:
                error = exc
            self._finish(batch, error)
        if deletes:
            self._store.delete(deletes)

    def _publish_durable(self, *, relayed: bool = False) -> None:
        """Move the reader horizon up to (not including) the oldest waited-for batch not yet on disk.

        ``relayed``: what moves it is a relayed append, published a round later (as
        :meth:`Mempool.submit_relayed` does).
        """
        publish = self._publish_relayed if relayed else self._publish
        for pending in self._waited:
            if pending.entries:
                publish(pending.entries[0].index - 1)
                return
        publish(self._log.next_index - 1)

    # -- lifetime ---------------------------------------------------------------------------

    def _check_running(self) -> None:
        self._check_open()
        if not self._writer_running:
            raise MempoolNotRunningError("submit needs the writer task: run DurableMempool.run() in a nursery first")

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the mempool at {self._store.path} is closed")

    def close(self) -> None:
        """Commit anything still queued and close the environment (idempotent)."""
        if self._closed:
            return
        if self._writer_running:
            raise RuntimeError("close() while the writer runs: cancel DurableMempool.run() first")
        self._drain_sync()
        self._closed = True
        if self._commit_thread is not None:
            self._commit_thread.close()
        self._store.close()


def _write_own_copies(store: MempoolStore, entries: list[StoredMessage], updates: Mapping[Any, Any],
                      next_index: int, hooks: list[InTxn], loop_thread: int) -> None:
    """Give each entry a copy of its bytes made in this (worker) thread, then write the group.

    The copy is the same bytes, allocated by the commit's thread: glibc gives each thread
    its own heap (arena), so the messages, which are most of what the node holds and live
    for minutes, end up side by side in one heap of their own. Received in the event loop's
    thread, they would stay scattered among each connection's short-lived buffers (a socket
    read is a 256 KiB buffer, cut to what arrived), leaving holes that the heap can neither
    reuse nor give back: 2-3 % of the wire bytes held, measured with ``bench/local_service.py
    --allocators`` (docs/benchmarks.md, Mempool). The originals are freed with the decoded
    message, in the loop's heap, where the next connections reuse the space.

    When the commit runs in the loop's own thread (``run_blocking`` inline, as on a simulated
    clock) a copy would land in the same heap and gain nothing, and would undo a simulation's
    one bytes object per message shared by its nodes: the entries keep the bytes they have.
    """
    if threading.get_ident() != loop_thread:
        for entry in entries:
            entry.raw = bytes(memoryview(entry.raw))
    store.write(entries, updates, next_index, hooks)


@asynccontextmanager
async def open_durable_mempool(
    path: str | os.PathLike[str], clock: Clock, **options: Any
) -> AsyncIterator[DurableMempool]:
    """Open (and load) a durable mempool, run its writer for the block's lifetime, then close it."""
    mempool = DurableMempool(path, clock, **options)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(mempool.run)
            yield mempool
            nursery.cancel_scope.cancel()
    finally:
        mempool.close()
