"""Local topic subscription codec (docs/topics-design.md 3.5).

Messages are small definite arrays written in the deterministic encoding. Items of
``MsgReplyNext`` are spliced in as the exact bytes the node queued (a DMQ message inside an
item is never re-encoded) and handed to the client as raw spans. Decoding is strict: a field
of the wrong type or size, an unknown key, or ``maxItems = 0`` is a decoder failure, which
closes the connection (docs/topics-design.md 3.4, protocol errors).
"""

from __future__ import annotations

import enum
from typing import Any

import cbor2

from ouroboros_mux.cbor import CborError, Cursor, item_end

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.envelope import open_envelope
from .types import (
    Auth,
    Durable,
    MsgDone,
    MsgJoin,
    MsgJoinAck,
    MsgLeave,
    MsgLeaveAck,
    MsgPublish,
    MsgPublished,
    MsgPull,
    MsgPullReply,
    MsgReject,
    MsgReplyNext,
    MsgRequestNext,
    MsgSubscribe,
    MsgSubscribed,
    MsgUnsubscribe,
    MsgUnsubscribed,
    Resume,
)

__all__ = ["LocalTopicCodec"]

_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF


def _dump(value: Any) -> bytes:
    return cbor2.dumps(value, canonical=True)


def _auth(auth: Auth) -> list[Any]:
    return [auth.ts, auth.sig]


def _uint(value: Any, what: str, maximum: int = _U64) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= maximum:
        raise CodecError(f"{what} must be an unsigned integer up to {maximum}")
    return value


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise CodecError(f"{what} must be a boolean")
    return value


def _bytes(value: Any, what: str, size: int | None = None, low: int = 0, high: int | None = None) -> bytes:
    if not isinstance(value, bytes):
        raise CodecError(f"{what} must be a byte string")
    if size is not None and len(value) != size:
        raise CodecError(f"{what} must be {size} bytes")
    if len(value) < low or (high is not None and len(value) > high):
        raise CodecError(f"{what} must be {low}..{high} bytes")
    return value


def _read_auth(value: Any) -> Auth:
    if not isinstance(value, list) or len(value) != 2:
        raise CodecError("auth is [ts, sig]")
    return Auth(_uint(value[0], "auth ts", _U32), _bytes(value[1], "auth sig", 64))


def _read_start(value: Any) -> int | Resume:
    if isinstance(value, list):
        if len(value) != 2 or value[0] != 3:
            raise CodecError("start is 0, 1, 2 or [3, dseq]")
        return Resume(_uint(value[1], "resume dseq"))
    if value in (0, 1, 2) and not isinstance(value, bool):
        return value
    raise CodecError("start is 0, 1, 2 or [3, dseq]")


def _read_durable(value: Any) -> Durable:
    if not isinstance(value, list) or len(value) not in (1, 2):
        raise CodecError("durable is [name, ? auth]")
    name = _bytes(value[0], "durable name", low=1, high=32)
    return Durable(name, _read_auth(value[1]) if len(value) == 2 else None)


def _optional_detail(fields: list[Any], n: int) -> int | None:
    return _uint(fields[n], "detail") if len(fields) > n else None


