"""dmsg discovery entries a client signs and hands its node (docs/topics-design.md 6).

An entry is the JSON that the dmsg implementation signs, carried verbatim inside a dmsg body
(6.1): a **client** record lists the servers the key is reachable through (its delegated
servers), a **server** record says where the server listens and how many sessions it has
free. The static key is a secp256k1 key (33 bytes compressed) derived from a 32-byte secret.
Entries of one key are ordered by ``sequence`` and must be fresh: a node accepts an entry
whose timestamp is within the last 300 s (W, 6.2), so a key re-publishes within that window
to stay findable. Signing and the pinned JSON form are :mod:`topics.dmsg.entry`'s.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ecdsa import SECP256k1, SigningKey
from ecdsa.keys import MalformedPointError

from topics.classify import TAG_DMSG
from topics.dmsg.entry import Entry, parse_entry, sign_entry
from topics.envelope import encode_envelope

__all__ = ["VERSION", "static_key", "client_entry", "server_entry", "entry_body"]

#: The entry format version the dmsg implementation writes.
VERSION = "0.0.1"


def static_key(secret: bytes) -> str:
    """The compressed secp256k1 public key of ``secret``, in the 66 lowercase hex digits entries use;
    ``ValueError`` for a secret that is no secp256k1 key (zero or above the group order)."""
    try:
        key = SigningKey.from_string(bytes(secret), curve=SECP256k1)
    except (MalformedPointError, ValueError) as exc:
        raise ValueError(f"not a secp256k1 secret: {exc}") from None
    return key.get_verifying_key().to_string("compressed").hex()


def _signed(secret: bytes, sequence: int, timestamp_ns: int | None, **record) -> bytes:
    stamp = time.time_ns() if timestamp_ns is None else timestamp_ns
    fields = {"delegated": None, "client_type": None, "address": None, "sessions": None, "server_type": None,
              **record}
    entry = Entry(VERSION, sequence, stamp, static_key(secret), signature=None, **fields)
    raw = sign_entry(entry, secret)
    parse_entry(raw, allow_local_addresses=True)     # the node's own check: a bad field fails here, not there
    return raw


def client_entry(secret: bytes, sequence: int, servers: Sequence[str], *, timestamp_ns: int | None = None) -> bytes:
    """The signed client record of ``secret``'s key: reachable through ``servers`` (static keys,
    at most 8)."""
    return _signed(secret, sequence, timestamp_ns, delegated=tuple(s.lower() for s in servers))


def server_entry(secret: bytes, sequence: int, address: str, sessions: int, *,
                 timestamp_ns: int | None = None) -> bytes:
    """The signed server record of ``secret``'s key: listening at ``address`` (``host:port``) with
    ``sessions`` free."""
    return _signed(secret, sequence, timestamp_ns, address=address, sessions=sessions)


def entry_body(entry_json: bytes) -> bytes:
    """The dmsg body (envelope kind 0) that carries a signed entry: what ``MsgPublish`` takes."""
    return encode_envelope(TAG_DMSG, 0, entry_json)
