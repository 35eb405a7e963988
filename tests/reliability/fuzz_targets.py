"""Every decoder that reads bytes from the outside, with the typed errors it may answer.

A *target* is one decoder entry point: the SDU header, the CBOR framer the mux reassembles
with, the handshake codec of each link, the codec of each mini-protocol in each state where
the other side has agency, the DMQ message decoder (strict, with legacy, structure only),
and the topic envelope when the ``topics`` package provides one. Each target names the
exception classes that count as a clean refusal; anything else escaping the decoder (an
``IndexError``, a ``RecursionError``, a bare ``ValueError``) is a crash.

The same targets and input strategies drive the default test run (a few hundred examples
per target) and ``bench/reliability_fuzz.py`` (at least 100 000 per target).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import cbor2
from hypothesis import strategies as st

from dmq.codec import MessageDecodeError, decode_message, decode_message_structure
from handshake import DMQ_NODE_TO_CLIENT, DMQ_NODE_TO_NODE, CARDANO_NODE_TO_CLIENT
from handshake.codec import decode_message as decode_handshake
from handshake.errors import HandshakeCodecError, VersionDataError
from handshake.states import State as HandshakeState
from miniprotocols import (
    keep_alive,
    local_msg_notification,
    local_msg_submission,
    local_state_query,
    peer_sharing,
    sig_submission_v1,
    sig_submission_v2,
)
from miniprotocols.framework import Agency, CodecError, ProtocolSpec
from ouroboros_mux.cbor import CborError, item_end
from ouroboros_mux.errors import SDUDecodeError
from ouroboros_mux.sdu import decode_header

from tests.conftest import CONFORMANCE

__all__ = ["Target", "targets", "fuzz_input", "seed_corpus", "run_target", "Crash"]


class Crash(AssertionError):
    """A decoder answered an input with something that is neither a value nor a typed error."""


@dataclass(frozen=True)
class Target:
    name: str
    decode: Callable[[bytes], Any]
    #: The exceptions that are a clean refusal of the input.
    refusals: tuple[type[BaseException], ...]


def run_target(target: Target, raw: bytes) -> bool:
    """Decode ``raw``; True for a value, False for a typed refusal, :class:`Crash` otherwise."""
    try:
        target.decode(raw)
    except target.refusals:
        return False
    except Exception as exc:  # anything else is the bug this suite looks for
        raise Crash(f"{target.name}: {type(exc).__name__}: {exc} on input {raw[:64].hex()}"
                    f"{'...' if len(raw) > 64 else ''} ({len(raw)} bytes)") from exc
    return True


# -- the targets -----------------------------------------------------------------------

#: What a mini-protocol codec may raise (spec.py: "ValueError (CodecError or CborError)").
CODEC_REFUSALS = (CodecError, CborError)

SPECS: tuple[ProtocolSpec, ...] = (
    keep_alive.KEEP_ALIVE,
    local_msg_submission.LOCAL_MSG_SUBMISSION,
    local_msg_notification.LOCAL_MSG_NOTIFICATION,
    local_state_query.LOCAL_STATE_QUERY,
    peer_sharing.PEER_SHARING,
    sig_submission_v1.SIG_SUBMISSION_V1,
    sig_submission_v2.SIG_SUBMISSION_V2,
)


def _in_every_state(decode_in, states, refusals) -> Callable[[bytes], Any]:
    """Decode in every state where a message may arrive: a value if any state gives one,
    the first refusal if none does; a crash in any state fails the input."""
    def decode(raw: bytes) -> list:
        results = []
        for state in states:
            try:
                results.append(decode_in(state, raw))
            except refusals as exc:
                results.append(exc)
        if all(isinstance(r, Exception) for r in results):
            raise results[0]
        return results
    return decode


def _sdu_header(raw: bytes):
    return decode_header(raw[:8])


def _cbor_framer(raw: bytes):
    """How the mux finds message boundaries: each item's end, until the bytes run out."""
    pos, ends = 0, []
    while pos < len(raw):
        pos = item_end(raw, pos, len(raw))
        ends.append(pos)
    return ends


def _handshake(link) -> Callable[[bytes], Any]:
    return _in_every_state(lambda state, raw: decode_handshake(link, state, raw),
                           (HandshakeState.PROPOSE, HandshakeState.CONFIRM), HandshakeCodecError)


def _version_data(link) -> Callable[[bytes], Any]:
    return lambda raw: link.decode_data(raw)


def _topic_targets() -> list[Target]:
    """The topic envelope, if the topics package has one (it is optional at this layer)."""
    try:
        from topics.envelope import EnvelopeError, decode_envelope
    except ImportError:
        return []
    return [Target("topic-envelope", decode_envelope, (EnvelopeError,))]


@lru_cache(maxsize=1)
def targets() -> tuple[Target, ...]:
    found = [
        Target("mux-sdu-header", _sdu_header, (SDUDecodeError,)),
        Target("mux-cbor-framer", _cbor_framer, (CborError,)),
        Target("handshake-dmq-n2n", _handshake(DMQ_NODE_TO_NODE), (HandshakeCodecError,)),
        Target("handshake-dmq-n2c", _handshake(DMQ_NODE_TO_CLIENT), (HandshakeCodecError,)),
        Target("handshake-cardano-n2c", _handshake(CARDANO_NODE_TO_CLIENT), (HandshakeCodecError,)),
        Target("version-data-n2n", _version_data(DMQ_NODE_TO_NODE), (VersionDataError,)),
        Target("version-data-n2c", _version_data(DMQ_NODE_TO_CLIENT), (VersionDataError,)),
    ]
    for spec in SPECS:
        states = [s for s, v in spec.states.items() if v.agency is not Agency.NOBODY]
        found.append(Target(spec.name, _in_every_state(spec.codec.decode, states, CODEC_REFUSALS), CODEC_REFUSALS))
    found += [
        Target("dmq-message", decode_message, (MessageDecodeError,)),
        Target("dmq-message-legacy", lambda raw: decode_message(raw, allow_legacy=True), (MessageDecodeError,)),
        Target("dmq-message-structure", decode_message_structure, (MessageDecodeError,)),
    ]
    return tuple(found + _topic_targets())


