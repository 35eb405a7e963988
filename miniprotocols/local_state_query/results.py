"""The results of the Cardano queries in :mod:`.queries`: typed decoders and encoders.

Decoders are strict (exact array lengths, unsigned integers, 28-byte pool ids, no trailing
bytes) because a result that does not have the documented shape means the node and this
code disagree about the protocol, and guessing would put a wrong stake map in front of
validation. Encoders write what cardano-node writes; they serve the project's own test
peer and tools. Shapes: docs/protocol/cardano-node-link.md 10.3.

A ``QueryIfCurrent`` result is ``[value]`` when the ledger was in the query's era, and
``[[idx, name], [idx, name]]`` (the query's era, then the ledger's) when it was not, which
happens when a hard fork lands between ``GetCurrentEra`` and the query. That case is raised
as :class:`EraMismatch` with both eras named.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ouroboros_mux.cbor import CborError, Cursor

from ..framework import cbor_write as w
from .queries import era_name

__all__ = [
    "POOL_ID_SIZE",
    "SystemStart",
    "EraMismatch",
    "PoolSnapshot",
    "StakeSnapshots",
    "decode_system_start",
    "encode_system_start",
    "decode_current_era",
    "encode_current_era",
    "unwrap_if_current",
    "encode_if_current",
    "encode_era_mismatch",
    "decode_epoch_no",
    "encode_epoch_no",
    "decode_stake_snapshots",
    "encode_stake_snapshots",
    "LEDGER_DEFINITE_MAP_MAX",
]

POOL_ID_SIZE = 28
#: cardano-ledger writes maps with more entries than this indefinite (``encodeMap``).
LEDGER_DEFINITE_MAP_MAX = 23
_PICOSECONDS_PER_MICROSECOND = 1_000_000
_PICOSECONDS_PER_DAY = 86_400 * 10**12


# -- GetSystemStart -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SystemStart:
    """A UTC time as cardano-binary writes it: ``[year, dayOfYear, picosecondsOfDay]``."""

    year: int
    day_of_year: int
    picoseconds_of_day: int

    def __post_init__(self) -> None:
        if not 1 <= self.day_of_year <= 366:
            raise ValueError(f"day of year must be 1..366, got {self.day_of_year}")
        # One more second than a day: a leap second is representable in a UTCTime.
        if not 0 <= self.picoseconds_of_day < _PICOSECONDS_PER_DAY + 10**12:
            raise ValueError(f"picoseconds of day out of range: {self.picoseconds_of_day}")

    @classmethod
    def from_datetime(cls, when: _dt.datetime) -> SystemStart:
        when = when.astimezone(_dt.timezone.utc) if when.tzinfo else when
        midnight = when.replace(hour=0, minute=0, second=0, microsecond=0)
        micros = (when - midnight) // _dt.timedelta(microseconds=1)
        return cls(when.year, when.timetuple().tm_yday, micros * _PICOSECONDS_PER_MICROSECOND)

    def to_datetime(self) -> _dt.datetime:
        """The time as an aware UTC datetime (sub-microsecond digits are dropped)."""
        day = _dt.datetime(self.year, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(days=self.day_of_year - 1)
        return day + _dt.timedelta(microseconds=self.picoseconds_of_day // _PICOSECONDS_PER_MICROSECOND)


def decode_system_start(raw: bytes) -> SystemStart:
    cursor = Cursor(raw)
    cursor.definite_array(3)
    year, day, picos = cursor.uint(), cursor.uint(), cursor.uint()
    cursor.expect_end()
    try:
        return SystemStart(year, day, picos)
    except ValueError as exc:
        raise CborError(f"system start: {exc}") from None


def encode_system_start(start: SystemStart) -> bytes:
    return w.array_header(3) + w.uint(start.year) + w.uint(start.day_of_year) + w.uint(start.picoseconds_of_day)


# -- GetCurrentEra --------------------------------------------------------------------------


def decode_current_era(raw: bytes) -> int:
    """The era index (``EraIndex`` is written as its number)."""
    cursor = Cursor(raw)
    era = cursor.uint(0xFF)
    cursor.expect_end()
    return era


def encode_current_era(era: int) -> bytes:
    return w.uint(era)


# -- QueryIfCurrent -------------------------------------------------------------------------


class EraMismatch(Exception):
    """A ``QueryIfCurrent`` reached a ledger in another era than the query named."""

    def __init__(self, query_era: int, query_era_name: str, ledger_era: int, ledger_era_name: str) -> None:
        super().__init__(f"era mismatch: the query was for era {query_era_name} ({query_era}), "
                         f"but the ledger is in era {ledger_era_name} ({ledger_era})")
        self.query_era = query_era
        self.query_era_name = query_era_name
        self.ledger_era = ledger_era
        self.ledger_era_name = ledger_era_name


def _era_info(cursor: Cursor) -> tuple[int, str]:
    cursor.definite_array(2)
    index = cursor.uint(0xFF)
    return index, cursor.text()


def unwrap_if_current(raw: bytes) -> bytes:
    """The raw value inside ``[value]``; :class:`EraMismatch` for ``[era1, era2]``."""
    cursor = Cursor(raw)
    length = cursor.definite_array()
    if length == 1:
        value = cursor.raw_item()
        cursor.expect_end()
        return value
    if length == 2:
        query_era, query_name = _era_info(cursor)
        ledger_era, ledger_name = _era_info(cursor)
        cursor.expect_end()
        raise EraMismatch(query_era, query_name, ledger_era, ledger_name)
    raise CborError(f"a QueryIfCurrent result has 1 or 2 items, got {length}")


def encode_if_current(value: bytes) -> bytes:
    return w.array_header(1) + w.check_item(value, "result value")


def encode_era_mismatch(query_era: int, ledger_era: int) -> bytes:
    def info(index: int) -> bytes:
        return w.array_header(2) + w.uint(index) + w.text(era_name(index))

    return w.array_header(2) + info(query_era) + info(ledger_era)


# -- GetEpochNo -----------------------------------------------------------------------------


def decode_epoch_no(raw: bytes) -> int:
    cursor = Cursor(raw)
    epoch = cursor.uint()
    cursor.expect_end()
    return epoch


def encode_epoch_no(epoch: int) -> bytes:
    return w.uint(epoch)


# -- GetStakeSnapshots ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PoolSnapshot:
    """One pool's stake in lovelace in the mark, set and go snapshots."""

    mark: int
    set: int
    go: int


