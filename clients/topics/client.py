"""A topic client for a DMQ node's local socket (docs/topics-design.md 3): protocol 1000 under 12289.

It proposes ``{4097, 12289}``: a node with topics agrees on 12289 and serves protocols 14, 15
and 1000; a node without them (or the reference node, which skips the unknown number) agrees
on 4097, which this client reports as :class:`TopicsUnavailable`. The connection is the
Mithril integration's :class:`~clients.mithril.connection.LocalConnection` with protocol
1000 registered beside 14 and 15.
"""

from __future__ import annotations

import os
import time
from typing import Any

import trio
from nacl.signing import SigningKey

from handshake.links import DMQ_N2C_TOPICS_V1, DMQ_NODE_TO_CLIENT_TOPICS, dmq_node_to_client_versions
from clients.mithril.connection import (
    CLOSE_TIMEOUT,
    EXCHANGE_ERRORS,
    N2C_INGRESS_LIMIT,
    LocalConnection,
    open_local_connection,
)
from clients.mithril.errors import DmqClientError
from miniprotocols.local_topic_subscription import (
    Auth,
    Durable,
    LocalTopicClient,
    MsgReject,
    PROTOCOL_NUM,
    Resume,
)
from ouroboros_mux.mux import Mode, Mux, Provenance
from topics import cbor
from topics.auth import sign_auth

__all__ = ["TopicsUnavailable", "TopicRequestRefused", "TopicConnection", "open_topic_connection",
           "Item", "decode_item", "make_auth"]


class TopicsUnavailable(DmqClientError):
    """The node agreed on 4097 only: it does not serve protocol 1000."""


class TopicRequestRefused(DmqClientError):
    """The node answered a request with ``MsgReject``."""

    def __init__(self, reject: MsgReject) -> None:
        retry = "" if reject.retry_after is None else f" (retry after {reject.retry_after} s)"
        super().__init__(f"refused: {reject.text} (code {reject.code}){retry}")
        self.reject = reject


class TopicConnection(LocalConnection):
    """A local connection that also speaks protocol 1000 (``self.topics``)."""

    def __init__(self, socket_path: str, network_magic: int, mux: Mux) -> None:
        super().__init__(socket_path, network_magic, mux)
        self.topics = LocalTopicClient(mux.register(PROTOCOL_NUM, Mode.INITIATOR, N2C_INGRESS_LIMIT))

    @classmethod
    async def connect(cls, socket_path: str | os.PathLike[str], network_magic: int) -> TopicConnection:
        path = os.fspath(socket_path)
        bearer, result = await cls.open_and_handshake(
            path, network_magic, dmq_node_to_client_versions(network_magic, topics=True), DMQ_NODE_TO_CLIENT_TOPICS)
        if result.version != DMQ_N2C_TOPICS_V1:
            await bearer.aclose()
            raise TopicsUnavailable(f"DMQ node at {path} agreed on version {result.version}: it carries no topics")
        return cls(path, network_magic, Mux(bearer, Provenance.OUTBOUND))

    async def close(self) -> None:
        """Say ``MsgDone`` on protocol 1000 (best effort), then close as a local connection does."""
        try:
            with trio.move_on_after(CLOSE_TIMEOUT):
                await self.topics.done()
        except EXCHANGE_ERRORS:
            pass
        await super().close()

    async def ask(self, coroutine: Any) -> Any:
        """Await one exchange; a lost connection is one :class:`ConnectionLost`, a reject raises."""
        try:
            reply = await coroutine
        except EXCHANGE_ERRORS as exc:
            raise self.lost(exc) from None
        if isinstance(reply, MsgReject):
            raise TopicRequestRefused(reply)
        return reply


def open_topic_connection(socket_path: str | os.PathLike[str], network_magic: int) -> Any:
    """``async with open_topic_connection(path, magic) as conn``: a :class:`TopicConnection` for
    the block, closed with ``MsgDone`` after it, aborted on error."""
    return open_local_connection(socket_path, network_magic, connection_class=TopicConnection)


class Item:
    """One delivered item ``[subId, dseq, itemBody]`` with its exact bytes."""

    __slots__ = ("raw", "sub_id", "dseq", "kind", "meta", "payload")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.sub_id, self.dseq, body = cbor.decode(raw)
        self.kind = body[0]
        self.meta = body[1] if self.kind in (0, 5) else None
        self.payload = body[2] if self.kind in (0, 5) else body[1]

    def __repr__(self) -> str:
        return f"Item(sub={self.sub_id}, dseq={self.dseq}, kind={self.kind})"


def decode_item(raw: bytes) -> Item:
    return Item(raw)


def make_auth(key: SigningKey, op: str, group: bytes | None, network_magic: int, now: float | None = None) -> Auth:
    """The ``auth`` of docs/topics-design.md 3.4 for ``op`` by ``key``."""
    ts = int(time.time() if now is None else now)
    return Auth(ts, sign_auth(key, op, group, ts, network_magic))


__all__ += ["Durable", "Resume"]
