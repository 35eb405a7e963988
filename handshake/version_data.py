"""Version data: what each side states about itself next to a version number.

Two shapes exist. DMQ node-to-node data ``[networkMagic, initiatorOnly, peerSharing,
query]`` and node-to-client data ``[networkMagic, query]`` (the DMQ N2C socket and the
Cardano N2C link to cardano-node share it). Each class knows its CBOR form, the
reference decoder's exact failure texts, its Haskell ``show`` (used inside refuse
texts, so logs read the same as the reference's) and how it combines with the other
side's data (:func:`acceptable`).

Decoding follows the reference's match on cborg terms: a definite-length list of the
exact arity whose integers are ``TInt`` (within the signed 64-bit range) and whose
flags are booleans; anything else is ``"unknown encoding: <term>"``. Range checks come
after the shape matches: the magic first, then peer sharing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

import cbor2

from ouroboros_mux.cbor import MAJOR_ARRAY, MAJOR_NINT, MAJOR_UINT, CborError, Cursor, write_head

from .magics import MAX_NETWORK_MAGIC
from .term_text import show_term

__all__ = ["NodeToNodeVersionData", "NodeToClientVersionData", "VersionData", "acceptable",
           "encode_uint", "VersionDataError", "VersionDataMismatch"]

class VersionDataError(ValueError):
    """Version data that does not decode; ``text`` is what the reference would send back."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class VersionDataMismatch(ValueError):
    """Both sides' version data decoded but cannot be combined (different network magic)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text



_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def encode_uint(value: int, major: int = MAJOR_UINT) -> bytes:
    """Shortest-form CBOR head (the reference's encoders always write the shortest form)."""
    return write_head(major, value)


_FALSE, _TRUE = b"\xf4", b"\xf5"


def _bool(flag: bool) -> bytes:
    return _TRUE if flag else _FALSE


def _match_fields(raw: bytes, kinds: str) -> list[int | bool] | None:
    """The field values if ``raw`` is a definite list of exactly these kinds, else None.

    ``kinds`` holds one letter per field: ``i`` for a cborg ``TInt``, ``b`` for a bool.
    """
    cur = Cursor(raw)
    try:
        if cur.peek_major() != MAJOR_ARRAY or cur.array_header() != len(kinds):
            return None
        values: list[int | bool] = []
        for kind in kinds:
            if kind == "b":
                values.append(cur.bool())
                continue
            if cur.peek_major() not in (MAJOR_UINT, MAJOR_NINT):
                return None
            start, end = cur.skip()
            number = cbor2.loads(raw[start:end])
            if not _INT64_MIN <= number <= _INT64_MAX:
                return None  # cborg reads it as TInteger, which the reference does not match
            values.append(number)
        cur.expect_end()
    except CborError:
        return None
    return values


def _unknown_encoding(raw: bytes) -> VersionDataError:
    try:
        shown = show_term(raw)
    except CborError as exc:
        shown = f"<malformed CBOR: {exc}>"
    return VersionDataError(f"unknown encoding: {shown}")


def _show_magic(magic: int) -> str:
    return f"NetworkMagic {magic}"


@dataclass(frozen=True)
class NodeToNodeVersionData:
    """DMQ node-to-node version data (versions 1 and 2).

    ``initiator_only`` is the diffusion mode: a node that only dials out says True and
    the connection then carries data in one direction only. ``peer_sharing`` is the
    wire's 0/1 as a bool.
    """

    network_magic: int
    initiator_only: bool = False
    peer_sharing: bool = True
    query: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.network_magic <= MAX_NETWORK_MAGIC:
            raise ValueError(f"network magic {self.network_magic} outside 0..{MAX_NETWORK_MAGIC}")

    @property
    def duplex(self) -> bool:
        """Whether both sides run responders (the agreed mode is InitiatorAndResponder)."""
        return not self.initiator_only

    def to_cbor(self) -> bytes:
        return (b"\x84" + encode_uint(self.network_magic) + _bool(self.initiator_only)
                + encode_uint(int(self.peer_sharing)) + _bool(self.query))

    @classmethod
    def from_cbor(cls, raw: bytes) -> "NodeToNodeVersionData":
        fields = _match_fields(raw, "ibib")
        if fields is None:
            raise _unknown_encoding(raw)
        magic, initiator_only, peer_sharing, query = fields
        if not 0 <= magic <= MAX_NETWORK_MAGIC:
            raise VersionDataError(f"networkMagic out of bound: {magic}")
        if peer_sharing not in (0, 1):
            raise VersionDataError(f"peerSharing is out of bound: {peer_sharing}")
        return cls(magic, bool(initiator_only), peer_sharing == 1, bool(query))

    def haskell_show(self) -> str:
        mode = "InitiatorOnlyDiffusionMode" if self.initiator_only else "InitiatorAndResponderDiffusionMode"
        sharing = "PeerSharingEnabled" if self.peer_sharing else "PeerSharingDisabled"
        return (f"NodeToNodeVersionData {{networkMagic = {_show_magic(self.network_magic)}, "
                f"diffusionMode = {mode}, peerSharing = {sharing}, query = {self.query}}}")

    def accept(self, remote: "NodeToNodeVersionData") -> "NodeToNodeVersionData":
        """Combine with the remote side's data, or raise :class:`VersionDataMismatch`.

        InitiatorOnly wins (the reference takes the ``min`` of the modes); peer sharing
        needs both sides to want it and a duplex connection to run on.
        """
        if self.network_magic != remote.network_magic:
            raise VersionDataMismatch(f"version data mismatch: {self.haskell_show()} /= {remote.haskell_show()}")
        initiator_only = self.initiator_only or remote.initiator_only
        return replace(
            self,
            initiator_only=initiator_only,
            peer_sharing=self.peer_sharing and remote.peer_sharing and not initiator_only,
            query=self.query or remote.query,
        )


@dataclass(frozen=True)
class NodeToClientVersionData:
    """Node-to-client version data: the DMQ N2C socket (4097) and the Cardano N2C link (V16..V23)."""

    network_magic: int
    query: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.network_magic <= MAX_NETWORK_MAGIC:
            raise ValueError(f"network magic {self.network_magic} outside 0..{MAX_NETWORK_MAGIC}")

    def to_cbor(self) -> bytes:
        return b"\x82" + encode_uint(self.network_magic) + _bool(self.query)

    @classmethod
    def from_cbor(cls, raw: bytes) -> "NodeToClientVersionData":
        fields = _match_fields(raw, "ib")
        if fields is None:
            raise _unknown_encoding(raw)
        magic, query = fields
        if not 0 <= magic <= MAX_NETWORK_MAGIC:
            raise VersionDataError(f"networkMagic out of bound: {magic}")
        return cls(magic, bool(query))

    def haskell_show(self) -> str:
        return (f"NodeToClientVersionData {{networkMagic = {_show_magic(self.network_magic)}, "
                f"query = {self.query}}}")

    def accept(self, remote: "NodeToClientVersionData") -> "NodeToClientVersionData":
        """Combine with the remote side's data, or raise :class:`VersionDataMismatch`."""
        if self.network_magic != remote.network_magic:
            raise VersionDataMismatch(f"version data mismatch: {self.haskell_show()} /= {remote.haskell_show()}")
        return replace(self, query=self.query or remote.query)


VersionData = Union[NodeToNodeVersionData, NodeToClientVersionData]


def acceptable(local: VersionData, remote: VersionData) -> VersionData:
    """The agreed data of ``local`` (this side) and ``remote``, or :class:`VersionDataMismatch`.

    Both must be of the same kind: a link's versions always carry one data shape.
    """
    if type(local) is not type(remote):
        raise TypeError(f"cannot combine {type(local).__name__} with {type(remote).__name__}")
    return local.accept(remote)  # type: ignore[arg-type]
