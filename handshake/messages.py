"""Handshake messages and refuse reasons, as values.

Version data travels as raw CBOR (``bytes``) inside messages: the reference keeps each
proposed entry as an undecoded term until it has chosen a version, so a malformed entry
for a version nobody picks never fails the handshake. Tables inside messages are tuples
of ``(version, raw_data)`` pairs in strictly ascending version order, the only order the
wire allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Union

from .links import VersionTable

__all__ = [
    "VersionMismatch",
    "HandshakeDecodeError",
    "Refused",
    "RefuseReason",
    "MsgProposeVersions",
    "MsgReplyVersions",
    "MsgAcceptVersion",
    "MsgRefuse",
    "MsgQueryReply",
    "HandshakeMessage",
    "raw_versions",
]

RawVersions = tuple[tuple[int, bytes], ...]


def raw_versions(table: VersionTable) -> RawVersions:
    """A local table encoded for the wire: ascending versions, each with its data's CBOR."""
    return tuple((version, table[version].to_cbor()) for version in sorted(table))


def _check_ascending(versions: RawVersions) -> None:
    numbers = [v for v, _ in versions]
    if any(a >= b for a, b in zip(numbers, numbers[1:])):
        raise ValueError(f"version numbers must be strictly ascending, got {numbers}")


@dataclass(frozen=True)
class VersionMismatch:
    """No common version; lists the versions the refusing side knows."""

    versions: tuple[int, ...]

    def describe(self) -> str:
        return f"no common version (the server knows {list(self.versions)})"


@dataclass(frozen=True)
class HandshakeDecodeError:
    """The chosen version's data did not decode."""

    version: int
    text: str

    def describe(self) -> str:
        return f"version {self.version} data did not decode: {self.text}"


@dataclass(frozen=True)
class Refused:
    """The chosen version's data decoded but was not acceptable (e.g. another network magic)."""

    version: int
    text: str

    def describe(self) -> str:
        return f"version {self.version} refused: {self.text}"


RefuseReason = Union[VersionMismatch, HandshakeDecodeError, Refused]


class _VersionsMessage:
    versions: RawVersions

    def __post_init__(self) -> None:
        _check_ascending(self.versions)

    @property
    def table(self) -> Mapping[int, bytes]:
        return dict(self.versions)

    @classmethod
    def from_table(cls, table: VersionTable):
        return cls(raw_versions(table))


@dataclass(frozen=True)
class MsgProposeVersions(_VersionsMessage):
    """``[0, versionTable]`` from the client."""

    versions: RawVersions


@dataclass(frozen=True)
class MsgReplyVersions(_VersionsMessage):
    """A proposal received in ``StConfirm``: the other side proposed too (simultaneous open).

    Same bytes as :class:`MsgProposeVersions`; only the state it arrives in differs.
    """

    versions: RawVersions


@dataclass(frozen=True)
class MsgAcceptVersion:
    """``[1, version, versionData]``: the server's choice and the agreed data."""

    version: int
    data: bytes


@dataclass(frozen=True)
class MsgRefuse:
    """``[2, refuseReason]``."""

    reason: RefuseReason


@dataclass(frozen=True)
class MsgQueryReply(_VersionsMessage):
    """``[3, versionTable]``: the server's whole table, sent instead of accepting when asked to."""

    versions: RawVersions


HandshakeMessage = Union[MsgProposeVersions, MsgReplyVersions, MsgAcceptVersion, MsgRefuse, MsgQueryReply]
