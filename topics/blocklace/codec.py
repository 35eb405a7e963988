"""Blocklace envelopes: blocks, needs, carries, proof notices and proofs (docs/topics-design.md 5.2).

Decoding is strict: the envelope decoder has already checked that the body is one
deterministic item, and here every field is checked against the CDDL; a shape error is
``malformed``, a size limit ``too_large``. A TopicAdvertisement keeps the exact bytes of its
``adBody`` because the owner signatures cover them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from topics import cbor
from topics.classify import TAG_BLOCKLACE
from topics.envelope import EnvelopeError, decode_envelope, encode_envelope
from topics.reasons import MALFORMED, TOO_LARGE, UNKNOWN_TOPIC

from .reasons import TOO_MANY_POINTERS, BlocklaceReject

__all__ = [
    "KIND_BLOCK", "KIND_NEED", "KIND_CARRY", "KIND_PROOF_NOTICE",
    "EVENT", "ACK", "EPOCH", "AD", "PERM_EVENT", "PERM_ACK", "PERM_EPOCH", "PERMISSION_OF",
    "MAX_BLOCK_BODY", "MAX_POINTERS", "MAX_TAGS", "MAX_NEED_IDS", "MAX_ATTEMPT", "MAX_CUT",
    "Owner", "TopicParams", "AdBody", "TopicAd", "EpochMsg", "Payload", "Block",
    "Need", "Carry", "ProofNotice", "Proof",
    "topic_id_of", "decode_body", "encode_block", "encode_need", "encode_carry",
    "encode_proof_notice", "encode_ad_body", "decode_proof", "encode_proof",
]

KIND_BLOCK, KIND_NEED, KIND_CARRY, KIND_PROOF_NOTICE = 0, 1, 2, 3
EVENT, ACK, EPOCH, AD = 0, 1, 2, 3
PERM_EVENT, PERM_ACK, PERM_EPOCH = 1, 2, 4
#: The permission bit each payload type needs (advertisements are authorized by the owner).
PERMISSION_OF = {EVENT: PERM_EVENT, ACK: PERM_ACK, EPOCH: PERM_EPOCH}

MAX_BLOCK_BODY = 1280       # (P) so that a complete block message fits in a carry
MAX_POINTERS = 16
MAX_TAGS = 8
MAX_NEED_IDS = 16
MAX_ATTEMPT = 15
MAX_CUT = 16                # ids in a proposal's cut
ID_SIZE, POOL_SIZE, KEY_SIZE, SIG_SIZE = 32, 28, 32, 64


def _fail(detail: str) -> BlocklaceReject:
    return BlocklaceReject(MALFORMED, detail)


def _uint(value: Any, what: str) -> int:
    if type(value) is not int or value < 0:
        raise _fail(f"{what} is not a uint")
    return value


def _bstr(value: Any, what: str, size: int | None = None, low: int = 0, high: int | None = None) -> bytes:
    if not isinstance(value, bytes):
        raise _fail(f"{what} is not a byte string")
    if size is not None and len(value) != size:
        raise _fail(f"{what} is {len(value)} bytes, expected {size}")
    if len(value) < low or (high is not None and len(value) > high):
        raise _fail(f"{what} has {len(value)} bytes, outside {low}..{high}")
    return value


def _list(value: Any, what: str, low: int = 0, high: int | None = None) -> list:
    if not isinstance(value, list):
        raise _fail(f"{what} is not an array")
    if len(value) < low or (high is not None and len(value) > high):
        raise _fail(f"{what} has {len(value)} items, outside {low}..{high}")
    return value


def _map(value: Any, what: str, required: set[int], optional: set[int]) -> dict:
    if not isinstance(value, dict):
        raise _fail(f"{what} is not a map")
    keys = set(value)
    if not required <= keys or not keys <= required | optional:
        raise _fail(f"{what} has keys {sorted(map(repr, keys))}")
    return value


def topic_id_of(owner_encoded: bytes) -> bytes:
    """Topic id = Blake2b-256 of the deterministic encoding of ``owner`` (docs/topics-design.md 5.1)."""
    return hashlib.blake2b(owner_encoded, digest_size=32).digest()


# -- advertisements -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Owner:
    threshold: int
    keys: tuple[bytes, ...]

    def wire(self) -> list:
        return [self.threshold, list(self.keys)]

    @property
    def topic_id(self) -> bytes:
        return topic_id_of(cbor.encode(self.wire()))


@dataclass(frozen=True, slots=True)
class TopicParams:
    quorum: tuple[int, int, int] = (0, 2, 3)   # (rule 0 count / 1 stake, num, den)
    epoch_interval: int = 3600
    attempt_timeout: int = 600
    grace: int = 0
    max_pointers: int = MAX_POINTERS

    def wire(self) -> dict:
        out: dict[int, Any] = {}
        if self.quorum != (0, 2, 3):
            out[0] = list(self.quorum)
        for key, name, default in ((1, "epoch_interval", 3600), (2, "attempt_timeout", 600),
                                   (3, "grace", 0), (4, "max_pointers", MAX_POINTERS)):
            if getattr(self, name) != default:
                out[key] = getattr(self, name)
        return out


@dataclass(frozen=True, slots=True)
class AdBody:
    version: int
    owner: Owner
    publishers: dict[bytes, int]
    relays: tuple[bytes, ...] = ()
    params: TopicParams = field(default_factory=TopicParams)
    raw: bytes = b""             # the exact deterministic bytes the owner signatures cover

    def perms_of(self, pool: bytes) -> int | None:
        return self.publishers.get(pool)


@dataclass(frozen=True, slots=True)
class TopicAd:
    body: AdBody
    signatures: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class EpochMsg:
    number: int                  # epoch being opened (k + 1)
    attempt: int
    ad_version: int
    cut: tuple[bytes, ...] | None = None      # proposal
    stake_epoch: int | None = None            # proposal under the stake rule
    acked: bytes | None = None                # acknowledgement: the proposal acknowledged

    @property
    def is_proposal(self) -> bool:
        return self.cut is not None

    def wire(self) -> dict:
        out: dict[int, Any] = {0: self.number, 1: self.attempt, 2: self.ad_version}
        if self.cut is not None:
            out[3] = list(self.cut)
        if self.stake_epoch is not None:
            out[4] = self.stake_epoch
        if self.acked is not None:
            out[5] = self.acked
        return out


@dataclass(frozen=True, slots=True)
class Payload:
    type: int
    event: bytes | None = None
    epoch: EpochMsg | None = None
    ad: TopicAd | None = None

    def wire(self) -> list:
        if self.type == EVENT:
            return [EVENT, self.event]
        if self.type == ACK:
            return [ACK]
        if self.type == EPOCH:
            return [EPOCH, self.epoch.wire()]
        return [AD, [_RawItem(self.ad.body.raw), [list(s) for s in self.ad.signatures]]]


class _RawItem:
    """Already-encoded bytes spliced into an encoding (the signed ``adBody``)."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


