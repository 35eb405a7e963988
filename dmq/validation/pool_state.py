"""Per-pool validation state: the signed times of its accepted messages, its opcert counter, when it was last accepted.

The signed times feed check 3 (the rate limit, :mod:`dmq.validation.rate`), the counter check 8;
both change only when a message passes every check (docs/protocol/validation.md sections 6.1
and 6.9). The signed times are wall-clock values the pool signed, so they mean the same after a
restart. The time of the last acceptance is kept for operators (monotonic, and wall so that
:meth:`PoolState.restore` can place it on a new clock). The durable mempool persists
:meth:`PoolState.export` and reloads it with :meth:`PoolState.restore`.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from dmq.clock import Clock
from dmq.validation.rate import Schedule

__all__ = ["PoolState"]

_WORD64_MAX = 2**64 - 1


class PoolState:
    """Signed times, last accepted time and opcert counter per pool id (28 bytes)."""

    __slots__ = ("_last_monotonic", "_last_wall", "_counters", "spacing")

    def __init__(self) -> None:
        self._last_monotonic: dict[bytes, float] = {}
        self._last_wall: dict[bytes, float] = {}
        self._counters: dict[bytes, int] = {}
        #: Check 3's schedule of each pool (:class:`~dmq.validation.rate.PoolSpacing` reads and charges it).
        self.spacing: dict[bytes, Schedule] = {}

    def last_accepted(self, pool_id: bytes) -> float | None:
        """Monotonic time of the pool's last accepted message, None if never."""
        return self._last_monotonic.get(pool_id)

    def last_accepted_wall(self, pool_id: bytes) -> float | None:
        """Wall time (POSIX seconds) of the pool's last accepted message, None if never."""
        return self._last_wall.get(pool_id)

    def opcert_counter(self, pool_id: bytes) -> int | None:
        """The highest opcert issue number accepted from the pool, None if never."""
        return self._counters.get(pool_id)

    def record_accepted(self, pool_id: bytes, issue_number: int, monotonic: float, wall: float) -> None:
        """A message of the pool passed every check: it is now the pool's latest."""
        self._last_monotonic[pool_id] = monotonic
        self._last_wall[pool_id] = wall
        self._counters[pool_id] = issue_number

    def __len__(self) -> int:
        return len(self._last_monotonic.keys() | self._counters.keys())

    def __contains__(self, pool_id: object) -> bool:
        return pool_id in self._last_monotonic or pool_id in self._counters

    def pool_ids(self) -> Iterator[bytes]:
        yield from self._last_monotonic.keys() | self._counters.keys()

    def export_pool(self, pool_id: bytes) -> dict[str, Any] | None:
        """One pool's state as plain values, None if the pool has none."""
        if pool_id not in self._last_monotonic and pool_id not in self._counters:
            return None
        record: dict[str, Any] = {
            "last_accepted_wall": self._last_wall.get(pool_id),
            "opcert_counter": self._counters.get(pool_id),
        }
        schedule = self.spacing.get(pool_id)
        if schedule is not None:
            record["signed_times"] = schedule.export()
        return record

    def updates(self, pool_ids: Iterable[bytes]) -> dict[str, dict[str, Any]]:
        """What the store must write for these pools (keyed by pool id hex), after their acceptance."""
        out = {}
        for pool_id in pool_ids:
            exported = self.export_pool(pool_id)
            if exported is not None:
                out[pool_id.hex()] = exported
        return out

    def export(self) -> dict[str, dict[str, Any]]:
        """Every pool's state as plain JSON-able values, keyed by pool id hex."""
        out: dict[str, dict[str, Any]] = {}
        for pool_id in sorted(self.pool_ids()):
            record = self.export_pool(pool_id)
            assert record is not None
            out[pool_id.hex()] = record
        return out

    @classmethod
    def restore(cls, exported: Mapping[str, Mapping[str, Any]], clock: Clock) -> PoolState:
        """Rebuild the state from :meth:`export` output, on ``clock``'s monotonic timeline.

        A pool accepted ``d`` wall seconds ago is placed ``d`` seconds before the current
        monotonic time. A wall time in the future (the wall clock went back) counts as
        "just now". The signed times need no conversion: they are the pool's own wall times.
        """
        state = cls()
        now = clock.now()
        mono = clock.monotonic()
        for key, record in exported.items():
            try:
                pool_id = bytes.fromhex(key)
            except ValueError:
                raise ValueError(f"pool state: {key!r} is not a hex pool id") from None
            if len(pool_id) != 28:
                raise ValueError(f"pool state: {key!r} is not a 28-byte pool id")
            wall = record.get("last_accepted_wall")
            counter = record.get("opcert_counter")
            if wall is not None:
                if isinstance(wall, bool) or not isinstance(wall, (int, float)):
                    raise ValueError(f"pool state {key}: last_accepted_wall must be a number, got {wall!r}")
                elapsed = max(0.0, now - float(wall))
                state._last_monotonic[pool_id] = mono - elapsed
                state._last_wall[pool_id] = float(wall)
            if counter is not None:
                if isinstance(counter, bool) or not isinstance(counter, int) or not 0 <= counter <= _WORD64_MAX:
                    raise ValueError(f"pool state {key}: opcert_counter must be a 64-bit unsigned int, got {counter!r}")
                state._counters[pool_id] = counter
            signed = record.get("signed_times")
            if signed is not None:
                try:
                    state.spacing[pool_id] = Schedule.restore(signed)
                except ValueError as exc:
                    raise ValueError(f"pool state {key}: signed_times: {exc}") from None
        return state
