"""The CDDL of docs/topics-design.md 4.2: strict decoders that keep received bytes, and the encoders.

Every decoder takes bytes and returns a frozen record holding those exact bytes next to the
fields it read, so that ids, signatures and forwarding use what arrived. Structural problems
are ``malformed``, encodings that are not deterministic are ``non_canonical`` and sizes over a
limit are ``too_large`` (docs/topics-design.md 2.10); the first failure wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ouroboros_mux.cbor import read_head
from topics import envelope as common_envelope
from topics.cbor import CborMalformed, CborNonCanonical, decode, decode_item, encode, head
from topics.reasons import MALFORMED, NON_CANONICAL, TOO_LARGE, UNKNOWN_TOPIC

from .errors import UpsycleReject
from .identity import ID_SIZE, KEY_SIZE, SIG_SIZE, signed_part, upsycle_id
from .params import TAG, UpsycleParams
from .timebase import UINT32_MAX, minutes_to_posix

__all__ = [
    "UNICAST",
    "MULTICAST",
    "KIND_ROUTED",
    "KIND_PULL",
    "KIND_REISSUE",
    "KIND_ADVERTISEMENT",
    "RoutedMessage",
    "PullRequest",
    "Reissue",
    "PeerAdvertisement",
    "Envelope",
    "decode_routed",
    "decode_pull_request",
    "decode_reissue",
    "decode_advertisement",
    "decode_envelope",
    "encode_unicast",
    "encode_multicast",
    "encode_envelope",
    "encode_pull_request",
    "encode_reissue",
    "encode_advertisement",
    "advertisement_preimage",
]

UNICAST = 0
MULTICAST = 1
KIND_ROUTED = 0
KIND_PULL = 1
KIND_REISSUE = 2
KIND_ADVERTISEMENT = 3

_UNICAST_KEYS = frozenset({"src", "dst", "ttl", "exp"})
_MULTICAST_KEYS = frozenset({"grp", "ttl", "exp", "sn"})
_ADVERTISEMENT_KEYS = frozenset({"id", "addr", "svcs", "grps", "rev", "ttl", "exp", "sig"})
_DEFAULTS = UpsycleParams()


def _strict(raw: bytes, what: str) -> Any:
    try:
        return decode(raw)
    except CborMalformed as exc:
        raise UpsycleReject(MALFORMED, f"{what}: {exc}") from None
    except CborNonCanonical as exc:
        raise UpsycleReject(NON_CANONICAL, f"{what}: {exc}") from None


def _malformed(detail: str) -> UpsycleReject:
    return UpsycleReject(MALFORMED, detail)


def _is_uint(value: Any, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _key(value: Any, what: str) -> bytes:
    if not isinstance(value, bytes) or len(value) != KEY_SIZE:
        raise _malformed(f"{what} must be a {KEY_SIZE}-byte key")
    return value


def _uint32(value: Any, what: str) -> int:
    if not _is_uint(value, UINT32_MAX):
        raise _malformed(f"{what} must be an unsigned 32-bit integer")
    return value


def _ids(value: Any, what: str, low: int, high: int, *, distinct: bool) -> tuple[bytes, ...]:
    if not isinstance(value, list) or not low <= len(value) <= high:
        raise _malformed(f"{what} must list {low} to {high} ids")
    for item in value:
        if not isinstance(item, bytes) or len(item) != ID_SIZE:
            raise _malformed(f"{what} holds an id that is not {ID_SIZE} bytes")
    if distinct and len(set(value)) != len(value):
        raise _malformed(f"{what} repeats an id")
    return tuple(value)


# -- routed messages ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RoutedMessage:
    """A unicast or multicast message of the design, without VIA, with its received bytes."""

    raw: bytes
    type: int
    ttl: int
    exp: int
    body: bytes
    sig: bytes
    src: bytes | None = None
    dst: bytes | None = None
    grp: bytes | None = None
    seen: tuple[bytes, ...] = ()
    id: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", upsycle_id(self.raw))

    @property
    def is_multicast(self) -> bool:
        return self.type == MULTICAST

    @property
    def signer(self) -> bytes:
        """``src`` signs a unicast, the group key ``grp`` a multicast (docs/topics-design.md 4.3)."""
        return self.grp if self.type == MULTICAST else self.src  # type: ignore[return-value]

    @property
    def topic_key(self) -> bytes:
        """The destination of a unicast, the group of a multicast."""
        return self.grp if self.type == MULTICAST else self.dst  # type: ignore[return-value]

    @property
    def signed_bytes(self) -> bytes:
        return signed_part(self.raw)

    @property
    def inner_expiry(self) -> int:
        """E in POSIX seconds."""
        return minutes_to_posix(self.exp)


def _routed_fields(value: Any, raw: bytes) -> RoutedMessage:
    if not isinstance(value, list):
        raise _malformed("a routed message is an array")
    if len(value) == 5:
        raise _malformed("VIA does not apply over DMQ")
    if len(value) != 4:
        raise _malformed("a routed message has four elements")
    kind, header, body, sig = value
    if kind not in (UNICAST, MULTICAST) or isinstance(kind, bool):
        raise _malformed(f"unknown routed message type {kind!r}")
    if not isinstance(body, bytes):
        raise _malformed("BODY must be a byte string")
    if not isinstance(sig, bytes) or len(sig) != SIG_SIZE:
        raise _malformed(f"SIG must be {SIG_SIZE} bytes")
    if not isinstance(header, dict):
        raise _malformed("the header is a map")
    expected = _MULTICAST_KEYS if kind == MULTICAST else _UNICAST_KEYS
    if set(header) != expected:
        raise _malformed(f"header keys must be {sorted(expected)}")
    ttl = _uint32(header["ttl"], "ttl")
    exp = _uint32(header["exp"], "exp")
    if kind == UNICAST:
        return RoutedMessage(raw, kind, ttl, exp, body, sig,
                             src=_key(header["src"], "src"), dst=_key(header["dst"], "dst"))
    return RoutedMessage(raw, kind, ttl, exp, body, sig, grp=_key(header["grp"], "grp"),
                         seen=_ids(header["sn"], "seen list", 0, _DEFAULTS.max_seen, distinct=False))


def decode_routed(raw: bytes, params: UpsycleParams = _DEFAULTS) -> RoutedMessage:
    """A routed message from its exact bytes (size limit of docs/topics-design.md 4.3 included)."""
    raw = bytes(raw)
    message = _routed_fields(_strict(raw, "routed message"), raw)
    if len(message.seen) > params.max_seen:
        raise _malformed(f"seen list over {params.max_seen} ids")
    if len(raw) > params.max_routed_size:
        raise UpsycleReject(TOO_LARGE, f"routed message of {len(raw)} bytes, limit {params.max_routed_size}")
    return message


def encode_unicast(src_sign, src: bytes, dst: bytes, ttl: int, exp: int, body: bytes) -> RoutedMessage:
    """Build and sign a unicast; ``src_sign(preimage) -> signature`` by ``src``."""
    return _build([UNICAST, {"src": src, "dst": dst, "ttl": ttl, "exp": exp}, body], src_sign)


def encode_multicast(grp_sign, grp: bytes, ttl: int, exp: int, body: bytes,
                     seen: tuple[bytes, ...] | list[bytes] = ()) -> RoutedMessage:
    """Build and sign a multicast; ``grp_sign(preimage) -> signature`` by the group key."""
    return _build([MULTICAST, {"grp": grp, "ttl": ttl, "exp": exp, "sn": list(seen)}, body], grp_sign)


def _build(parts: list[Any], sign) -> RoutedMessage:
    preimage = b"".join(encode(part) for part in parts)
    raw = head(4, 4) + preimage + encode(bytes(sign(preimage)))
    return _routed_fields(decode(raw), raw)


# -- pull requests, reissues, advertisements ------------------------------------------------

@dataclass(frozen=True, slots=True)
class PullRequest:
    """``{0: group, 1: [1*8 ids]}``: the network form of the design's PULL (docs/topics-design.md 2.8)."""

    raw: bytes
    group: bytes
    ids: tuple[bytes, ...]