def _encode_with_raw(value: Any) -> bytes:
    """Deterministic encoding where :class:`_RawItem` parts are copied verbatim."""
    if isinstance(value, _RawItem):
        return value.raw
    if isinstance(value, list):
        return cbor.head(4, len(value)) + b"".join(_encode_with_raw(v) for v in value)
    return cbor.encode(value)


@dataclass(frozen=True, slots=True)
class Block:
    topic: bytes
    seq: int
    epoch: int
    ptrs: tuple[bytes, ...]
    floor_mask: int
    payload: Payload
    tags: tuple[bytes, ...] = ()

    @property
    def self_parent(self) -> bytes | None:
        return self.ptrs[0] if self.seq > 0 and self.ptrs else None

    def wire(self) -> list:
        return [self.topic, self.seq, self.epoch, list(self.ptrs), self.floor_mask,
                self.payload.wire(), list(self.tags)]


@dataclass(frozen=True, slots=True)
class Need:
    topic: bytes
    ids: tuple[bytes, ...] = ()
    anchors: bool = False

    def wire(self) -> dict:
        out: dict[int, Any] = {0: self.topic}
        if self.ids:
            out[1] = list(self.ids)
        if self.anchors:
            out[2] = True
        return out


@dataclass(frozen=True, slots=True)
class Carry:
    need: bytes                  # DMQ id of the need answered
    message: bytes               # the complete original DMQ message