class LocalTopicCodec:
    def encode(self, message: Any) -> bytes:
        if isinstance(message, MsgReplyNext):
            items = b"".join(w.check_item(item, "item") for item in message.items)
            return (w.array_header(3) + w.uint(13) + w.array_header(len(message.items)) + items
                    + w.boolean(message.has_more))
        return _dump(self._fields(message))

    @staticmethod
    def _fields(m: Any) -> list[Any]:
        if isinstance(m, MsgSubscribe):
            start = [3, m.start.dseq] if isinstance(m.start, Resume) else m.start
            out = [0, m.filter, start]
            if m.durable is not None:
                out.append([m.durable.name] + ([_auth(m.durable.auth)] if m.durable.auth else []))
            return out
        if isinstance(m, MsgSubscribed):
            return [1, m.sub_id, m.next_dseq]
        if isinstance(m, MsgUnsubscribe):
            return [2, m.sub_id, m.forget]
        if isinstance(m, MsgUnsubscribed):
            return [3, m.sub_id]
        if isinstance(m, MsgJoin):
            return [4, m.subscriber, m.group, m.local, _auth(m.auth)]
        if isinstance(m, (MsgJoinAck, MsgLeaveAck)):
            tag = 5 if isinstance(m, MsgJoinAck) else 7
            return [tag, m.group, m.result] + ([] if m.detail is None else [m.detail])
        if isinstance(m, MsgLeave):
            return [6, m.subscriber, m.group, _auth(m.auth)]
        if isinstance(m, MsgPull):
            return [8, m.subscriber, m.group, list(m.ids)]
        if isinstance(m, MsgPullReply):
            return [9, [list(s) for s in m.statuses]]
        if isinstance(m, MsgPublish):
            return [10, m.body]
        if isinstance(m, MsgPublished):
            return [11, m.dmq_id] + ([] if m.inner_id is None else [m.inner_id])
        if isinstance(m, MsgRequestNext):
            return [12, m.blocking, [list(a) for a in m.acks], m.max_items]
        if isinstance(m, MsgReject):
            return [14, [m.code, m.text] + ([] if m.retry_after is None else [m.retry_after])]
        if isinstance(m, MsgDone):
            return [15]
        raise TypeError(f"not a local topic subscription message: {m!r}")

    def decode(self, state: enum.Enum, raw: bytes) -> Any:
        cursor, length, tag = open_envelope(raw)
        if tag == 13:
            if length != 3:
                raise CodecError("MsgReplyNext has 3 fields")
            return self._reply_next(cursor)
        try:
            if item_end(raw, 0, len(raw)) != len(raw):
                raise CodecError("bytes after the message")
            fields = cbor2.loads(raw)
        except CborError as exc:
            raise CodecError(f"not CBOR: {exc}") from None
        except (cbor2.CBORDecodeError, ValueError) as exc:
            raise CodecError(f"not CBOR: {exc}") from None
        fields = fields[1:]
        try:
            return self._decode_fields(tag, fields)
        except (IndexError, TypeError) as exc:
            raise CodecError(f"message tag {tag}: wrong fields ({exc})") from None

    @staticmethod
    def _reply_next(cursor: Cursor) -> MsgReplyNext:
        count = cursor.array_header()
        items = []
        if count is None:
            while not cursor.at_break():
                items.append(cursor.raw_item())
            cursor.read_break()
        else:
            items = [cursor.raw_item() for _ in range(count)]
        has_more = cursor.bool()
        cursor.expect_end()
        return MsgReplyNext(tuple(items), has_more)

    @staticmethod
    def _decode_fields(tag: int, f: list[Any]) -> Any:
        n = len(f)
        if tag == 0 and n in (2, 3):
            if not isinstance(f[0], list) or not f[0]:
                raise CodecError("a filter is a non-empty list of selectors")
            return MsgSubscribe(f[0], _read_start(f[1]), _read_durable(f[2]) if n == 3 else None)
        if tag == 1 and n == 2:
            return MsgSubscribed(_uint(f[0], "subId", _U32), _uint(f[1], "nextDseq"))
        if tag == 2 and n == 2:
            return MsgUnsubscribe(_uint(f[0], "subId", _U32), _bool(f[1], "forget"))
        if tag == 3 and n == 1:
            return MsgUnsubscribed(_uint(f[0], "subId", _U32))
        if tag == 4 and n == 4:
            return MsgJoin(_bytes(f[0], "subscriber", 32), _bytes(f[1], "group", 32), _bool(f[2], "local"),
                           _read_auth(f[3]))
        if tag in (5, 7) and n in (2, 3):
            cls = MsgJoinAck if tag == 5 else MsgLeaveAck
            if f[1] not in (0, 1) or isinstance(f[1], bool):
                raise CodecError("result is 0 or 1")
            return cls(_bytes(f[0], "group", 32), f[1], _optional_detail(f, 2))
        if tag == 6 and n == 3:
            return MsgLeave(_bytes(f[0], "subscriber", 32), _bytes(f[1], "group", 32), _read_auth(f[2]))
        if tag == 8 and n == 3:
            ids = f[2]
            if not isinstance(ids, list) or not 1 <= len(ids) <= 16:
                raise CodecError("a pull names 1 to 16 ids")
            return MsgPull(_bytes(f[0], "subscriber", 32), _bytes(f[1], "group", 32),
                           tuple(_bytes(i, "upsycle id", 32) for i in ids))
        if tag == 9 and n == 1:
            if not isinstance(f[0], list) or not f[0]:
                raise CodecError("a pull reply holds at least one status")
            statuses = []
            for entry in f[0]:
                if not isinstance(entry, list) or len(entry) != 2 or entry[1] not in range(6):
                    raise CodecError("a pull status is [id, 0..5]")
                statuses.append((_bytes(entry[0], "upsycle id", 32), entry[1]))
            return MsgPullReply(tuple(statuses))
        if tag == 10 and n == 1:
            return MsgPublish(_bytes(f[0], "body", low=1, high=2000))
        if tag == 11 and n in (1, 2):
            dmq_id = None if f[0] is None else _bytes(f[0], "dmqId", 32)
            return MsgPublished(dmq_id, _bytes(f[1], "innerId") if n == 2 else None)
        if tag == 12 and n == 3:
            acks = f[1]
            if not isinstance(acks, list):
                raise CodecError("acks is a list")
            pairs = []
            for ack in acks:
                if not isinstance(ack, list) or len(ack) != 2:
                    raise CodecError("an ack is [subId, dseq]")
                pairs.append((_uint(ack[0], "ack subId", _U32), _uint(ack[1], "ack dseq")))
            max_items = _uint(f[2], "maxItems", 0xFFFF)
            if max_items == 0:
                raise CodecError("maxItems = 0")
            return MsgRequestNext(_bool(f[0], "blocking"), tuple(pairs), max_items)
        if tag == 14 and n == 1:
            reason = f[0]
            if not isinstance(reason, list) or len(reason) not in (2, 3) or not isinstance(reason[1], str):
                raise CodecError("reason is [code, text, ? retryAfter]")
            return MsgReject(_uint(reason[0], "code"), reason[1], _optional_detail(reason, 2))
        if tag == 15 and n == 0:
            return MsgDone()
        raise CodecError(f"unexpected local topic subscription key (length {n + 1}, tag {tag})")