def _pull_fields(value: Any, raw: bytes, params: UpsycleParams) -> PullRequest:
    if not isinstance(value, dict) or set(value) != {0, 1}:
        raise _malformed("a pull request is the map {0: group, 1: ids}")
    group = _key(value[0], "group")
    return PullRequest(raw, group, _ids(value[1], "requested ids", 1, params.max_pull_ids, distinct=True))


def decode_pull_request(raw: bytes, params: UpsycleParams = _DEFAULTS) -> PullRequest:
    raw = bytes(raw)
    return _pull_fields(_strict(raw, "pull request"), raw, params)


def encode_pull_request(group: bytes, ids: list[bytes] | tuple[bytes, ...]) -> bytes:
    return encode({0: group, 1: list(ids)})


@dataclass(frozen=True, slots=True)
class Reissue:
    """An answer: the DMQ id of the request it answers and the carried routed message."""

    raw: bytes
    request: bytes
    message: RoutedMessage


def _reissue_fields(value: Any, raw: bytes, params: UpsycleParams) -> Reissue:
    if not isinstance(value, list) or len(value) != 2:
        raise _malformed("a reissue is [pull, message]")
    request, carried = value
    if not isinstance(request, bytes) or len(request) != 32:
        raise _malformed("the answered request is a 32-byte DMQ id")
    if not isinstance(carried, bytes):
        raise _malformed("the carried message is a byte string")
    return Reissue(raw, request, decode_routed(carried, params))