@dataclass(frozen=True, slots=True)
class StakeSnapshots:
    """``StakeSnapshots``: every pool's snapshot and the three totals."""

    pools: Mapping[bytes, PoolSnapshot]
    mark_total: int
    set_total: int
    go_total: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "pools", MappingProxyType(dict(self.pools)))


def _pool_snapshot(cursor: Cursor) -> PoolSnapshot:
    cursor.definite_array(3)
    return PoolSnapshot(cursor.uint(), cursor.uint(), cursor.uint())


def decode_stake_snapshots(raw: bytes) -> StakeSnapshots:
    """``[{poolId => [mark, set, go]}, markTotal, setTotal, goTotal]``; the map definite or not."""
    cursor = Cursor(raw)
    cursor.definite_array(4)
    count = cursor.map_header()
    pools: dict[bytes, PoolSnapshot] = {}

    def entry() -> None:
        pool_id = cursor.bytes(POOL_ID_SIZE)
        if pool_id in pools:
            raise CborError(f"pool {pool_id.hex()} appears twice in the stake snapshot")
        pools[pool_id] = _pool_snapshot(cursor)

    if count is None:
        while not cursor.at_break():
            entry()
        cursor.read_break()
    else:
        for _ in range(count):
            entry()
    totals = cursor.uint(), cursor.uint(), cursor.uint()
    cursor.expect_end()
    return StakeSnapshots(pools, *totals)


def encode_stake_snapshots(snapshots: StakeSnapshots, *, indefinite: bool | None = None) -> bytes:
    """The result as cardano-ledger writes it; ``indefinite`` None follows the ledger's rule."""
    pools = snapshots.pools
    if indefinite is None:
        indefinite = len(pools) > LEDGER_DEFINITE_MAP_MAX
    parts = [w.array_header(4), b"\xbf" if indefinite else w.head(5, len(pools))]
    for pool_id in sorted(pools):
        if len(pool_id) != POOL_ID_SIZE:
            raise ValueError(f"a pool id is {POOL_ID_SIZE} bytes, got {len(pool_id)}")
        stake = pools[pool_id]
        parts += [w.head(2, len(pool_id)), pool_id,
                  w.array_header(3), w.uint(stake.mark), w.uint(stake.set), w.uint(stake.go)]
    if indefinite:
        parts.append(w.BREAK)
    parts += [w.uint(snapshots.mark_total), w.uint(snapshots.set_total), w.uint(snapshots.go_total)]
    return b"".join(parts)
