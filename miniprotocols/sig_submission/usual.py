"""The four round messages of sig submission read straight from their bytes, when written the usual way.

A node relaying at mainnet's rate receives about ten sig-submission messages per message it
relays (each peer's id requests and id replies, one body request and reply), and reading
each with the strict :class:`~ouroboros_mux.cbor.Cursor` (a method call per head) was a good
part of what a round costs. Every encoder (the reference's cborg, Pallas' minicbor, this
node's) writes them with shortest heads, so their bytes are nearly fixed:

* ids request: ``84 tag f4|f5 ack req``;
* ids reply:   ``82 tag 9f (82 5820 <id> size)* ff``;
* body request: ``82 tag 9f (5820 <id>)* ff``;
* body reply:  ``82 tag 9f (85 5820 <id> <payload array> ...)* ff``.

:class:`UsualReader` reads a message of that form by comparing bytes, and returns the message
built by the codec's builders (:func:`~miniprotocols.framework.decoded.decoded_builder`); for
anything else it returns None and the codec reads the message strictly. It reads a framed
message (exactly one well-formed CBOR item, as the mux hands it over: :meth:`UsualReader.read`),
or the message at the start of a channel's received bytes, telling where it ends
(:meth:`UsualReader.read_prefix`): what it reads it checks to the last byte, so the channel
can frame the message by that end instead of walking its CBOR items first. It accepts only
what the strict reading accepts, and gives the same message: the same ranges (word16 counts,
word32 sizes, 32-byte ids), the same refusal of an empty ids reply to a blocking request, and
each body as its exact received bytes, its outer shape checked as
:func:`~.sig_message.read_message` checks it.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable

from ouroboros_mux.cbor import CborError, item_end

from .limits import ID_SIZE, MAX_WORD16, MAX_WORD32

__all__ = ["UsualReader"]

_unpack_uint32 = struct.Struct(">I").unpack_from

_FALSE, _TRUE = 0xF4, 0xF5
_BREAK = 0xFF
#: The outer array heads: of 2 for the three list-carrying messages (the tag, then an indefinite
#: list), of 4 for the ids request (the tag, blocking, ack, req).
_ARRAY_2, _ARRAY_4 = 0x82, 0x84
_INDEFINITE = 0x9F
#: A 32-byte string's head; a ``[id, size]`` pair's start; a message's start (array of 5, id).
_ID_HEAD = bytes([0x58, ID_SIZE])
_PAIR_START = bytes([0x82]) + _ID_HEAD
_MESSAGE_START = bytes([0x85]) + _ID_HEAD
#: Where a message's payload head is: after its array head, the id's head and the id.
_PAYLOAD_AT = len(_MESSAGE_START) + ID_SIZE
_MAJOR_ARRAY = 4


class UsualReader:
    """Reads one version's four round messages in their usual form.

    Each is given as ``(tag, build)``: ``build`` makes the message from its fields, unchecked
    (the codec's :func:`~miniprotocols.framework.decoded.decoded_builder` of its class).
    ``blocking_state`` is the version's blocking ids state, where an empty ids reply is a
    decoder failure (left to the strict reading to report). The reading methods take the
    state a message is received in first, as a codec's ``decode`` does, so that a codec can
    offer them as its own (``decode_prefix = _usual.read_prefix``: no call in between).
    """

    __slots__ = ("_request_ids_tag", "_request_ids", "_lists", "_reply_ids_tag", "_blocking_state")

    def __init__(self, request_ids: tuple[int, Callable], reply_ids: tuple[int, Callable],
                 request_bodies: tuple[int, Callable], reply_bodies: tuple[int, Callable],
                 blocking_state: enum.Enum) -> None:
        self._blocking_state = blocking_state
        self._request_ids_tag, self._request_ids = request_ids
        self._reply_ids_tag = reply_ids[0]
        # The list-carrying messages by tag: the builder, and whether the list holds (id, size)
        # pairs (True), ids (False) or messages (None).
        self._lists: dict[int, tuple[Callable, bool | None]] = {
            reply_ids[0]: (reply_ids[1], True),
            request_bodies[0]: (request_bodies[1], False),
            reply_bodies[0]: (reply_bodies[1], None),
        }

    def read(self, state: enum.Enum, raw: bytes) -> object | None:
        """The message ``raw``, received in ``state``, holds if it is one of the four in the usual form, else None.

        ``raw`` must be one whole well-formed CBOR item (what the channel's framing returns).
        """
        read = self.read_prefix(state, raw)
        return read[0] if read is not None and read[1] == len(raw) else None

    def read_prefix(self, state: enum.Enum, buf: bytes) -> tuple[object, int] | None:
        """``(message, end)`` if ``buf``, received in ``state``, starts with one of the four in the usual
        form, ending at ``end``; else None.

        What follows the message, if anything, is not looked at, and ``buf`` may end inside it
        (then None). Every byte up to ``end`` is checked (heads, sizes, ranges, each body walked
        as one CBOR item), so ``buf[:end]`` is exactly one well-formed CBOR item: a channel may
        frame the message by it without walking it again (``MuxChannel.take_decoded``).
        """
        if type(buf) is not bytes or len(buf) < 3:
            return None
        try:
            first, tag = buf[0], buf[1]
            if first == _ARRAY_2:
                known = self._lists.get(tag)
                if known is None or buf[2] != _INDEFINITE:
                    return None
                build, sized = known
                read = _messages(buf) if sized is None else _id_list(buf, sized)
                if read is None:
                    return None
                items, end = read
                if not items and state is self._blocking_state and tag == self._reply_ids_tag:
                    return None
                return build(items), end
            if first == _ARRAY_4 and tag == self._request_ids_tag:
                read = _request_ids(buf)
                if read is None:
                    return None
                blocking, ack, req, end = read
                return self._request_ids(blocking, ack, req), end
        except (IndexError, struct.error, CborError):
            # Not the usual form after all, or cut short: ``buf`` ends inside the message.
            return None
        return None


def _uint(raw: bytes, pos: int, maximum: int) -> tuple[int | None, int]:
    """``(value, next)`` of the unsigned integer at ``pos``; value None unless a head of at most 32 bits
    within ``maximum`` (a word16 in a 4-byte head is left to the strict reading, which takes it)."""
    value = raw[pos]
    if value < 24:
        return value, pos + 1
    if value == 24:
        return raw[pos + 1], pos + 2
    if value == 25:
        return raw[pos + 1] << 8 | raw[pos + 2], pos + 3
    if value == 26 and maximum > MAX_WORD16:
        return _unpack_uint32(raw, pos + 1)[0], pos + 5
    return None, pos


def _request_ids(raw: bytes) -> tuple[bool, int, int, int] | None:
    """``blocking, ack, req, end`` of ``84 tag f4|f5 ack req`` (the tag checked by the caller)."""
    flag = raw[2]
    if flag != _TRUE and flag != _FALSE:
        return None
    ack, pos = _uint(raw, 3, MAX_WORD16)
    if ack is None:
        return None
    req, pos = _uint(raw, pos, MAX_WORD16)
    if req is None:
        return None
    return flag == _TRUE, ack, req, pos


def _id_list(raw: bytes, sized: bool) -> tuple[tuple, int] | None:
    """The ids of ``... 9f (5820 <id>)* ff``, or with ``sized`` the ``(id, size)`` pairs of
    ``... 9f (82 5820 <id> size)* ff``, read from offset 3, and the offset after the break."""
    start_of_item = _PAIR_START if sized else _ID_HEAD
    id_at = len(start_of_item)
    items = []
    pos = 3
    while raw[pos] != _BREAK:
        if not raw.startswith(start_of_item, pos):
            return None
        start = pos + id_at
        pos = start + ID_SIZE
        if sized:
            size, pos = _uint(raw, pos, MAX_WORD32)
            if size is None:
                return None
            items.append((raw[start:start + ID_SIZE], size))
        else:
            items.append(raw[start:pos])
    return tuple(items), pos + 1


def _messages(raw: bytes) -> tuple[tuple[bytes, ...], int] | None:
    """The messages of ``... 9f (85 5820 <id> <payload array> ...)* ff``, each its exact bytes, read from
    offset 3, and the offset after the break."""
    messages = []
    pos = 3
    end = len(raw)
    while raw[pos] != _BREAK:
        if not raw.startswith(_MESSAGE_START, pos) or raw[pos + _PAYLOAD_AT] >> 5 != _MAJOR_ARRAY:
            return None
        stop = item_end(raw, pos, end)
        messages.append(raw[pos:stop])
        pos = stop
    return tuple(messages), pos + 1
