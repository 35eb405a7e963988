"""One round of stake queries against an acquired ledger state (docs/protocol/cardano-node-link.md 10.2).

The round follows the reference's sequence on one acquired volatile tip: the system start
(first round of a connection only), the current era, the epoch, the era history
(``GetInterpreter``, which says when that epoch ends), the stake snapshots, then release.
All queries of a round see the same ledger state, so the epoch, its end and the snapshot
belong together. The era index read from ``GetCurrentEra`` goes into the two
``QueryIfCurrent`` queries; a hard fork in between shows up as ``EraMismatch``.

The snapshot is only fetched when the caller wants it (first round of a connection, or a
new epoch): the set snapshot changes only at epoch boundaries, and on mainnet the answer
covers some three thousand pools, so fetching it on every round would be waste. The
reference's ledger-peers step is left out as docs/protocol/cardano-node-link.md 10.2 permits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from miniprotocols.local_state_query import (
    VOLATILE_TIP,
    Era,
    LocalStateQueryClient,
    StakeSnapshots,
    SystemStart,
    decode_current_era,
    decode_epoch_no,
    decode_interpreter,
    decode_stake_snapshots,
    decode_system_start,
    get_current_era,
    get_epoch_no,
    get_interpreter,
    get_stake_snapshots,
    get_system_start,
    unwrap_if_current,
)

from .errors import MalformedResult, UnsupportedEra

__all__ = ["RoundResult", "query_stake_round"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RoundResult:
    """What one round learned; ``system_start`` and ``snapshots`` only when asked for.

    ``epoch_end_ps`` is when ``epoch`` ends, in picoseconds after the system start, or None
    when the ledger cannot tell yet (the epoch's end lies past its forecast horizon).
    """

    era: int
    epoch: int
    system_start: SystemStart | None
    snapshots: StakeSnapshots | None
    epoch_end_ps: int | None = None


def _decoded(name: str, decode: Callable[[bytes], T], raw: bytes) -> T:
    try:
        return decode(raw)
    except ValueError as exc:
        raise MalformedResult(name, str(exc), raw) from None


async def query_stake_round(
    client: LocalStateQueryClient,
    *,
    with_system_start: bool,
    snapshot_wanted: Callable[[int], bool],
) -> RoundResult:
    """Run one round; ``snapshot_wanted(epoch)`` decides whether to fetch the snapshots.

    Raises ``AcquireFailed``, :class:`UnsupportedEra` (Byron), ``EraMismatch``,
    :class:`MalformedResult`, or the protocol and connection errors of the client. After
    an error the protocol is left where it stopped: the caller drops the connection.
    """
    async with client.acquired(VOLATILE_TIP):
        system_start = None
        if with_system_start:
            system_start = _decoded("GetSystemStart", decode_system_start, await client.query(get_system_start()))
        era = _decoded("GetCurrentEra", decode_current_era, await client.query(get_current_era()))
        if era == Era.BYRON:
            raise UnsupportedEra(era)
        epoch_result = _value_of("GetEpochNo", await client.query(get_epoch_no(era)))
        epoch = _decoded("GetEpochNo", decode_epoch_no, epoch_result)
        history = _decoded("GetInterpreter", decode_interpreter, await client.query(get_interpreter()))
        snapshots = None
        if snapshot_wanted(epoch):
            raw = _value_of("GetStakeSnapshots", await client.query(get_stake_snapshots(era)))
            snapshots = _decoded("GetStakeSnapshots", decode_stake_snapshots, raw)
    return RoundResult(era, epoch, system_start, snapshots, history.epoch_end(epoch))


def _value_of(name: str, raw: bytes) -> bytes:
    """The value of a ``QueryIfCurrent`` result; ``EraMismatch`` passes through untouched."""
    return _decoded(name, unwrap_if_current, raw)
