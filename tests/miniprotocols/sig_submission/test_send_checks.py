"""The checks of what is sent: the inline pass gives what the per-field checks give.

The round messages a node builds itself (id requests, id replies from its mempool, body requests) are
checked by their constructors through ``wire.check_request_ids``, ``check_id_sizes`` and ``check_ids``,
which test the usual values (plain ints, tuples of 32-byte ``bytes``) inline and hand anything else to
``check_id`` / ``check_word16`` / ``check_word32``. Both ways must agree: the same value kept, or the
same error with the same text. The encoders dispatch on the message's class; their bytes are compared
with the bytes each message had before (the strict codec's reading of them gives the message back).
"""

from __future__ import annotations

import enum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniprotocols import sig_submission_v1 as v1
from miniprotocols import sig_submission_v2 as v2
from miniprotocols.sig_submission import wire
from miniprotocols.sig_submission.limits import ID_SIZE, MAX_WORD16, MAX_WORD32


def general_id_sizes(pairs):
    return tuple((wire.check_id(i), wire.check_word32(size, "message size")) for i, size in pairs)


def general_ids(ids):
    return tuple(wire.check_id(i) for i in ids)


def general_request_ids(blocking, ack, req):
    if not isinstance(blocking, bool):
        raise ValueError(f"blocking must be a bool, got {blocking!r}")
    wire.check_word16(ack, "ack")
    wire.check_word16(req, "req")


def outcome(check, *args):
    try:
        return "ok", check(*args)
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        return "error", type(exc), str(exc)


class Small(enum.IntEnum):
    THREE = 3


ids = st.one_of(st.binary(min_size=ID_SIZE, max_size=ID_SIZE), st.binary(max_size=40),
                st.builds(bytearray, st.binary(min_size=ID_SIZE, max_size=ID_SIZE)), st.just("x" * ID_SIZE),
                st.none())
sizes = st.one_of(st.integers(-2, MAX_WORD32 + 2), st.sampled_from([0, MAX_WORD32, MAX_WORD32 + 1, True, False]),
                  st.just(Small.THREE), st.just(3.0), st.none())
pairs = st.one_of(st.tuples(ids, sizes), st.lists(st.one_of(ids, sizes), min_size=2, max_size=2),
                  st.tuples(ids), st.tuples(ids, sizes, sizes))
words = st.one_of(st.integers(-2, MAX_WORD16 + 2), st.sampled_from([0, MAX_WORD16, MAX_WORD16 + 1, True]),
                  st.just(Small.THREE), st.just(1.0), st.none())


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.tuples(), st.lists(pairs, max_size=4).map(tuple), st.lists(pairs, max_size=4)))
def test_id_sizes_checked_as_the_general_path(given_pairs):
    assert outcome(wire.check_id_sizes, given_pairs) == outcome(general_id_sizes, given_pairs)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(ids, max_size=4).map(tuple), st.lists(ids, max_size=4)))
def test_ids_checked_as_the_general_path(given_ids):
    assert outcome(wire.check_ids, given_ids) == outcome(general_ids, given_ids)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.booleans(), st.integers(0, 1), st.none()), words, words)
def test_request_ids_checked_as_the_general_path(blocking, ack, req):
    assert outcome(wire.check_request_ids, blocking, ack, req) == outcome(general_request_ids, blocking, ack, req)


def test_a_tuple_of_checked_pairs_is_kept_and_anything_else_becomes_one():
    pair = (b"\x01" * ID_SIZE, 1084)
    given = (pair,)
    assert wire.check_id_sizes(given) is given
    assert wire.check_id_sizes([[pair[0], 1084]]) == given
    assert type(wire.check_id_sizes([[pair[0], 1084]])[0]) is tuple
    with pytest.raises(ValueError, match="word32"):
        v2.MsgReplySigIds(((pair[0], MAX_WORD32 + 1),))
    with pytest.raises(ValueError, match="32 bytes"):
        v1.MsgRequestTxs((b"short",))


ID = b"\x07" * ID_SIZE
MESSAGES = {
    "v1": (v1.SIG_SUBMISSION_V1.codec,
           [(v1.MsgInit(), "8106"), (v1.MsgRequestTxIds(True, 3, 300), "8400f50319012c"),
            (v1.MsgReplyTxIds(((ID, 1084),)), "82019f825820" + ID.hex() + "19043cff"),
            (v1.MsgRequestTxs((ID,)), "82029f5820" + ID.hex() + "ff"), (v1.MsgDone(), "8104")]),
    "v2": (v2.SIG_SUBMISSION_V2.codec,
           [(v2.MsgRequestSigIds(False, 0, 10), "8401f4000a"), (v2.MsgReplyNoSigIds(), "8103"),
            (v2.MsgReplySigIds(((ID, 1084),)), "82029f825820" + ID.hex() + "19043cff"),
            (v2.MsgRequestSigs((ID,)), "82049f5820" + ID.hex() + "ff"), (v2.MsgDone(), "8106")]),
}


@pytest.mark.parametrize("version", sorted(MESSAGES))
def test_encoders_by_class_write_the_same_bytes(version):
    codec, messages = MESSAGES[version]
    for message, expected in messages:
        assert codec.encode(message).hex() == expected
    with pytest.raises(TypeError, match="not a sig submission"):
        codec.encode(object())
