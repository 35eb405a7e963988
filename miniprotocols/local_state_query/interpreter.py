"""The answer to ``GetInterpreter``: the era history, and when the current epoch ends.

The reference sleeps from one query round to the next epoch boundary, which it computes
from this history (docs/protocol/cardano-node-link.md 10.2 step 5). A Cardano chain's epochs do not all have the same
length (Byron epochs are 21 600 slots of 20 s, Shelley-based ones 432 000 slots of 1 s on
mainnet), so the boundary cannot be derived from the Shelley genesis; the history gives,
for each era, where it starts, where it ends if known, and its epoch size and slot length.

Shape (``ouroboros-consensus``: ``HardFork/History/Summary.hs``, ``EraParams.hs``): a list
(written indefinite) of ``[start, end, params]``; a bound is ``[time, slot, epoch]`` or, since
the Peras work, ``[time, slot, epoch, perasRound]``; ``end`` is a bound or ``null`` (the last
era's end is unknown); params are ``[epochSize, slotLengthMs, safeZone, genesisWindow]`` with
an optional fifth item, the Peras round length. ``time`` counts picoseconds since the system
start, so on a long-lived chain it passes 2**64 and arrives as a bignum (tag 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from ouroboros_mux.cbor import CborError, Cursor

from ..framework import cbor_write as w

__all__ = [
    "PICOSECONDS_PER_SECOND",
    "Bound",
    "EraParams",
    "EraSummary",
    "Interpreter",
    "decode_interpreter",
    "encode_interpreter",
]

PICOSECONDS_PER_SECOND = 10**12
_PICOSECONDS_PER_MILLISECOND = 10**9
_NULL = 0xF6
_TAG_POSITIVE_BIGNUM = 2


@dataclass(frozen=True, slots=True)
class Bound:
    """A point where an era starts or ends: time since system start, slot, epoch."""

    time_ps: int
    slot: int
    epoch: int
    #: The next Peras round; None when the bound was written with three items.
    peras_round: int | None = None


@dataclass(frozen=True, slots=True)
class EraParams:
    epoch_size: int
    slot_length_ms: int
    #: Slots from the tip within which no era transition can appear; None for "unsafe, indefinite".
    safe_zone: int | None
    genesis_window: int
    peras_round_length: int | None = None


@dataclass(frozen=True, slots=True)
class EraSummary:
    start: Bound
    end: Bound | None
    params: EraParams

    def holds_epoch(self, epoch: int) -> bool:
        return self.start.epoch <= epoch and (self.end is None or epoch < self.end.epoch)


@dataclass(frozen=True, slots=True)
class Interpreter:
    """The era history as cardano-node knows it at the acquired ledger state."""

    eras: tuple[EraSummary, ...]

    def epoch_end(self, epoch: int) -> int | None:
        """Picoseconds from the system start to the end of ``epoch``; None past the horizon.

        The end is the time of the epoch's last slot plus that slot's length, as the
        reference computes it (``epochInfoRange``, ``epochInfoSlotToRelativeTime``,
        ``epochInfoSlotLength``). An epoch no era summary covers lies beyond what the
        ledger can forecast: the reference then sleeps a day and asks again.
        """
        for era in self.eras:
            if era.holds_epoch(epoch):
                params = era.params
                slots = (epoch + 1 - era.start.epoch) * params.epoch_size
                return era.start.time_ps + slots * params.slot_length_ms * _PICOSECONDS_PER_MILLISECOND
        return None


# -- decoding -------------------------------------------------------------------------------


def _integer(cursor: Cursor) -> int:
    """A non-negative Haskell ``Integer``: a uint, or a positive bignum once beyond 64 bits."""
    if cursor.peek_major() == 6:
        tag = cursor.tag()
        if tag != _TAG_POSITIVE_BIGNUM:
            raise CborError(f"expected an unsigned integer or bignum, got tag {tag}")
        return int.from_bytes(cursor.bytes(), "big")
    return cursor.uint()


def _bound(cursor: Cursor) -> Bound:
    length = cursor.definite_array()
    if length not in (3, 4):
        raise CborError(f"an era bound has 3 or 4 items, got {length}")
    time_ps, slot, epoch = _integer(cursor), cursor.uint(), cursor.uint()
    return Bound(time_ps, slot, epoch, cursor.uint() if length == 4 else None)


def _safe_zone(cursor: Cursor) -> int | None:
    length = cursor.definite_array()
    tag = cursor.uint(0xFF)
    if (length, tag) == (1, 1):
        return None
    if (length, tag) != (3, 0):
        raise CborError(f"invalid safe zone (size {length}, tag {tag})")
    safe_from_tip = cursor.uint()
    # The obsolete "safe before epoch", still written for compatibility: [0] or [1, epoch].
    before_length = cursor.definite_array()
    before_tag = cursor.uint(0xFF)
    if (before_length, before_tag) == (2, 1):
        cursor.uint()
    elif (before_length, before_tag) != (1, 0):
        raise CborError(f"invalid safe-before-epoch (size {before_length}, tag {before_tag})")
    return safe_from_tip


def _era_params(cursor: Cursor) -> EraParams:
    length = cursor.definite_array()
    if length not in (4, 5):
        raise CborError(f"era parameters have 4 or 5 items, got {length}")
    epoch_size, slot_length = cursor.uint(), _integer(cursor)
    safe_zone, genesis_window = _safe_zone(cursor), cursor.uint()
    peras = cursor.uint() if length == 5 else None
    if epoch_size == 0 or slot_length == 0:
        raise CborError(f"era with epoch size {epoch_size} and slot length {slot_length} ms")
    return EraParams(epoch_size, slot_length, safe_zone, genesis_window, peras)


def _era_summary(cursor: Cursor) -> EraSummary:
    cursor.definite_array(3)
    start = _bound(cursor)
    if cursor.pos < cursor.end and cursor.buf[cursor.pos] == _NULL:
        cursor.pos += 1
        end = None
    else:
        end = _bound(cursor)
    return EraSummary(start, end, _era_params(cursor))


def decode_interpreter(raw: bytes) -> Interpreter:
    """The era summaries, oldest first (the list definite or indefinite; at least one era)."""
    cursor = Cursor(raw)
    count = cursor.array_header()
    eras: list[EraSummary] = []
    if count is None:
        while not cursor.at_break():
            eras.append(_era_summary(cursor))
        cursor.read_break()
    else:
        eras.extend(_era_summary(cursor) for _ in range(count))
    cursor.expect_end()
    if not eras:
        raise CborError("an era history has at least one era")
    return Interpreter(tuple(eras))


# -- encoding (for the project's test peer) -------------------------------------------------


def _encode_integer(value: int) -> bytes:
    if value <= 0xFFFFFFFFFFFFFFFF:
        return w.uint(value)
    digits = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return w.head(6, _TAG_POSITIVE_BIGNUM) + w.head(2, len(digits)) + digits


def _encode_bound(bound: Bound) -> bytes:
    items = [_encode_integer(bound.time_ps), w.uint(bound.slot), w.uint(bound.epoch)]
    if bound.peras_round is not None:
        items.append(w.uint(bound.peras_round))
    return w.array_header(len(items)) + b"".join(items)


def _encode_params(params: EraParams) -> bytes:
    if params.safe_zone is None:
        safe_zone = w.array_header(1) + w.uint(1)
    else:
        safe_zone = w.array_header(3) + w.uint(0) + w.uint(params.safe_zone) + w.array_header(1) + w.uint(0)
    items = [w.uint(params.epoch_size), _encode_integer(params.slot_length_ms), safe_zone,
             w.uint(params.genesis_window)]
    if params.peras_round_length is not None:
        items.append(w.uint(params.peras_round_length))
    return w.array_header(len(items)) + b"".join(items)


def encode_interpreter(interpreter: Interpreter) -> bytes:
    """The history as ouroboros-consensus writes it: an indefinite list of era summaries."""
    parts = [b"\x9f"]
    for era in interpreter.eras:
        end = bytes([_NULL]) if era.end is None else _encode_bound(era.end)
        parts += [w.array_header(3), _encode_bound(era.start), end, _encode_params(era.params)]
    parts.append(w.BREAK)
    return b"".join(parts)