@dataclass(frozen=True, slots=True)
class ProofNotice:
    topic: bytes
    kind: int
    culprit: bytes
    a: bytes
    b: bytes


@dataclass(frozen=True, slots=True)
class Proof:
    kind: int                    # 0 same seq, 1 double vote, 2 owner equivocation, 3 epoch conflict
    topic: bytes
    culprit: bytes
    where: int | tuple[int, int]
    a: bytes                     # complete DMQ messages, id(a) < id(b) bytewise
    b: bytes

    def wire(self) -> list:
        where = list(self.where) if isinstance(self.where, tuple) else self.where
        return [self.kind, self.topic, self.culprit, where, self.a, self.b]


# -- decoding -----------------------------------------------------------------------------

def _decode_owner(value: Any) -> Owner:
    items = _list(value, "owner", 2, 2)
    threshold = _uint(items[0], "owner threshold")
    keys = tuple(_bstr(k, "owner key", KEY_SIZE) for k in _list(items[1], "owner keys", 1))
    if not 1 <= threshold <= len(keys):
        raise _fail(f"owner threshold {threshold} outside 1..{len(keys)}")
    return Owner(threshold, keys)


def _decode_params(value: Any) -> TopicParams:
    m = _map(value, "topicParams", set(), {0, 1, 2, 3, 4})
    quorum = (0, 2, 3)
    if 0 in m:
        rule = _list(m[0], "quorumRule", 3, 3)
        quorum = (_uint(rule[0], "quorum rule"), _uint(rule[1], "quorum num"), _uint(rule[2], "quorum den"))
        if quorum[0] not in (0, 1) or quorum[2] == 0 or quorum[1] > quorum[2]:
            raise _fail(f"quorum rule {list(quorum)}")
    max_pointers = _uint(m.get(4, MAX_POINTERS), "maximum pointers")
    if max_pointers > MAX_POINTERS:
        raise _fail(f"maximum pointers {max_pointers} over {MAX_POINTERS}")
    return TopicParams(quorum, _uint(m.get(1, 3600), "epoch interval"),
                       _uint(m.get(2, 600), "attempt timeout"), _uint(m.get(3, 0), "grace"), max_pointers)


def decode_ad_body(value: Any, raw: bytes) -> AdBody:
    m = _map(value, "adBody", {0, 1, 2}, {3, 4})
    publishers_map = m[2]
    if not isinstance(publishers_map, dict) or not publishers_map:
        raise _fail("publishers is not a non-empty map")
    publishers = {_bstr(k, "publisher", POOL_SIZE): _uint(v, "perms") for k, v in publishers_map.items()}
    relays = tuple(_bstr(r, "relay", POOL_SIZE) for r in _list(m.get(3, []), "relays"))
    params = _decode_params(m[4]) if 4 in m else TopicParams()
    return AdBody(_uint(m[0], "ad version"), _decode_owner(m[1]), publishers, relays, params, raw)


def _decode_ad(value: Any) -> TopicAd:
    items = _list(value, "topicAd", 2, 2)
    body = decode_ad_body(items[0], cbor.encode(items[0]))
    sigs = []
    for s in _list(items[1], "ownerSigs", 1):
        pair = _list(s, "owner signature", 2, 2)
        sigs.append((_uint(pair[0], "key index"), _bstr(pair[1], "owner signature", SIG_SIZE)))
    return TopicAd(body, tuple(sigs))


