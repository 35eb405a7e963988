"""What a delivered protocol 1000 item says, decoded for people and programs (docs/topics-design.md 3.5).

:func:`describe` turns an :class:`~clients.topics.client.Item` into a flat record of
plain values (hex for bytes, so it prints as text or JSON as it is): the item's envelope
(subscription, ``dseq``, kind, the ``meta`` map) and what it carries, through the adapters'
own decoders:

- a DMQ message (kind 0): its id, pool and expiry, then the body: a raw payload; an UPSYCLE
  multicast, unicast (with the id 4.3 gives it), advertisement or pull; a Blocklace block
  with its causal metadata (topic, creator sequence number, epoch, pointers, tags) and payload;
  a dmsg entry's fields;
- a payload that is printable UTF-8 is also given as ``text``;
- a Blocklace proof (kind 1), an UPSYCLE gap notice (2), a final epoch (3), a count of dropped
  items (4), a node-local UPSYCLE message (5).

A body that does not decode is described by its size and the decoder's complaint: a client
shows what it got, it does not judge it (the node did).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from dmq.codec import decode_message
from topics.adapter import ITEM_DROPPED, ITEM_EPOCH_FINAL, ITEM_GAP, ITEM_LOCAL, ITEM_MESSAGE, ITEM_PROOF, Reject
from topics.blocklace import codec
from topics.classify import ADAPTER_NUMBERS
from topics.dmsg.adapter import DmsgAdapter
from topics.upsycle import wire
from topics.upsycle.errors import UpsycleReject

from .client import Item

__all__ = ["KINDS", "describe", "describe_body"]

KINDS = {ITEM_MESSAGE: "message", ITEM_PROOF: "proof", ITEM_GAP: "gap", ITEM_EPOCH_FINAL: "epoch_final",
         ITEM_DROPPED: "dropped", ITEM_LOCAL: "local"}
_ADAPTER_NAMES = {number: name for name, number in ADAPTER_NUMBERS.items()}
_PAYLOADS = {0: "event", 1: "ack", 2: "epoch", 3: "advertisement"}
_PROOFS = {0: "same_seq", 1: "double_vote", 2: "owner_equivocation", 3: "epoch_conflict"}


def _hex(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_hex(v) for v in value]
    return value


def describe(item: Item) -> dict[str, Any]:
    """The item as a record: envelope fields first, then the content's."""
    out: dict[str, Any] = {"sub": item.sub_id, "dseq": item.dseq, "kind": KINDS.get(item.kind, item.kind)}
    meta = item.meta or {}
    if meta:
        out["adapter"] = _ADAPTER_NAMES.get(meta.get(0), meta.get(0))
        out["key"] = _hex(meta.get(1, b""))
        for field, name in ((2, "inner"), (3, "pool"), (4, "arrival"), (5, "flags")):
            if field in meta:
                out[name] = _hex(meta[field])
    payload = item.payload
    if item.kind == ITEM_MESSAGE:
        message = decode_message(bytes(payload))
        out.update({"id": message.message_id.hex(), "wrapped_by": message.pool_id.hex(),
                    "expires_at": message.expires_at, "size": len(item.raw)})
        out.update(describe_body(out.get("adapter", "raw"), message.body))
    elif item.kind == ITEM_LOCAL:
        try:
            out.update(_routed(_decoded(lambda: wire.decode_routed(bytes(payload)))))
        except _Undecodable as exc:
            out["undecodable"] = str(exc)
    elif item.kind == ITEM_PROOF:
        out.update(_proof(payload))
    elif item.kind == ITEM_GAP:
        out.update({"group": _hex(payload[0]), "missing": _hex(payload[1])})
    elif item.kind == ITEM_EPOCH_FINAL:
        out.update({"topic": _hex(payload[0]), "epoch": payload[1], "proposal": _hex(payload[2])})
    elif item.kind == ITEM_DROPPED:
        out["dropped"] = payload
    text = _printable(out.get("payload"))
    if text is not None:
        out["text"] = text
    return out


def _printable(payload_hex: str | None) -> str | None:
    """The payload as text when it is printable UTF-8 (most application payloads are)."""
    if payload_hex is None:
        return None
    try:
        text = bytes.fromhex(payload_hex).decode()
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None


class _Undecodable(Exception):
    pass


def _decoded(decode):
    """What ``decode()`` returns; its refusal (the adapters' rejects, CBOR and envelope errors) as
    :class:`_Undecodable`, so that the item is shown with the complaint instead."""
    try:
        return decode()
    except (ValueError, UpsycleReject) as exc:
        raise _Undecodable(str(exc)) from None


