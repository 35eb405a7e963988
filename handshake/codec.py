"""Bytes to handshake messages and back, with the reference decoder's rules.

Encoding writes definite lengths, ascending keys and shortest integers, byte for byte
what the reference sends. Decoding is state-dependent (a tag-0 message is a proposal in
``StPropose`` and a reply to our own proposal in ``StConfirm``) and link-dependent:
version numbers the link does not know are skipped silently in tables, but known ones
must be strictly ascending. Version data stays raw; only its outer shape (one
well-formed item) is checked here.
"""

from __future__ import annotations

import cbor2

from ouroboros_mux.cbor import MAJOR_ARRAY, MAJOR_MAP, MAJOR_NINT, MAJOR_TEXT, MAJOR_UINT, CborError, Cursor

from .errors import HandshakeCodecError
from .links import HandshakeLink
from .messages import (HandshakeDecodeError, HandshakeMessage, MsgAcceptVersion, MsgProposeVersions,
                       MsgQueryReply, MsgRefuse, MsgReplyVersions, RawVersions, RefuseReason, Refused,
                       VersionMismatch)
from .states import State
from .version_data import encode_uint

__all__ = ["encode_message", "decode_message", "HandshakeCodec"]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

_TAG_PROPOSE, _TAG_ACCEPT, _TAG_REFUSE, _TAG_QUERY_REPLY = 0, 1, 2, 3
_REASON_MISMATCH, _REASON_DECODE_ERROR, _REASON_REFUSED = 0, 1, 2


def _array(n: int) -> bytes:
    return encode_uint(n, MAJOR_ARRAY)


def _text(text: str) -> bytes:
    data = text.encode("utf-8")
    return encode_uint(len(data), MAJOR_TEXT) + data


def _encode_versions(versions: RawVersions) -> bytes:
    out = bytearray(encode_uint(len(versions), MAJOR_MAP))
    for version, raw in versions:
        out += encode_uint(version)
        out += raw
    return bytes(out)


def _encode_reason(reason: RefuseReason) -> bytes:
    if isinstance(reason, VersionMismatch):
        return (_array(2) + encode_uint(_REASON_MISMATCH) + _array(len(reason.versions))
                + b"".join(encode_uint(v) for v in reason.versions))
    tag = _REASON_DECODE_ERROR if isinstance(reason, HandshakeDecodeError) else _REASON_REFUSED
    return _array(3) + encode_uint(tag) + encode_uint(reason.version) + _text(reason.text)


def encode_message(message: HandshakeMessage) -> bytes:
    """The exact bytes the reference would send for this message."""
    if isinstance(message, (MsgProposeVersions, MsgReplyVersions)):
        return _array(2) + encode_uint(_TAG_PROPOSE) + _encode_versions(message.versions)
    if isinstance(message, MsgAcceptVersion):
        return _array(3) + encode_uint(_TAG_ACCEPT) + encode_uint(message.version) + message.data
    if isinstance(message, MsgRefuse):
        return _array(2) + encode_uint(_TAG_REFUSE) + _encode_reason(message.reason)
    if isinstance(message, MsgQueryReply):
        return _array(2) + encode_uint(_TAG_QUERY_REPLY) + _encode_versions(message.versions)
    raise TypeError(f"not a handshake message: {message!r}")


def _read_int_term(cur: Cursor) -> int | None:
    """Read one item; return it if cborg would see a ``TInt``, else None (item skipped)."""
    major = cur.peek_major()
    start, end = cur.skip()
    if major not in (MAJOR_UINT, MAJOR_NINT):
        return None
    value = cbor2.loads(bytes(cur.buf[start:end]))
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _read_known_version(cur: Cursor, link: HandshakeLink, what: str) -> int:
    version = _read_int_term(cur)
    if version is None or not link.knows(version):
        raise HandshakeCodecError(f"{what}: not a recognised {link.name} version number")
    return version


def _decode_versions(cur: Cursor, link: HandshakeLink) -> RawVersions:
    if cur.peek_major() != MAJOR_MAP:
        raise HandshakeCodecError("version table is not a map")
    count = cur.map_header()
    if count is None:
        raise HandshakeCodecError("version table must be a definite-length map")
    versions: list[tuple[int, bytes]] = []
    for _ in range(count):
        version = _read_int_term(cur)
        raw = cur.raw_item()
        if version is None or not link.knows(version):
            continue
        if versions and version <= versions[-1][0]:
            raise HandshakeCodecError("codecHandshake.Propose: unordered version")
        versions.append((version, raw))
    return tuple(versions)


def _decode_reason(cur: Cursor, link: HandshakeLink) -> RefuseReason:
    length = cur.definite_array()
    tag = cur.uint()
    if tag == _REASON_MISMATCH and length == 2:
        count = cur.definite_array()
        listed = (_read_int_term(cur) for _ in range(count))
        return VersionMismatch(tuple(v for v in listed if v is not None))
    if tag in (_REASON_DECODE_ERROR, _REASON_REFUSED) and length == 3:
        version = _read_known_version(cur, link, "refuse reason")
        text = cur.text()
        cls = HandshakeDecodeError if tag == _REASON_DECODE_ERROR else Refused
        return cls(version, text)
    raise HandshakeCodecError(f"decode RefuseReason: unknown tag {tag} with {length} items")


def decode_message(link: HandshakeLink, state: State, raw: bytes) -> HandshakeMessage:
    """Decode one complete message received in ``state``.

    Raises :class:`HandshakeCodecError` for anything the reference decoder rejects,
    including messages that exist but not in this state.
    """
    cur = Cursor(raw)
    try:
        length = cur.definite_array()
        tag = cur.uint()
        key = (state, tag, length)
        if key == (State.PROPOSE, _TAG_PROPOSE, 2):
            message: HandshakeMessage = MsgProposeVersions(_decode_versions(cur, link))
        elif key == (State.CONFIRM, _TAG_PROPOSE, 2):
            message = MsgReplyVersions(_decode_versions(cur, link))
        elif key == (State.CONFIRM, _TAG_ACCEPT, 3):
            version = _read_known_version(cur, link, "codecHandshake.MsgAcceptVersion")
            message = MsgAcceptVersion(version, cur.raw_item())
        elif key == (State.CONFIRM, _TAG_REFUSE, 2):
            message = MsgRefuse(_decode_reason(cur, link))
        elif key == (State.CONFIRM, _TAG_QUERY_REPLY, 2):
            message = MsgQueryReply(_decode_versions(cur, link))
        else:
            raise HandshakeCodecError(f"codecHandshake ({state.value}) unexpected key ({tag}, {length})")
        cur.expect_end()
    except CborError as exc:
        raise HandshakeCodecError(f"malformed handshake message in {state.value}: {exc}") from None
    return message


class HandshakeCodec:
    """The engine's :class:`~protocol_engine.spec.Codec` for one link's handshake.

    Decoding needs the link (which version numbers exist); encoding does not. Errors are the
    handshake's own :class:`HandshakeCodecError`, which the engine's driver passes through
    unchanged, so a handshake fails with the same error whichever way it is driven.
    """

    __slots__ = ("link",)

    def __init__(self, link: HandshakeLink) -> None:
        self.link = link

    @staticmethod
    def encode(message: HandshakeMessage) -> bytes:
        return encode_message(message)

    def decode(self, state: State, raw: bytes) -> HandshakeMessage:
        return decode_message(self.link, state, raw)

    #: A framed message decodes the same way (and naming it spares the driver's lookup).
    decode_framed = decode
