"""Encoding and strict decoding of the pieces both sig-submission codecs share.

Only the tags differ between V1 and V2; the bodies of the messages are identical: an
indefinite list of definite ``[id, size]`` pairs, an indefinite list of ids, an
indefinite list of raw messages, and the ``blocking, ack, req`` triple. The reference
decoders accept only indefinite lists here and ids of exactly 32 bytes
(``decodeSigId: expected 32 bytes``); so does this module. Messages are spliced in and
cut out as their exact bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

from ouroboros_mux.cbor import Cursor

from ..framework import CodecError
from ..framework import cbor_write as w
from .limits import ID_SIZE, MAX_WORD16, MAX_WORD32
from .sig_message import read_message

__all__ = [
    "check_id",
    "check_word16",
    "check_word32",
    "check_request_ids",
    "check_id_sizes",
    "check_ids",
    "encode_request_ids",
    "encode_id_sizes",
    "encode_ids",
    "encode_messages",
    "decode_request_ids",
    "decode_id_sizes",
    "decode_ids",
    "decode_messages",
]

_ID_HEAD = w.head(2, ID_SIZE)
#: ``[id, size]``'s start: a pair's head and the id's head (one id and one size per announced message).
_PAIR_HEAD = w.array_header(2) + _ID_HEAD


def check_id(message_id: bytes) -> bytes:
    if not isinstance(message_id, bytes) or len(message_id) != ID_SIZE:
        raise ValueError(f"a message id is {ID_SIZE} bytes, got {message_id!r}")
    return message_id


def check_word16(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WORD16:
        raise ValueError(f"{what} must be a word16, got {value!r}")
    return value


def check_word32(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WORD32:
        raise ValueError(f"{what} must be a word32, got {value!r}")
    return value


def check_request_ids(blocking: bool, ack: int, req: int) -> None:
    """The fields of an id request: a bool and two word16s (plain ints tested inline: every round sends one)."""
    if type(blocking) is not bool:
        raise ValueError(f"blocking must be a bool, got {blocking!r}")
    if type(ack) is not int or not 0 <= ack <= MAX_WORD16:
        check_word16(ack, "ack")
    if type(req) is not int or not 0 <= req <= MAX_WORD16:
        check_word16(req, "req")


def check_id_sizes(pairs: Iterable[tuple[bytes, int]]) -> tuple[tuple[bytes, int], ...]:
    """``pairs`` as a tuple of checked ``(id, size)`` tuples: a tuple of such tuples is returned as it is,
    after one inline pass (what a serving peer builds from its mempool), anything else goes through
    :func:`check_id` and :func:`check_word32` (same result, same errors)."""
    if type(pairs) is tuple:
        for pair in pairs:
            if type(pair) is not tuple or len(pair) != 2:
                break
            message_id, size = pair
            if type(message_id) is not bytes or len(message_id) != ID_SIZE or type(size) is not int \
                    or not 0 <= size <= MAX_WORD32:
                break
        else:
            return pairs
    return tuple((check_id(i), check_word32(size, "message size")) for i, size in pairs)


def check_ids(ids: Iterable[bytes]) -> tuple[bytes, ...]:
    """``ids`` as a tuple of checked ids: a tuple of 32-byte ``bytes`` is returned as it is after one
    inline pass, anything else goes through :func:`check_id` (same result, same errors)."""
    if type(ids) is tuple:
        for message_id in ids:
            if type(message_id) is not bytes or len(message_id) != ID_SIZE:
                break
        else:
            return ids
    return tuple(check_id(i) for i in ids)


# -- encoding ----------------------------------------------------------------------

def encode_request_ids(tag: int, blocking: bool, ack: int, req: int) -> bytes:
    return _REQUEST_IDS_START[tag, blocking] + w.uint(ack) + w.uint(req)


def encode_id_sizes(tag: int, pairs: Iterable[tuple[bytes, int]]) -> bytes:
    uint = w.uint
    body = b"".join([_PAIR_HEAD + i + uint(size) for i, size in pairs])
    return _LIST_START[tag] + body + w.BREAK


def encode_ids(tag: int, ids: Iterable[bytes]) -> bytes:
    body = b"".join([_ID_HEAD + i for i in ids])
    return _LIST_START[tag] + body + w.BREAK


def encode_messages(tag: int, messages: Iterable[bytes]) -> bytes:
    return _LIST_START[tag] + w.join_items(messages) + w.BREAK


# What the messages start with, per tag (V1 and V2 tags are 0..6), written once: every round sends two.
_TAGS = range(7)
#: ``[tag, blocking,`` of an id request.
_REQUEST_IDS_START = {(tag, blocking): w.array_header(4) + w.uint(tag) + w.boolean(blocking)
                      for tag in _TAGS for blocking in (False, True)}
#: ``[tag, [_`` of the list-carrying messages.
_LIST_START = {tag: w.array_header(2) + w.uint(tag) + w.INDEFINITE_ARRAY for tag in _TAGS}


# -- decoding (the cursor stands after the tag) -------------------------------------

def decode_request_ids(cursor: Cursor) -> tuple[bool, int, int]:
    return cursor.bool(), cursor.uint(MAX_WORD16), cursor.uint(MAX_WORD16)


def decode_id_sizes(cursor: Cursor) -> tuple[tuple[bytes, int], ...]:
    if cursor.array_header() is not None:
        raise CodecError("expected an indefinite-length list of [id, size]")
    pairs = []
    while not cursor.at_break():
        cursor.definite_array(2)
        pairs.append((cursor.bytes(size=ID_SIZE), cursor.uint(MAX_WORD32)))
    cursor.read_break()
    return tuple(pairs)


def decode_ids(cursor: Cursor) -> tuple[bytes, ...]:
    if cursor.array_header() is not None:
        raise CodecError("expected an indefinite-length list of ids")
    ids = []
    while not cursor.at_break():
        ids.append(cursor.bytes(size=ID_SIZE))
    cursor.read_break()
    return tuple(ids)


def decode_messages(cursor: Cursor) -> tuple[bytes, ...]:
    """Raw message spans; each must have a message's outer shape, as the reference decoder demands."""
    if cursor.array_header() is not None:
        raise CodecError("expected an indefinite-length list")
    messages = []
    while not cursor.at_break():
        messages.append(read_message(cursor)[0])
    cursor.read_break()
    return tuple(messages)
