"""The mempool's in-memory core: an ordered log with an id index and an expiry heap.

Sans-IO and clock-free: every reader takes ``now`` (wall-clock POSIX seconds) so the same
structure serves the node, the tests and simulated time alike.

* Indices are strictly increasing, start at 0, are never reused, and survive restarts
  (the durable layer persists ``next_index``).
* The id index is the duplicate set: an id stays in it until its message is purged.
* Appended entries first become *held* (they count as duplicates at once) and only later
  *visible* to readers, when :meth:`publish` moves the horizon over them. The durable
  mempool publishes a batch once its transaction is on disk, so no reader can ever see,
  announce or forward a message that a crash could still lose.
* Order is one list of entries in which the entry with index ``i`` sits at slot
  ``i - base``: a purged entry (or an index never held, skipped at a reopen) leaves
  ``None``, so a reader finds where to start and a purge finds its slot by subtraction,
  with no second list of indices (8 bytes a message, and a bisection, less). Purged slots
  at the front are dropped once the holes outnumber the live entries; holes further in
  stay until the front catches up, so the list is as long as the span of indices held
  (messages expire about in the order they came: a bounded TTL bounds the span).
* Entries that expire in the same second share one ``int`` object for ``expires_at``: a
  decoded message brings its own (32 bytes each, about 1.2 % of a 2.6 KB message), while
  messages arrive many to a second and with the same TTL. The table of shared values drops
  a value when the last entry that could hold it is purged.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Protocol

from .entry import StoredMessage
from .errors import DuplicateMessageError

__all__ = ["AppendableMessage", "MessageLog"]

_COMPACT_MIN_HOLES = 1024


class AppendableMessage(Protocol):
    """What the log needs of a message: a validated ``DmqMessage`` provides it."""

    raw: bytes
    message_id: bytes
    expires_at: int


class MessageLog:
    """Ordered log of held messages (see module docstring)."""

    def __init__(self, next_index: int = 0) -> None:
        if next_index < 0:
            raise ValueError(f"next_index must be >= 0, got {next_index}")
        self._next_index = next_index
        self._visible_upto = next_index - 1
        self._by_id: dict[bytes, StoredMessage] = {}
        #: Whether the id is in the duplicate set (held, visible or not yet): the id index's own
        #: membership test, asked several times per message (ingress, every pulling peer).
        self.contains: Callable[[bytes], bool] = self._by_id.__contains__
        #: The held entry with this id (None if none), visible or not, expired or not.
        self.get: Callable[[bytes], StoredMessage | None] = self._by_id.get
        #: ``_order[i]`` is the held entry with index ``_base + i``, or None.
        self._order: list[StoredMessage | None] = []
        self._base = next_index
        self._holes = 0
        self._expiry: list[StoredMessage] = []
        #: ``expires_at`` value -> the one int object the held entries with that value share.
        self._expiry_values: dict[int, int] = {}
        self._bytes = 0

    # -- size and membership -------------------------------------------------------------

    @property
    def next_index(self) -> int:
        """The index the next appended message will get."""
        return self._next_index

    @property
    def visible_upto(self) -> int:
        """Readers see entries with ``index <= visible_upto`` (-1: nothing yet)."""
        return self._visible_upto

    def __len__(self) -> int:
        return len(self._by_id)

    @property
    def bytes_held(self) -> int:
        """Sum of ``len(raw)`` over held messages (the wire bytes the mempool keeps)."""
        return self._bytes

    # -- writing ----------------------------------------------------------------------------

    def append(self, messages: Iterable[AppendableMessage]) -> list[StoredMessage]:
        """Hold ``messages`` at the next indices, in order; they stay invisible until published.

        All or nothing: a duplicate id (held already, or twice in the batch) raises
        :class:`DuplicateMessageError` before anything changes.
        """
        batch = list(messages)
        seen: set[bytes] = set()
        for message in batch:
            message_id = bytes(message.message_id)
            if message_id in self._by_id or message_id in seen:
                raise DuplicateMessageError(message_id)
            seen.add(message_id)
        entries = []
        shared = self._expiry_values.setdefault
        for message in batch:
            expires_at = int(message.expires_at)
            entry = StoredMessage(
                self._next_index, bytes(message.message_id), shared(expires_at, expires_at), bytes(message.raw)
            )
            self._next_index += 1
            self._hold(entry)
            entries.append(entry)
        return entries

    def restore(self, entry: StoredMessage) -> None:
        """Hold an entry loaded from storage at its own index (indices must increase).

        Used when reopening a store; the caller publishes once everything is loaded.
        """
        if entry.index < self._next_index:
            raise ValueError(f"restored index {entry.index} is not after the last one ({self._next_index - 1})")
        if entry.message_id in self._by_id:
            raise DuplicateMessageError(entry.message_id)
        entry.expires_at = self._expiry_values.setdefault(entry.expires_at, entry.expires_at)
        self._next_index = entry.index + 1
        self._hold(entry)

    def reserve_through(self, next_index: int) -> None:
        """Never hand out an index below ``next_index`` (the persisted counter at load)."""
        if next_index > self._next_index:
            self._next_index = next_index

    def publish(self, upto: int) -> bool:
        """Make entries with ``index <= upto`` visible; returns whether the horizon moved."""
        if upto <= self._visible_upto:
            return False
        self._visible_upto = upto
        return True

    def expire(self, now: float) -> list[StoredMessage]:
        """Purge every entry with ``expires_at <= now`` (docs/protocol/validation.md 6.10); returns them, soonest first."""
        removed = []
        heap = self._expiry
        values = self._expiry_values
        while heap and heap[0].expires_at <= now:
            entry = heapq.heappop(heap)
            self._release(entry)
            values.pop(entry.expires_at, None)  # entries of that second all leave in this pass
            removed.append(entry)
        self._maybe_compact()
        return removed

    def soonest_expiry(self) -> int | None:
        """The ``expires_at`` of the entry that expires first, None when nothing is held."""
        return self._expiry[0].expires_at if self._expiry else None

    def discard(self, entries: Iterable[StoredMessage]) -> None:
        """Withdraw entries that were never made durable (their write failed).

        Rare path: the expiry heap and the table of shared expiry values are rebuilt, O(n).
        """
        withdrawn = {id(entry) for entry in entries if self._by_id.get(entry.message_id) is entry}
        if not withdrawn:
            return
        for entry in [e for e in self._expiry if id(e) in withdrawn]:
            self._release(entry)
        self._expiry = [e for e in self._expiry if id(e) not in withdrawn]
        heapq.heapify(self._expiry)
        self._expiry_values = {e.expires_at: e.expires_at for e in self._expiry}
        self._maybe_compact()

    # -- reading (visible entries only) ----------------------------------------------------

    def messages_after(self, position: int, limit: int, now: float) -> list[StoredMessage]:
        """Up to ``limit`` visible, unexpired entries with ``index > position``, in index order."""
        out: list[StoredMessage] = []
        if limit <= 0 or position >= self._visible_upto:  # the usual answer to a reader that is up to date
            return out
        order = self._order
        base = self._base
        # Counted down rather than ``len(out)`` per entry: a serving peer asks once per round.
        for slot in range(max(position + 1 - base, 0), min(self._visible_upto + 1 - base, len(order))):
            entry = order[slot]
            if entry is not None and entry.expires_at > now:
                out.append(entry)
                limit -= 1
                if not limit:
                    break
        return out

    def ids_after(self, position: int, limit: int, now: float) -> list[tuple[int, bytes, int]]:
        """``(index, id, size)`` of what :meth:`messages_after` would return (for announcements)."""
        if position >= self._visible_upto or limit <= 0:
            return []                         # a serving peer that is up to date: nothing to scan
        return [(e.index, e.message_id, len(e.raw)) for e in self.messages_after(position, limit, now)]

    def has_unexpired_after(self, position: int, now: float) -> bool:
        return bool(self.messages_after(position, 1, now))

    def index_of(self, message_id: bytes) -> int | None:
        """The index of the held entry with this id (visible or not, expired or not), None if none.

        A serving peer asks it for every id its peer announces (has its position passed the id?):
        a method of the log, so that the question costs one call.
        """
        entry = self._by_id.get(message_id)
        return None if entry is None else entry.index

    def lookup_unexpired(self, message_id: bytes, now: float) -> StoredMessage | None:
        """The visible entry with this id if it has not expired at ``now``, else None."""
        entry = self._by_id.get(message_id)
        if entry is None or entry.index > self._visible_upto or entry.expires_at <= now:
            return None
        return entry

    def __iter__(self):
        """Every held entry in index order, visible or not (for inspection and tests)."""
        return (entry for entry in self._order if entry is not None)

    # -- internals ----------------------------------------------------------------------

    def _hold(self, entry: StoredMessage) -> None:
        self._by_id[entry.message_id] = entry
        order = self._order
        skipped = entry.index - self._base - len(order)
        if skipped:  # indices never held (a reopen skips expired and damaged records)
            if order:
                order.extend([None] * skipped)
                self._holes += skipped
            else:
                self._base = entry.index
        order.append(entry)
        heapq.heappush(self._expiry, entry)
        self._bytes += len(entry.raw)

    def _release(self, entry: StoredMessage) -> None:
        del self._by_id[entry.message_id]
        self._order[entry.index - self._base] = None
        self._holes += 1
        self._bytes -= len(entry.raw)

    def _maybe_compact(self) -> None:
        """Drop the purged slots at the front once the holes outnumber the live entries."""
        order = self._order
        if self._holes < _COMPACT_MIN_HOLES or self._holes * 2 < len(order):
            return
        front = 0
        for entry in order:
            if entry is not None:
                break
            front += 1
        if front:
            del order[:front]
            self._base += front
            self._holes -= front