# -- inputs ----------------------------------------------------------------------------

@lru_cache(maxsize=1)
def seed_corpus() -> tuple[bytes, ...]:
    """Valid bytes of every protocol: the conformance wire vectors, the spec's examples and
    real DMQ messages. Mutating valid bytes reaches far deeper than random bytes do."""
    vectors = json.loads((CONFORMANCE / "vectors.json").read_text())
    seeds = [bytes.fromhex(v) for k, v in vectors["wire_small"].items() if k != "source"]
    for key in ("new_format", "old_format"):
        seeds.append(bytes.fromhex(vectors["pallas_structural"][key]))
    seeds.append(bytes.fromhex(vectors["opcert"]["opcert_cbor"]))
    seeds += [bytes.fromhex(h) for h in (
        "8200a201841aad964a09f401f402841aad964a09f401f4",   # n2n propose
        "830102841aad964a09f401f4",                         # n2n accept v2
        "82028200820102",                                   # refuse: version mismatch
        "8401f5001821", "8401f4031821", "8103", "8106",     # sig submission V2 requests
        "82029f825820" + "11" * 32 + "1903e8ff",            # reply ids
        "82049f5820" + "22" * 32 + "ff",                    # request sigs
        "830000" + "03",                                    # V1 request ids (shape)
        "8200", "8101", "8102f5", "8201f6",                 # acquire / release / misc heads
        "82018284440a000001190bb9", "820100",               # peer sharing
        "841aad964a09f401f4", "821aad964a09f4",             # version data n2n, n2c
    )]
    from tests.dmq.diffusion.network import pool  # real keys: signed, valid messages
    for tag, body_size in ((1, 120), (2, 2000)):
        seeds.append(pool(tag).sign(tag, 1_800_000_900, body_size=body_size).raw)
    # Whole SDUs (header and payload) for the SDU header decoder.
    seeds += [bytes.fromhex("00000000000e0004") + seeds[0][:4], bytes.fromhex("0000000080000003") + b"\x83\x01\x02"]
    try:
        from topics.classify import TAG_RANGE
        from topics.envelope import encode_envelope
    except ImportError:
        pass
    else:
        seeds += [encode_envelope(tag, 1, [1, b"content", {2: "x"}]) for tag in (min(TAG_RANGE), max(TAG_RANGE))]
    return tuple(seeds)


_cbor_leaf = st.one_of(
    st.integers(-(2 ** 64), 2 ** 64 - 1), st.binary(max_size=80), st.booleans(), st.none(),
    st.text(max_size=20), st.floats(allow_nan=True),
)
#: CBOR values shaped like protocol messages: ``[tag, fields...]`` with nesting.
_cbor_value = st.recursive(_cbor_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.dictionaries(st.integers(0, 5000), inner, max_size=4)), max_leaves=20)
_message_like = st.tuples(st.integers(0, 12), st.lists(_cbor_value, max_size=5)).map(
    lambda t: cbor2.dumps([t[0], *t[1]]))


@st.composite
def _mutated(draw) -> bytes:
    """A seed with a few edits: byte flips, cuts, insertions, duplications, head swaps."""
    data = bytearray(draw(st.sampled_from(seed_corpus())))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 5))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == 0 and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:
            data = data[:at]
        elif op == 2:
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == 3 and data:
            data[at] = draw(st.sampled_from([0x18, 0x19, 0x1A, 0x1B, 0x1F, 0x5F, 0x9F, 0xBF, 0xFF, 0x58, 0x59, 0x5A,
                                              0x5B, 0x98, 0xB8, 0xC0, 0xD8, 0xF9, 0xFB, 0x00, 0x80, 0xA0]))
        elif op == 4:
            end = draw(st.integers(at, len(data)))
            data[at:at] = data[at:end]
        elif op == 5:
            data = data + bytes(draw(st.sampled_from(seed_corpus())))
    return bytes(data)


#: The input of every target: random bytes, message-shaped CBOR, and mutated valid bytes.
fuzz_input = st.one_of(
    st.binary(max_size=300),
    _message_like,
    _mutated(),
    st.binary(min_size=1, max_size=40).map(lambda b: b"\x9f" * 2000 + b),  # deep nesting
)


# -- the long run's mutator -------------------------------------------------------------

_HEADS = bytes([0x18, 0x19, 0x1A, 0x1B, 0x1F, 0x5F, 0x9F, 0xBF, 0xFF, 0x58, 0x59, 0x5A, 0x5B, 0x98, 0xB8,
                0xC0, 0xD8, 0xF9, 0xFB, 0x00, 0x80, 0xA0])


def mutate(rng, data: bytes, corpus: list[bytes]) -> bytes:
    """The edits of ``_mutated`` with a plain ``random.Random``: cheap enough for 10^5 inputs
    per decoder, drawn from a corpus that hypothesis generated."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(out)) if out else 0
        if op == 0 and out:
            out[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            del out[at:]
        elif op == 2:
            out[at:at] = rng.randbytes(rng.randint(1, 16))
        elif op == 3 and out:
            out[at] = _HEADS[rng.randrange(len(_HEADS))]
        elif op == 4:
            end = rng.randint(at, len(out))
            out[at:at] = out[at:end]
        else:
            out += corpus[rng.randrange(len(corpus))]
    return bytes(out)
