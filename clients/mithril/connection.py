"""One connection to a DMQ node's local socket, opened the way Pallas's ``DmqClient`` opens it.

Connect to the Unix socket, propose ``{4097: [dmqMagic, false]}`` (the bytes
``8200a1191001821a<magic>f4``, docs/protocol/handshake.md 4.8), then run the multiplexer as the initiator with the
two node-to-client protocols: local message submission (14) and local message notification
(15). Both are registered on every connection, as Pallas does; registering sends nothing, so a
publisher that only submits and a consumer that only listens put the same bytes on the wire as
the Mithril signer and aggregator.

The mux runs as a task of a nursery owned by the caller, so a consumer can keep its connection
across calls. Closing is graceful (the bytes already sent, such as ``MsgDone``, are written
before the socket closes); aborting is immediate, as Pallas's ``abort``.
"""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import AsyncIterator

import trio

from handshake.driver import connect_and_handshake
from handshake.errors import HandshakeError
from handshake.links import DMQ_NODE_TO_CLIENT, HandshakeLink, VersionTable, dmq_node_to_client_versions
from handshake.protocol import HandshakeResult
from miniprotocols.framework import ProtocolError
from miniprotocols.local_msg_notification import LocalMsgNotificationClient
from miniprotocols.local_msg_notification import PROTOCOL_NUM as NOTIFICATION_PROTOCOL
from miniprotocols.local_msg_submission import PROTOCOL_NUM as SUBMISSION_PROTOCOL
from miniprotocols.local_msg_submission import LocalMsgSubmissionClient
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import ChannelClosed
from ouroboros_mux.errors import ConnectFailed, MuxError
from ouroboros_mux.mux import Mode, Mux, Provenance

from .errors import ConnectionLost, HandshakeFailed, NodeUnreachable

__all__ = ["LocalConnection", "open_local_connection", "N2C_INGRESS_LIMIT", "CLOSE_TIMEOUT", "EXCHANGE_ERRORS"]

#: Node-to-client protocols have no ingress limit in the reference or Pallas.
N2C_INGRESS_LIMIT = 0xFFFF_FFFF
#: How long a graceful close may take to flush before the connection is cut.
CLOSE_TIMEOUT = 5.0

#: Errors of an exchange that mean the connection is no longer usable.
EXCHANGE_ERRORS = (ChannelClosed, ProtocolError, MuxError)


class LocalConnection:
    """An open, handshaken connection whose mux runs in a nursery of the caller."""

    def __init__(self, socket_path: str, network_magic: int, mux: Mux) -> None:
        self.socket_path = socket_path
        self.network_magic = network_magic
        self.mux = mux
        self.submission = LocalMsgSubmissionClient(
            mux.register(SUBMISSION_PROTOCOL, Mode.INITIATOR, N2C_INGRESS_LIMIT))
        self.notification = LocalMsgNotificationClient(
            mux.register(NOTIFICATION_PROTOCOL, Mode.INITIATOR, N2C_INGRESS_LIMIT))
        self._scope = trio.CancelScope()
        self._ended = trio.Event()
        #: The mux error that ended the connection, if one did.
        self.error: MuxError | None = None

    @classmethod
    async def connect(cls, socket_path: str | os.PathLike[str], network_magic: int) -> LocalConnection:
        """Connect and handshake; the mux is not running yet (see :meth:`start`).

        Raises :class:`NodeUnreachable` when nothing listens on the path and
        :class:`HandshakeFailed` when the node refuses the proposal or breaks the handshake.
        """
        path = os.fspath(socket_path)
        bearer, _ = await cls.open_and_handshake(path, network_magic, dmq_node_to_client_versions(network_magic),
                                                 DMQ_NODE_TO_CLIENT)
        return cls(path, network_magic, Mux(bearer, Provenance.OUTBOUND))

    @staticmethod
    async def open_and_handshake(path: str, network_magic: int, versions: VersionTable,
                                 link: HandshakeLink) -> tuple[Bearer, HandshakeResult]:
        """Connect to ``path`` and run the client handshake with ``versions``; typed errors for both steps."""
        try:
            return await connect_and_handshake(path, versions, link)
        except ConnectFailed as exc:
            raise NodeUnreachable(f"no DMQ node reachable: {exc}") from None
        except HandshakeError as exc:
            raise HandshakeFailed(f"DMQ node at {path}: {exc} (this client proposed magic {network_magic})") from None

    async def start(self, nursery: trio.Nursery) -> None:
        """Run the mux as a task of ``nursery`` until the connection is closed or aborted."""
        await nursery.start(self._run_mux)

    @classmethod
    async def open(cls, nursery: trio.Nursery, socket_path: str | os.PathLike[str],
                   network_magic: int) -> LocalConnection:
        """:meth:`connect`, then :meth:`start` in ``nursery``."""
        connection = await cls.connect(socket_path, network_magic)
        await connection.start(nursery)
        return connection

    async def _run_mux(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        # The mux closes the bearer however it ends, so it must start before anything can
        # cancel this scope.
        with self._scope:
            task_status.started()
            try:
                await self.mux.run()
            except MuxError as exc:
                self.error = exc
        self._ended.set()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def lost(self, exc: BaseException) -> ConnectionLost:
        """The error to raise when an exchange failed with ``exc`` (one line, naming the node)."""
        cause = self.error if self.error is not None else exc
        return ConnectionLost(f"DMQ node at {self.socket_path}: connection lost: {cause}")

    async def close(self) -> None:
        """Flush what was sent, then close; cut the connection if that takes too long."""
        self.mux.stop()
        with trio.move_on_after(CLOSE_TIMEOUT):
            await self._ended.wait()
            return
        self.abort()
        await self._ended.wait()

    def abort(self) -> None:
        """Close at once, dropping whatever is unsent."""
        self._scope.cancel()


@asynccontextmanager
async def open_local_connection(socket_path: str | os.PathLike[str], network_magic: int, *,
                                connection_class: type[LocalConnection] | None = None
                                ) -> AsyncIterator[LocalConnection]:
    """A connection for the duration of a block: closed gracefully after it, aborted on error.

    Errors of the block and of connecting reach the caller as they are, not wrapped in the
    exception group of the nursery that runs the mux. ``connection_class`` is a subclass
    speaking more protocols (the topic client's).
    """
    connection = await (connection_class or LocalConnection).connect(socket_path, network_magic)
    failure: BaseException | None = None
    async with trio.open_nursery() as nursery:
        await connection.start(nursery)
        try:
            yield connection
        except BaseException as exc:
            connection.abort()
            failure = exc
        else:
            await connection.close()
    if failure is not None:
        raise failure