def _decode_epoch(value: Any) -> EpochMsg:
    m = _map(value, "epochMsg", {0, 1, 2}, {3, 4, 5})
    attempt = _uint(m[1], "attempt")
    if attempt > MAX_ATTEMPT:
        raise _fail(f"attempt {attempt} over {MAX_ATTEMPT}")
    proposal, ack = 3 in m, 5 in m
    if proposal == ack:
        raise _fail("an epoch message is either a proposal (3) or an acknowledgement (5)")
    if 4 in m and not proposal:
        raise _fail("a stake snapshot (4) belongs to a proposal")
    cut = tuple(_bstr(i, "cut id", ID_SIZE) for i in _list(m[3], "cut", 1, MAX_CUT)) if proposal else None
    if cut is not None and len(set(cut)) != len(cut):
        raise _fail("duplicate cut ids")
    return EpochMsg(_uint(m[0], "epoch number"), attempt, _uint(m[2], "ad version"), cut,
                    _uint(m[4], "stake epoch") if 4 in m else None,
                    _bstr(m[5], "acknowledged proposal", ID_SIZE) if ack else None)


def _decode_payload(value: Any) -> Payload:
    items = _list(value, "payload", 1, 2)
    kind = _uint(items[0], "payload type")
    if kind == EVENT and len(items) == 2:
        return Payload(EVENT, event=_bstr(items[1], "event"))
    if kind == ACK and len(items) == 1:
        return Payload(ACK)
    if kind == EPOCH and len(items) == 2:
        return Payload(EPOCH, epoch=_decode_epoch(items[1]))
    if kind == AD and len(items) == 2:
        return Payload(AD, ad=_decode_ad(items[1]))
    raise _fail(f"payload type {kind} with {len(items)} fields")


def _decode_block(value: Any) -> Block:
    items = _list(value, "block", 7, 7)
    topic = _bstr(items[0], "topic", ID_SIZE)
    seq = _uint(items[1], "seq")
    epoch = _uint(items[2], "epoch")
    raw_ptrs = _list(items[3], "ptrs")
    if len(raw_ptrs) > MAX_POINTERS:
        raise BlocklaceReject(TOO_MANY_POINTERS, f"{len(raw_ptrs)} pointers")
    ptrs = tuple(_bstr(p, "pointer", ID_SIZE) for p in raw_ptrs)
    if len(set(ptrs)) != len(ptrs):
        raise _fail("duplicate pointers")
    # seq > 0 without pointers is a client's draft naming its draft id (creator.is_draft), so
    # it decodes; as a block it is refused by Lace.check_ingress (no self-parent).
    others = ptrs[1:] if seq > 0 else ptrs
    if any(a >= b for a, b in zip(others, others[1:])):
        raise _fail("pointers after the self-parent are not strictly ascending")
    floor_mask = _uint(items[4], "floorMask")
    if floor_mask >= 1 << len(ptrs):
        raise _fail("floorMask names a pointer that does not exist")
    tags = tuple(_bstr(t, "content tag", low=1, high=32) for t in _list(items[6], "tags"))
    if len(tags) > MAX_TAGS:
        raise _fail(f"{len(tags)} content tags, at most {MAX_TAGS}")
    return Block(topic, seq, epoch, ptrs, floor_mask, _decode_payload(items[5]), tags)


def _decode_need(value: Any) -> Need:
    m = _map(value, "need", {0}, {1, 2})
    ids = tuple(_bstr(i, "needed id", ID_SIZE) for i in _list(m.get(1, [None]) if 1 in m else [], "ids",
                                                                   1 if 1 in m else 0, MAX_NEED_IDS))
    if len(set(ids)) != len(ids):
        raise _fail("duplicate needed ids")
    if 2 in m and m[2] is not True:
        raise _fail("need field 2 must be true")
    if not ids and 2 not in m:
        raise _fail("a need names ids, anchors, or both")
    return Need(_bstr(m[0], "topic", ID_SIZE), ids, 2 in m)


def _decode_carry(value: Any) -> Carry:
    items = _list(value, "carry", 2, 2)
    return Carry(_bstr(items[0], "need id", ID_SIZE), _bstr(items[1], "carried message", low=1))