def decode_reissue(raw: bytes, params: UpsycleParams = _DEFAULTS) -> Reissue:
    raw = bytes(raw)
    return _reissue_fields(_strict(raw, "reissue"), raw, params)


def encode_reissue(request_dmq_id: bytes, routed_raw: bytes) -> bytes:
    return encode([request_dmq_id, routed_raw])


@dataclass(frozen=True, slots=True)
class PeerAdvertisement:
    """The design's PEER_ADVERTISEMENT, unchanged (docs/topics-design.md 4.7)."""

    raw: bytes
    id: bytes
    addr: tuple[int, bytes, int]
    svcs: dict[int, bytes]
    grps: tuple[bytes, ...]
    rev: int
    ttl: int
    exp: int
    sig: bytes
    preimage: bytes = field(repr=False)

    @property
    def inner_expiry(self) -> int:
        return minutes_to_posix(self.exp)


def _advertisement_fields(value: Any, raw: bytes) -> PeerAdvertisement:
    if not isinstance(value, dict) or set(value) != _ADVERTISEMENT_KEYS:
        raise _malformed(f"an advertisement has the keys {sorted(_ADVERTISEMENT_KEYS)}")
    addr = value["addr"]
    if not (isinstance(addr, list) and len(addr) == 3 and addr[0] in (1, 2) and not isinstance(addr[0], bool)
            and isinstance(addr[1], bytes) and len(addr[1]) == (4 if addr[0] == 1 else 16)
            and _is_uint(addr[2], 0xFFFF)):
        raise _malformed("addr must be [1, 4-byte ip, port] or [2, 16-byte ip, port]")
    svcs = value["svcs"]
    if not isinstance(svcs, dict) or not all(_is_uint(k, 2**64 - 1) for k in svcs):
        raise _malformed("svcs maps unsigned integers to keys")
    for key in svcs.values():
        _key(key, "service key")
    grps = value["grps"]
    if not isinstance(grps, list):
        raise _malformed("grps is a list of keys")
    for key in grps:
        _key(key, "group key")
    if not _is_uint(value["rev"], 2**64 - 1):
        raise _malformed("rev must be an unsigned integer")
    sig = value["sig"]
    if not isinstance(sig, bytes) or len(sig) != SIG_SIZE:
        raise _malformed(f"sig must be {SIG_SIZE} bytes")
    return PeerAdvertisement(
        raw, _key(value["id"], "id"), (addr[0], addr[1], addr[2]), dict(svcs), tuple(grps), value["rev"],
        _uint32(value["ttl"], "ttl"), _uint32(value["exp"], "exp"), sig, advertisement_preimage(raw),
    )