def describe_body(adapter: str, body: bytes) -> dict[str, Any]:
    """The fields of an adapter body (``raw``: its bytes as ``payload``)."""
    try:
        if adapter == "upsycle":
            return _upsycle_body(body)
        if adapter == "blocklace":
            return _blocklace_body(body)
        if adapter == "dmsg":
            return _dmsg_body(body)
    except _Undecodable as exc:
        return {"undecodable": str(exc)}
    return {"payload": body.hex()}


def _routed(routed) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "multicast" if routed.is_multicast else "unicast", "upsycle_id": routed.id.hex()}
    if routed.is_multicast:
        out["group"] = routed.grp.hex()
        if routed.seen:
            out["seen"] = _hex(routed.seen)
    else:
        out.update({"source": routed.src.hex(), "destination": routed.dst.hex()})
    out.update({"ttl": routed.ttl, "inner_expires_at": routed.inner_expiry, "payload": routed.body.hex()})
    return out


def _upsycle_body(body: bytes) -> dict[str, Any]:
    envelope = _decoded(lambda: wire.decode_envelope(body))
    content = envelope.content
    if envelope.kind == wire.KIND_ROUTED:
        return _routed(content)
    if envelope.kind == wire.KIND_REISSUE:
        return {"type": "answer", "request": content.request.hex(), **_routed(content.message)}
    if envelope.kind == wire.KIND_PULL:
        return {"type": "pull", "group": content.group.hex(), "ids": _hex(content.ids)}
    family, ip, port = content.addr
    host = str(ipaddress.ip_address(ip))
    return {"type": "advertisement", "peer": content.id.hex(), "address": f"{host}:{port}" if family == 1
            else f"[{host}]:{port}", "revision": content.rev, "groups": _hex(content.grps),
            "services": {str(k): v.hex() for k, v in sorted(content.svcs.items())}}


def _blocklace_body(body: bytes) -> dict[str, Any]:
    kind, value = _decoded(lambda: codec.decode_body(body))
    if kind == codec.KIND_BLOCK:
        payload = value.payload
        out: dict[str, Any] = {"type": "block", "topic": value.topic.hex(), "seq": value.seq, "epoch": value.epoch,
                               "pointers": _hex(value.ptrs), "floor_mask": value.floor_mask,
                               "tags": _hex(value.tags), "payload_type": _PAYLOADS.get(payload.type, payload.type)}
        if payload.type == codec.EVENT:
            out["payload"] = payload.event.hex()
        elif payload.type == codec.EPOCH:
            epoch = payload.epoch
            out.update({"epoch_number": epoch.number, "attempt": epoch.attempt, "ad_version": epoch.ad_version})
            if epoch.is_proposal:
                out["cut"] = _hex(epoch.cut)
                if epoch.stake_epoch is not None:
                    out["stake_epoch"] = epoch.stake_epoch
            else:
                out["acknowledges"] = epoch.acked.hex()
        elif payload.type == codec.AD:
            ad = payload.ad.body
            out.update({"ad_version": ad.version, "publishers": {p.hex(): perms for p, perms in ad.publishers.items()}})
        return out
    names = {codec.KIND_NEED: "need", codec.KIND_CARRY: "carry", codec.KIND_PROOF_NOTICE: "proof_notice"}
    out = {"type": names.get(kind, str(kind))}
    if kind == codec.KIND_NEED:
        out.update({"topic": value.topic.hex(), "ids": _hex(value.ids)})
    elif kind == codec.KIND_PROOF_NOTICE:
        out.update({"topic": value.topic.hex(), "proof": _PROOFS.get(value.kind, value.kind),
                    "culprit": value.culprit.hex()})
    return out


def _dmsg_body(body: bytes) -> dict[str, Any]:
    entry = DmsgAdapter(allow_local_addresses=True).decode(body)
    if isinstance(entry, Reject):
        raise _Undecodable(f"{entry.reason.name}: {entry.detail}")
    out: dict[str, Any] = {"static": entry.static, "sequence": entry.sequence, "timestamp": entry.seconds}
    if entry.address is not None:
        out.update({"address": entry.address, "sessions": entry.sessions})
    if entry.delegated is not None:
        out["servers"] = list(entry.delegated)
    return out


def _proof(payload: Any) -> dict[str, Any]:
    kind, topic, culprit, where = payload[0], payload[1], payload[2], payload[3]
    return {"proof": _PROOFS.get(kind, kind), "topic": _hex(topic), "culprit": _hex(culprit), "where": where}