def _decode_notice(value: Any) -> ProofNotice:
    m = _map(value, "proofNotice", {0, 1, 2, 3, 4}, set())
    kind = _uint(m[1], "proof kind")
    if kind > 3:
        raise _fail(f"proof kind {kind}")
    return ProofNotice(_bstr(m[0], "topic", ID_SIZE), kind, _bstr(m[2], "culprit", low=1, high=32),
                       _bstr(m[3], "id a", ID_SIZE), _bstr(m[4], "id b", ID_SIZE))


_DECODERS = {KIND_BLOCK: _decode_block, KIND_NEED: _decode_need, KIND_CARRY: _decode_carry,
             KIND_PROOF_NOTICE: _decode_notice}


def decode_body(body: bytes) -> tuple[int, Any]:
    """``(kind, content)`` of a Blocklace body; raises :class:`BlocklaceReject`."""
    try:
        envelope = decode_envelope(body)
    except EnvelopeError as exc:
        raise BlocklaceReject(exc.reason, exc.detail) from None
    if envelope.tag != TAG_BLOCKLACE:
        raise BlocklaceReject(MALFORMED, "not a Blocklace body")
    decoder = _DECODERS.get(envelope.kind)
    if decoder is None:
        raise BlocklaceReject(UNKNOWN_TOPIC, f"Blocklace kind {envelope.kind}")
    if envelope.kind == KIND_BLOCK and len(body) > MAX_BLOCK_BODY:
        raise BlocklaceReject(TOO_LARGE, f"block body of {len(body)} bytes over {MAX_BLOCK_BODY}")
    return envelope.kind, decoder(envelope.content)


def decode_proof(raw: bytes) -> Proof:
    try:
        value = cbor.decode(raw)
    except (cbor.CborMalformed, cbor.CborNonCanonical) as exc:
        raise _fail(str(exc)) from None
    items = _list(value, "proof", 6, 6)
    kind = _uint(items[0], "proof kind")
    where = items[3]
    if isinstance(where, list):
        where = tuple(_uint(w, "where") for w in _list(where, "where", 2, 2))
    else:
        where = _uint(where, "where")
    return Proof(kind, _bstr(items[1], "topic", ID_SIZE), _bstr(items[2], "culprit", low=1, high=32), where,
                 _bstr(items[4], "a"), _bstr(items[5], "b"))


# -- encoding -----------------------------------------------------------------------------

def encode_block(block: Block) -> bytes:
    """The body of a block; raises :class:`BlocklaceReject` ``too_large`` over 1280 bytes."""
    content = _encode_with_raw(block.wire())
    body = encode_envelope(TAG_BLOCKLACE, KIND_BLOCK, content_raw=content)
    if len(body) > MAX_BLOCK_BODY:
        raise BlocklaceReject(TOO_LARGE, f"block body of {len(body)} bytes over {MAX_BLOCK_BODY}")
    return body


def encode_ad_body(version: int, owner: Owner, publishers: dict[bytes, int], relays=(), params=None) -> bytes:
    out: dict[int, Any] = {0: version, 1: owner.wire(), 2: dict(publishers)}
    if relays:
        out[3] = list(relays)
    if params is not None and params.wire():
        out[4] = params.wire()
    return cbor.encode(out)


def encode_need(need: Need) -> bytes:
    return encode_envelope(TAG_BLOCKLACE, KIND_NEED, need.wire())


def encode_carry(carry: Carry) -> bytes:
    return encode_envelope(TAG_BLOCKLACE, KIND_CARRY, [carry.need, carry.message])


def encode_proof_notice(notice: ProofNotice) -> bytes:
    return encode_envelope(TAG_BLOCKLACE, KIND_PROOF_NOTICE,
                           {0: notice.topic, 1: notice.kind, 2: notice.culprit, 3: notice.a, 4: notice.b})


def encode_proof(proof: Proof) -> bytes:
    return cbor.encode(proof.wire())
