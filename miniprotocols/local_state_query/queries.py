"""The Cardano queries the DMQ node asks, as exact bytes, and their parser for servers.

A query to cardano-node is a ``Query (CardanoBlock c)``: ``[1]`` asks for the system start,
``[0, q]`` wraps a block query of the hard-fork combinator (HFC). An HFC block query is
either ``[2, q]`` about the hard-fork history itself (current era, interpreter) or
``[0, [era, q]]`` (``QueryIfCurrent``): a Shelley-based ledger query valid only if the
ledger is still in ``era`` when it is answered. The era index therefore comes from a
``GetCurrentEra`` asked just before, in the same acquired state. These encodings are fixed by
``ouroboros-consensus`` (``Ouroboros/Consensus/Ledger/Query.hs``, the HFC's
``SerialiseNodeToClient``, Shelley ``Query.hs``); docs/protocol/cardano-node-link.md 10.2 lists the bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ouroboros_mux.cbor import Cursor

from ..framework import CodecError
from ..framework import cbor_write as w

__all__ = [
    "Era",
    "era_name",
    "GET_EPOCH_NO",
    "GET_STAKE_SNAPSHOTS",
    "GET_LEDGER_PEER_SNAPSHOT",
    "GetSystemStart",
    "GetCurrentEra",
    "GetInterpreter",
    "QueryIfCurrent",
    "CardanoQuery",
    "get_system_start",
    "get_current_era",
    "get_interpreter",
    "get_epoch_no",
    "get_stake_snapshots",
    "get_ledger_peer_snapshot",
    "parse_query",
]


class Era(enum.IntEnum):
    """The eras of the Cardano hard-fork combinator, by their index on the wire."""

    BYRON = 0
    SHELLEY = 1
    ALLEGRA = 2
    MARY = 3
    ALONZO = 4
    BABBAGE = 5
    CONWAY = 6
    DIJKSTRA = 7

    @property
    def display_name(self) -> str:
        """The era's ``singleEraName`` (``"Conway"``), as cardano-node spells it."""
        return self.name.capitalize()


def era_name(index: int) -> str:
    """A readable name for an era index, including indexes newer than this code."""
    try:
        return Era(index).display_name
    except ValueError:
        return f"era #{index}"


#: Shelley ledger query tags (``encodeShelleyQuery``).
GET_EPOCH_NO = 1
GET_STAKE_SNAPSHOTS = 20
GET_LEDGER_PEER_SNAPSHOT = 34
#: ``GetLedgerPeerSnapshot``'s kind: all ledger peers (``SingAllLedgerPeers``).
ALL_LEDGER_PEERS = 0
#: ``Maybe`` as cardano-binary writes it: ``Nothing`` is ``[]``.
_NOTHING = w.array_header(0)

_SYSTEM_START = w.array_header(1) + w.uint(1)
_BLOCK_QUERY = w.array_header(2) + w.uint(0)
_HARD_FORK_QUERY = w.array_header(2) + w.uint(2)
_QUERY_IF_CURRENT = w.array_header(2) + w.uint(0)


@dataclass(frozen=True, slots=True)
class GetSystemStart:
    """``[1]``: the chain's system start (answered as a UTC time)."""

    def to_cbor(self) -> bytes:
        return _SYSTEM_START


@dataclass(frozen=True, slots=True)
class GetCurrentEra:
    """``[0, [2, [1]]]``: the index of the era the acquired ledger state is in."""

    def to_cbor(self) -> bytes:
        return _BLOCK_QUERY + _HARD_FORK_QUERY + w.array_header(1) + w.uint(1)


@dataclass(frozen=True, slots=True)
class GetInterpreter:
    """``[0, [2, [0]]]``: the hard-fork history (what slot and epoch times are)."""

    def to_cbor(self) -> bytes:
        return _BLOCK_QUERY + _HARD_FORK_QUERY + w.array_header(1) + w.uint(0)


@dataclass(frozen=True, slots=True)
class QueryIfCurrent:
    """``[0, [0, [era, [tag, argument?]]]]``: a Shelley ledger query for the ledger in ``era``.

    ``argument`` is the raw CBOR of the query's single argument, None for queries without one.
    """

    era: int
    tag: int
    argument: bytes | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.era <= 0xFF:
            raise ValueError(f"an era index is a word8, got {self.era}")
        if self.argument is not None:
            w.check_item(self.argument, "query argument")

    def to_cbor(self) -> bytes:
        if self.argument is None:
            shelley = w.array_header(1) + w.uint(self.tag)
        else:
            shelley = w.array_header(2) + w.uint(self.tag) + self.argument
        return _BLOCK_QUERY + _QUERY_IF_CURRENT + w.array_header(2) + w.uint(self.era) + shelley


CardanoQuery = GetSystemStart | GetCurrentEra | GetInterpreter | QueryIfCurrent


def get_system_start() -> bytes:
    return GetSystemStart().to_cbor()


def get_current_era() -> bytes:
    return GetCurrentEra().to_cbor()


def get_interpreter() -> bytes:
    return GetInterpreter().to_cbor()


def get_epoch_no(era: int) -> bytes:
    return QueryIfCurrent(era, GET_EPOCH_NO).to_cbor()


def get_stake_snapshots(era: int) -> bytes:
    """``GetStakeSnapshots Nothing``: every pool's mark, set and go stake."""
    return QueryIfCurrent(era, GET_STAKE_SNAPSHOTS, _NOTHING).to_cbor()


def get_ledger_peer_snapshot(era: int) -> bytes:
    """``GetLedgerPeerSnapshot AllLedgerPeers`` (cardano-node 10.7 and later)."""
    return QueryIfCurrent(era, GET_LEDGER_PEER_SNAPSHOT, w.uint(ALL_LEDGER_PEERS)).to_cbor()


def parse_query(raw: bytes) -> CardanoQuery:
    """The typed form of a query's bytes, for a server answering them.

    Only the shapes above are understood; anything else (other top-level or hard-fork
    queries, ``QueryAnytime``) is a :class:`CodecError`, as a query this node never asks.
    """
    cursor = Cursor(raw)
    length = cursor.definite_array()
    tag = cursor.uint()
    if (length, tag) == (1, 1):
        query: CardanoQuery = GetSystemStart()
    elif (length, tag) == (2, 0):
        query = _parse_hfc_query(cursor)
    else:
        raise CodecError(f"unsupported query (length {length}, tag {tag})")
    cursor.expect_end()
    return query


def _parse_hfc_query(cursor: Cursor) -> CardanoQuery:
    cursor.definite_array(2)
    kind = cursor.uint()
    if kind == 2:
        cursor.definite_array(1)
        which = cursor.uint()
        if which == 1:
            return GetCurrentEra()
        if which == 0:
            return GetInterpreter()
        raise CodecError(f"unsupported hard-fork query {which}")
    if kind != 0:
        raise CodecError(f"unsupported block query kind {kind}")
    cursor.definite_array(2)
    era = cursor.uint(0xFF)
    length = cursor.definite_array()
    if length not in (1, 2):
        raise CodecError(f"a Shelley query has 1 or 2 items, got {length}")
    tag = cursor.uint()
    argument = cursor.raw_item() if length == 2 else None
    return QueryIfCurrent(era, tag, argument)
