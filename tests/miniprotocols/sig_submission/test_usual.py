"""The round messages read straight from their usual bytes (``decode_framed``) give what the strict reading gives.

What the driver decodes with is ``decode_framed``: for the usual form (shortest heads, as every encoder
writes) it reads the bytes directly, and for anything else it must fall back to the strict reading, so
every framed message, valid or not, must come out the same both ways: the same message, or the same error.
The same reading at the start of a channel's bytes (``decode_prefix``) frames the message by its own end,
which must be the end of the CBOR item, and gives what the channel's walk and the strict reading give.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniprotocols import sig_submission_v1 as v1
from miniprotocols import sig_submission_v2 as v2
from ouroboros_mux.cbor import CborError, item_end
from ouroboros_mux.channel import CborFramer, MalformedMessage, MessageTooLarge

from .helpers import make_message, message_id

V1, V2 = v1.SIG_SUBMISSION_V1.codec, v2.SIG_SUBMISSION_V2.codec
S1, S2 = v1.SigSubmissionV1State, v2.SigSubmissionV2State

#: Per version: the codec, the four round messages' classes, and the states each is received in.
VERSIONS = {
    "v1": (V1, v1.MsgRequestTxIds, v1.MsgReplyTxIds, v1.MsgRequestTxs, v1.MsgReplyTxs,
           S1.IDLE, (S1.TX_IDS_BLOCKING, S1.TX_IDS_NON_BLOCKING), S1.TXS),
    "v2": (V2, v2.MsgRequestSigIds, v2.MsgReplySigIds, v2.MsgRequestSigs, v2.MsgReplySigs,
           S2.IDLE, (S2.SIG_IDS_BLOCKING, S2.SIG_IDS_NON_BLOCKING), S2.SIGS),
}
COUNTS = [0, 1, 23, 24, 255, 256, 0xFFFF]
SIZES = COUNTS + [0x10000, 0xFFFFFFFF]
BODIES = [make_message(n, size) for n, size in enumerate([4, 100, 451, 1000, 2000])]
IDS = [message_id(raw) for raw in BODIES]


def outcome(decode, state, raw):
    """What decoding gives: ``("message", m)`` or ``("error", type, text)``."""
    try:
        return "message", decode(state, raw)
    except ValueError as exc:  # CodecError and CborError alike
        return "error", type(exc), str(exc)


def usual_cases(version):
    """``(state, message)`` for the round messages, with counts, sizes and lists across their head widths."""
    _, request_ids, reply_ids, request_bodies, reply_bodies, idle, ids_states, bodies_state = VERSIONS[version]
    for blocking in (True, False):
        for ack in COUNTS:
            for req in (0, 1, 33, 24, 0xFFFF):
                yield idle, request_ids(blocking, ack, req)
    for state in ids_states:
        for n in range(0, len(IDS) + 1):
            for size in SIZES:
                if n or state in (S1.TX_IDS_NON_BLOCKING, S2.SIG_IDS_NON_BLOCKING):
                    yield state, reply_ids(tuple((i, size) for i in IDS[:n]))
    for n in range(0, len(IDS) + 1):
        yield idle, request_bodies(tuple(IDS[:n]))
        yield bodies_state, reply_bodies(tuple(BODIES[:n]))


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_the_usual_form_is_read_directly_and_gives_the_strict_reading(version):
    codec = VERSIONS[version][0]
    cases = list(usual_cases(version))
    assert len(cases) > 100
    for state, message in cases:
        raw = codec.encode(message)
        direct = codec._usual.read(state, raw)
        assert direct is not None, (message, raw.hex())  # read directly, not by the fallback
        assert type(direct) is type(message)
        assert direct == message == codec.decode(state, raw) == codec.decode_framed(state, raw)


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_a_blocking_ids_reply_that_is_empty_is_the_strict_readings_failure(version):
    codec, _, reply_ids, *_ = VERSIONS[version]
    state = S1.TX_IDS_BLOCKING if codec is V1 else S2.SIG_IDS_BLOCKING
    raw = codec.encode(reply_ids(()))
    assert codec._usual.read(state, raw) is None and codec.decode_prefix(state, raw) is None
    failure = outcome(codec.decode_framed, state, raw)
    assert failure[0] == "error" and "empty list not permitted" in failure[2]
    assert failure == outcome(codec.decode, state, raw)


def _framed(raw: bytes) -> bool:
    try:
        return item_end(raw, 0, len(raw)) == len(raw)
    except CborError:
        return False


# Other ways of writing the same messages, and messages the strict reading refuses; each one CBOR item.
ODD_V2 = [
    "8401f5190005181f",                     # non-shortest ack: the same message
    "8401f51a00000005181f",                 # a word16 in a 4-byte head: left to the strict reading, which takes it
    "8401f51a00010000181f",                 # ack above word16: refused
    "8401f6001821",                         # not a bool: refused
    "8401f50020",                           # a negative req: refused
    "8402f5001821",                         # another tag: refused
    "980401f5001821",                       # a non-shortest outer array head: the same message
    "82029f82581f" + "00" * 31 + "01ff",    # a 31-byte id: refused
    "82029f835820" + "00" * 32 + "0100ff",  # a triple, not a pair: refused
    "82029f825820" + "00" * 32 + "1b0000000100000000ff",  # a size above word32: refused
    "82029f825820" + "00" * 32 + "1b0000000000000001ff",  # a word32 in an 8-byte head: the strict reading's call
    "820281825820" + "00" * 32 + "01",      # a definite list: refused
    "82049f5820" + "00" * 32 + "5821" + "00" * 33 + "ff",  # a 33-byte id: refused
    "82049f5f5820" + "00" * 32 + "ffff",    # an indefinite id: refused
    "82049f7820" + "61" * 32 + "ff",        # a 32-byte text, not an id: refused
    "82029f827820" + "61" * 32 + "01ff",    # the same in an ids reply: refused
    "82059f857820" + "61" * 32 + "80404040ff",  # the same in a message: refused
    "82059f84" + "5820" + "00" * 32 + "80" + "40" + "40" + "ff",  # a message of 4 items: refused
    "82059f855820" + "00" * 32 + "00404040" + "40ff",  # a payload that is not an array: refused
    "83059fff00",                           # three items: refused
]


@pytest.mark.parametrize("hexed", ODD_V2)
def test_odd_and_refused_forms_come_out_as_the_strict_reading_says(hexed):
    raw = bytes.fromhex(hexed)
    assert _framed(raw), hexed
    for state in S2:
        if state is not S2.DONE:
            assert outcome(V2.decode_framed, state, raw) == outcome(V2.decode, state, raw)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), version=st.sampled_from(sorted(VERSIONS)))
def test_any_framed_mutation_of_a_usual_message_decodes_as_the_strict_reading(data, version):
    codec = VERSIONS[version][0]
    cases = list(usual_cases(version))
    state, message = data.draw(st.sampled_from(cases))
    raw = bytearray(codec.encode(message))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    raw = bytes(raw)
    if _framed(raw):
        for any_state in (state, *[s for s in type(state) if s is not state and s.name != "DONE"]):
            assert outcome(codec.decode_framed, any_state, raw) == outcome(codec.decode, any_state, raw)


# -- read at the start of what a channel holds (``decode_prefix``), framed by its own end -------------

def _prefix_cuts(raw: bytes) -> set[int]:
    return {0, 1, 2, 3, 4, 5, 36, 37, 38, len(raw) // 2, len(raw) - 2, len(raw) - 1} & set(range(len(raw)))


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_a_usual_message_is_read_before_what_follows_it_and_not_before_its_last_byte(version):
    codec = VERSIONS[version][0]
    cases = list(usual_cases(version))
    for state, message in cases:
        raw = codec.encode(message)
        for tail in (b"", b"\x80", b"\xff", codec.encode(cases[0][1])):
            assert codec.decode_prefix(state, raw + tail) == (message, len(raw)), (message, tail)
        for cut in _prefix_cuts(raw):
            assert codec.decode_prefix(state, raw[:cut]) is None, (message, cut)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), version=st.sampled_from(sorted(VERSIONS)))
def test_what_is_read_at_the_start_is_one_cbor_item_that_the_strict_reading_reads_alike(data, version):
    """Whatever the bytes (a usual message mutated, anything behind it), what ``decode_prefix`` reads
    ends where the CBOR item ends, and the strict reading of that item gives the same message."""
    codec = VERSIONS[version][0]
    state, message = data.draw(st.sampled_from(list(usual_cases(version))))
    raw = bytearray(codec.encode(message))
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    buf = bytes(raw[:data.draw(st.integers(1, len(raw)))]) + data.draw(st.binary(max_size=8))
    for any_state in [s for s in type(state) if s.name != "DONE"]:
        read = codec.decode_prefix(any_state, buf)
        if read is None:
            continue
        got, end = read
        assert item_end(buf, 0, len(buf)) == end
        assert outcome(codec.decode, any_state, buf[:end]) == ("message", got)


def _taken(framer: CborFramer, take) -> tuple:
    """The next message a framer gives through ``take`` (None: nothing complete yet), or its error."""
    try:
        return "taken", take()
    except (MessageTooLarge, MalformedMessage) as exc:
        return "error", type(exc), str(exc)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), version=st.sampled_from(sorted(VERSIONS)))
def test_messages_framed_by_their_reading_are_those_the_walk_frames_and_the_codec_reads(data, version):
    """A channel's stream of round messages (usual, odd, mutated, cut anywhere), taken the fast way
    (``next_decoded`` with the codec's ``decode_prefix``, the codec's ``decode_framed`` for what it
    declines) and the general way (``next_message``, then ``decode_framed``): the same exact bytes,
    the same messages, the same errors, at the same questions."""
    codec = VERSIONS[version][0]
    spec = (v1.SIG_SUBMISSION_V1 if codec is V1 else v2.SIG_SUBMISSION_V2)
    cases = list(usual_cases(version))
    state = data.draw(st.sampled_from([s for s in type(cases[0][0]) if s.name != "DONE"]))
    limit = data.draw(st.sampled_from([spec.states[state].byte_limit, 40, 2000]))
    pieces = []
    for _ in range(data.draw(st.integers(1, 4))):
        raw = bytearray(codec.encode(data.draw(st.sampled_from(cases))[1]))
        if data.draw(st.booleans()):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        pieces.append(bytes(raw))
    if codec is V2 and data.draw(st.booleans()):
        pieces.append(bytes.fromhex(data.draw(st.sampled_from(ODD_V2))))
    stream = b"".join(pieces)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=5)))
    walked, read = CborFramer(), CborFramer()
    for a, b in zip([0, *cuts], [*cuts, len(stream)]):
        walked.feed(stream[a:b])
        read.feed(memoryview(stream)[a:b] if data.draw(st.booleans()) else stream[a:b])
        while True:
            expected = _taken(walked, lambda: walked.next_message(limit))
            got = _taken(read, lambda: read.next_decoded(codec.decode_prefix, state, limit))
            if expected[0] == "error" or expected[1] is None:
                assert got == expected
                break
            raw, message = got[1]
            assert raw == expected[1] and type(raw) is bytes
            decoded = outcome(codec.decode_framed, state, raw)
            assert (decoded if message is None else ("message", message)) == decoded
        if expected[0] == "error":
            break