def advertisement_preimage(raw: bytes) -> bytes:
    """The received map with its ``sig`` pair spliced out and the map head shortened by one.

    docs/topics-design.md 4.3 signs the deterministic encoding of the map without ``sig``. The remaining
    pairs keep their order, so the preimage is a splice of received bytes, not a re-encoding.
    """
    if not raw or raw[0] >> 5 != 5:
        raise _malformed("an advertisement is a map")
    count, pos = _map_head(raw)
    kept = bytearray()
    for _ in range(count):
        key_start = pos
        key, pos = decode_item(raw, pos)
        _, pos = decode_item(raw, pos)
        if key != "sig":
            kept += raw[key_start:pos]
    return head(5, count - 1) + bytes(kept)


def _map_head(raw: bytes) -> tuple[int, int]:
    _, _, count, pos = read_head(raw, 0, len(raw))
    return count, pos


def decode_advertisement(raw: bytes) -> PeerAdvertisement:
    raw = bytes(raw)
    return _advertisement_fields(_strict(raw, "advertisement"), raw)


def encode_advertisement(sign, id: bytes, addr: tuple[int, bytes, int], svcs: dict[int, bytes],
                         grps: list[bytes], rev: int, ttl: int, exp: int) -> PeerAdvertisement:
    """Build and sign an advertisement; ``sign(preimage) -> signature`` by ``id``."""
    unsigned = {"id": id, "addr": list(addr), "svcs": dict(svcs), "grps": list(grps),
                "rev": rev, "ttl": ttl, "exp": exp}
    signature = bytes(sign(encode(unsigned)))
    raw = encode({**unsigned, "sig": signature})
    return _advertisement_fields(decode(raw), raw)


# -- the envelope ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Envelope:
    """One UPSYCLE body: its kind and the decoded content record (holding its exact bytes)."""

    body: bytes
    kind: int
    content: RoutedMessage | PullRequest | Reissue | PeerAdvertisement

    @property
    def topic_key(self) -> bytes:
        content = self.content
        if isinstance(content, RoutedMessage):
            return content.topic_key
        if isinstance(content, PullRequest):
            return content.group
        if isinstance(content, Reissue):
            return content.message.topic_key
        return content.id


def decode_envelope(body: bytes, params: UpsycleParams = _DEFAULTS) -> Envelope:
    """An UPSYCLE body: the framework's envelope rules (2.3), then the content of its kind."""
    try:
        envelope = common_envelope.decode_envelope(bytes(body))
    except common_envelope.EnvelopeError as exc:
        raise UpsycleReject(exc.reason, exc.detail) from None
    if envelope.tag != TAG:
        raise _malformed("not an UPSYCLE body")
    raw = envelope.content_raw
    if envelope.kind == KIND_ROUTED:
        content: Any = decode_routed(raw, params)
    elif envelope.kind == KIND_PULL:
        content = _pull_fields(envelope.content, raw, params)
    elif envelope.kind == KIND_REISSUE:
        content = _reissue_fields(envelope.content, raw, params)
    elif envelope.kind == KIND_ADVERTISEMENT:
        content = _advertisement_fields(envelope.content, raw)
    else:
        raise UpsycleReject(UNKNOWN_TOPIC, f"unknown UPSYCLE kind {envelope.kind}")
    return Envelope(envelope.body, envelope.kind, content)


def encode_envelope(kind: int, content_raw: bytes) -> bytes:
    """The canonical body for already encoded ``content_raw`` (padded only when short)."""
    return common_envelope.encode_envelope(TAG, kind, content_raw=content_raw)
