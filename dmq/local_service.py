"""The node-to-client service on the local Unix socket: protocols 14 and 15 (docs/protocol/local-protocols.md 7, 8).

Mithril signers open a connection per message (handshake 4097, one submission, MsgDone);
aggregators keep one connection and ask for messages with blocking requests. Both patterns
are served by the same code: each connection gets a DMQ N2C handshake, a mux with the two
responder instances (unlimited ingress, as the reference), a submission server whose
verdicts come from the shared :class:`~dmq.ingress.Ingress`, and a notification server
reading its own cursor over the mempool. Both servers start when the client first speaks
their protocol (the reference's ``StartOnDemand``), and the handshake reply to a proposal
seen before is remembered: a signer's connection costs one task for the connection, one
for the mux writer and one for the submission server.

Mithril's publisher sends MsgDone and then leaves its connection open for as long as its
process lives (docs/protocol/local-protocols.md 7.4), and the reference keeps such a
connection until the client closes it. Here a connection on which no instance runs is
closed after ``LocalIdleTimeout``, as is one whose handshake does not complete within that
time: descriptors cannot pile up until the node stops accepting. A notification client
waiting on a request, or between requests, has its instance running and is never cut.
Running out of descriptors anyway is traced and counted (:mod:`dmq.descriptors`).
"""

from __future__ import annotations

import errno
import os
import socket as stdlib_socket
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from handshake.driver import ServerAnswers, run_server
from handshake.errors import HandshakeError, HandshakeQueryResult
from handshake.links import DMQ_N2C_TOPICS_V1, DMQ_NODE_TO_CLIENT, DMQ_NODE_TO_CLIENT_TOPICS, dmq_node_to_client_versions
from miniprotocols import local_msg_notification, local_msg_submission, local_topic_subscription
from miniprotocols.framework.cbor_write import CheckedItems
from miniprotocols.local_msg_submission import (
    ACCEPTED,
    InvalidMessageBytes,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
    RejectOther,
    RejectText,
    SubmitResult,
)
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mode, Mux, Provenance

from dmq.codec import MessageDecodeError, is_legacy_layout
from dmq.connection import IdleReaper, ProtocolTask, run_connection
from dmq.descriptors import EXHAUSTION_ERRNOS, AcceptExhaustion
from dmq.errors import OperatorError
from dmq.ingress import Ingress
from dmq.mempool import Mempool, MempoolCursor
from dmq.recorder.recorder import NO_RECORDER, NullRecorder, TrafficRecorder
from dmq.trace import HANDSHAKE_QUERY, ConnectionClosed, ConnectionOpened, MessageNotified, NodeListening, Tracer
from dmq.validation import LocalRejectKind, SigValidationError, local_reject_reason

__all__ = ["LocalService", "LocalSocketError", "check_socket_path", "N2C_INGRESS_LIMIT", "reject_reason_for"]

#: Pending connections the local socket queues before connects fail (see ``bind_unix_socket``).
LISTEN_BACKLOG = 4096
#: accept(2) failures that mean "too busy right now" (as ``trio.serve_listeners``): retried after a pause.
ACCEPT_CAPACITY_ERRNOS = EXHAUSTION_ERRNOS
ACCEPT_RETRY_DELAY = 0.1
#: ``LocalIdleTimeout``'s default (docs/protocol/configuration.md).
DEFAULT_IDLE_TIMEOUT = 10.0
#: Connections accepted in one pass of the accept loop before it lets the others run.
ACCEPTS_PER_PASS = 64
#: accept(2) failures that concern only the connection being accepted (as ``trio.SocketListener``).
ACCEPT_ABORTED_ERRNOS = frozenset({errno.ECONNABORTED, errno.EPERM, errno.EPROTO})
#: Local protocols have no ingress limit in the reference (``maxBound :: Word32``).
N2C_INGRESS_LIMIT = 0xFFFFFFFF


class LocalSocketError(OperatorError):
    """The local socket path cannot be used."""


def reject_reason_for(error: SigValidationError) -> SubmitResult:
    """The protocol-14 reject reason for a validation error (docs/protocol/local-protocols.md 7.2)."""
    value = local_reject_reason(error)
    kind = LocalRejectKind(value[0])
    if kind is LocalRejectKind.INVALID:
        return RejectInvalid(value[1])
    if kind is LocalRejectKind.ALREADY_RECEIVED:
        return RejectAlreadyReceived()
    if kind is LocalRejectKind.EXPIRED:
        return RejectExpired()
    return RejectOther(value[1])


def legacy_text_reason_for(error: SigValidationError) -> RejectText:
    """The reason as the bare text pallas 0.34 decodes: the text of the structured reason, or
    the reference's constructor name where that has none (``SigDuplicate``, ``SigExpired``)."""
    value = local_reject_reason(error)
    return RejectText(value[1] if len(value) > 1 else error.show())


class _CursorSource:
    """A notification client's cursor, handing the server the messages' received bytes."""

    def __init__(self, cursor: MempoolCursor, tracer: Tracer, client: str,
                 keep: Callable[[bytes], bool] | None = None) -> None:
        self._cursor = cursor
        self._tracer = tracer
        self._client = client
        self._keep = keep

    async def next_batch(self, blocking: bool, limit: int) -> tuple[Sequence[bytes], bool]:
        entries, has_more = await self._cursor.next_batch(blocking, limit)
        if self._keep is not None:
            # A topic instance stores tagged messages too; protocol 15 serves raw ones only.
            entries = [entry for entry in entries if self._keep(entry.raw)]
            while blocking and not entries:
                entries, has_more = await self._cursor.next_batch(blocking, limit)
                entries = [entry for entry in entries if self._keep(entry.raw)]
        raws = [entry.raw for entry in entries]
        tracer = self._tracer
        if raws and tracer.wants(MessageNotified):
            tracer.emit(MessageNotified(tracer.now(), len(raws), sum(map(len, raws)), self._client,
                                        tuple(entry.message_id for entry in entries), has_more))
        # The mempool's messages were decoded strictly when accepted: no walk again per reply.
        return CheckedItems(raws), has_more


def check_socket_path(path: Path) -> bool:
    """Raise :class:`LocalSocketError` if the node could not bind ``path``; True when a stale
    socket file (nobody listening, a leftover of a previous run) is there to be replaced.

    Touches nothing, so ``dmq-node --check`` asks the same questions as the bind.
    """
    stale = False
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise LocalSocketError(f"local socket {path}: a file that is not a socket is in the way")
        probe = stdlib_socket.socket(stdlib_socket.AF_UNIX, stdlib_socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            stale = True
        else:
            raise LocalSocketError(f"local socket {path}: another process is already listening on it")
        finally:
            probe.close()
    if not path.parent.is_dir():
        raise LocalSocketError(f"local socket {path}: directory {path.parent} does not exist")
    return stale


def bind_unix_socket(path: Path, mode: int) -> trio.socket.SocketType:
    """Bind and listen on ``path``, replacing a stale socket file but never a live one."""
    if check_socket_path(path):
        path.unlink()
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        # Create the file with the final permissions: no window where others may connect.
        old_umask = os.umask(0o777 & ~mode)
        try:
            sock._sock.bind(str(path))  # synchronous bind of a path: no I/O to wait for
        finally:
            os.umask(old_umask)
        os.chmod(path, mode)
        # Mithril signers of a whole round connect within moments of each other; a short
        # backlog makes their connects fail with EAGAIN (the kernel caps it at somaxconn).
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        reason = "path too long for a Unix socket" if exc.errno in (errno.ENAMETOOLONG, errno.EINVAL) else exc.strerror
        raise LocalSocketError(f"local socket {path}: cannot bind: {reason}") from None
    return sock


class LocalService:
    """Serves protocols 14 and 15 to every client of the local socket."""

    def __init__(self, ingress: Ingress, mempool: Mempool, tracer: Tracer, network_magic: int,
                 recorder: TrafficRecorder | NullRecorder = NO_RECORDER, *, topics: Any = None,
                 notify_filter: Callable[[bytes], bool] | None = None, legacy_reject_text: bool = False,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> None:
        self.ingress = ingress
        #: Seconds a connection may hold no running instance, or stay in its handshake (``LocalIdleTimeout``).
        self.idle_timeout = idle_timeout
        #: Reject legacy-format messages with a bare text (``LegacyRejectText``, docs/protocol/local-protocols.md 7.2).
        self.legacy_reject_text = legacy_reject_text
        self.mempool = mempool
        self.tracer = tracer
        self.recorder = recorder
        #: The instance's topic service (``session(client)`` per protocol 1000 connection), or
        #: None: then only 4097 is offered, exactly the reference's table.
        self.topics = topics
        self.notify_filter = notify_filter
        self.versions = dmq_node_to_client_versions(network_magic, topics=topics is not None)
        self.link = DMQ_NODE_TO_CLIENT if topics is None else DMQ_NODE_TO_CLIENT_TOPICS
        self._answers = ServerAnswers(self.versions, self.link)
        self._next_client = 0
        self.connections = 0
        self.exhaustion = AcceptExhaustion(tracer, "n2c")
        #: Closes connections idle for ``idle_timeout``, and handshakes that take longer (run by ``serve_path``).
        self.reaper = IdleReaper(idle_timeout)

    async def submit(self, raw: bytes) -> SubmitResult:
        try:
            error = await self.ingress.submit_local(raw)
        except MessageDecodeError as exc:
            raise InvalidMessageBytes(str(exc)) from exc
        if error is None:
            return ACCEPTED
        if self.legacy_reject_text and is_legacy_layout(raw):
            return legacy_text_reason_for(error)
        return reject_reason_for(error)

    async def serve_path(self, path: str | os.PathLike[str], *, mode: int = 0o660,
                         task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on the Unix socket at ``path`` until cancelled; remove it afterwards."""
        path = Path(path)
        sock = bind_unix_socket(path, mode)
        self.tracer.emit(NodeListening(self.tracer.now(), str(path), "n2c"))
        try:
            with sock:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self.reaper.run)
                    task_status.started()
                    await self._accept_loop(sock, nursery)
        finally:
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    async def _accept_loop(self, sock: trio.socket.SocketType, nursery: trio.Nursery) -> None:
        """Accept clients until cancelled, one task each (``trio.serve_listeners`` without the
        listener and the forced close around every handler: one connection per Mithril
        message makes those a noticeable share of its cost).

        Every connection already waiting is accepted in one pass, up to
        :data:`ACCEPTS_PER_PASS`: signers of a round connect together, and a scheduler pass
        per accepted connection was a visible share of a signer's cost.
        """
        listening = sock._sock  # the non-blocking socket under trio's wrapper
        exhaustion = self.exhaustion
        while True:
            await trio.lowlevel.wait_readable(listening)
            for _ in range(ACCEPTS_PER_PASS):
                try:
                    client, _ = listening.accept()
                except BlockingIOError:
                    break
                except OSError as exc:
                    if exc.errno in ACCEPT_ABORTED_ERRNOS:
                        continue  # that client is gone already
                    if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                        raise
                    # Out of descriptors or memory: the clients already connected finish, or
                    # fall idle and are closed, and free some.
                    exhaustion.failed(exc)
                    await trio.sleep(ACCEPT_RETRY_DELAY)
                    break
                exhaustion.accepted()
                nursery.start_soon(self._serve_client, trio.SocketStream(trio.socket.from_stdlib_socket(client)))
            await trio.lowlevel.cancel_shielded_checkpoint()  # let the accepted connections run

    async def _serve_client(self, stream: trio.SocketStream) -> None:
        try:
            await self.handle_stream(stream)
        finally:
            stream.socket.close()

    async def handle_stream(self, stream: trio.abc.Stream) -> None:
        self._next_client += 1
        client = f"local#{self._next_client}"
        bearer = Bearer(stream)
        # The local handshake has no time limit (as the reference), but a client that never
        # completes it must not hold its descriptor for ever.
        result = None
        with trio.CancelScope() as handshake:
            self.reaper.idle(handshake, handshake.cancel)
            try:
                result = await run_server(bearer, self.versions, self.link, answers=self._answers)
            except HandshakeQueryResult:
                self.tracer.emit(ConnectionClosed(self.tracer.now(), client, "n2c", HANDSHAKE_QUERY))
                return
            except HandshakeError as exc:
                self.tracer.emit(ConnectionClosed(self.tracer.now(), client, "n2c", f"handshake: {exc}"))
                return
            finally:
                self.reaper.busy(handshake)
        if result is None:
            self.tracer.emit(ConnectionClosed(self.tracer.now(), client, "n2c",
                                              f"handshake: not completed within {self.idle_timeout:g} s"))
            return
        self.connections += 1
        self.tracer.emit(ConnectionOpened(self.tracer.now(), client, "n2c", result.version))
        mux = Mux(bearer, Provenance.INBOUND)
        submission = mux.register(local_msg_submission.PROTOCOL_NUM, Mode.RESPONDER, N2C_INGRESS_LIMIT)
        notification = mux.register(local_msg_notification.PROTOCOL_NUM, Mode.RESPONDER, N2C_INGRESS_LIMIT)
        # Both start when the client first speaks them: a signer never pays for notification,
        # not even for its cursor. Each start after a clean finish (MsgDone, MsgClientDone) is
        # a new instance: its notification cursor begins at the start of the mempool again,
        # as the reference's server begins each instance at the mempool's first index.
        tasks = [
            ProtocolTask(submission, lambda: local_msg_submission.serve(submission, self.submit),
                         "local-msg-submission", on_demand=True),
            ProtocolTask(notification, lambda: local_msg_notification.serve(
                notification, _CursorSource(self.mempool.cursor(), self.tracer, client, self.notify_filter)),
                "local-msg-notification", on_demand=True),
        ]
        if self.topics is not None and result.version == DMQ_N2C_TOPICS_V1:
            channel = mux.register(local_topic_subscription.PROTOCOL_NUM, Mode.RESPONDER, N2C_INGRESS_LIMIT)
            session = self.topics.session(client)
            tasks.append(ProtocolTask(channel, lambda: local_topic_subscription.serve(channel, session),
                                      "local-topic-subscription"))
        if self.recorder is NO_RECORDER:
            end = await run_connection(mux, tasks, peer_close_is_clean=True, idle_from_start=True,
                                       reaper=self.reaper)
        else:
            with self.recorder.watching(client, mux, "n2c"):
                end = await run_connection(mux, tasks, peer_close_is_clean=True, idle_from_start=True,
                                           reaper=self.reaper)
        self.connections -= 1
        self.tracer.emit(ConnectionClosed(self.tracer.now(), client, "n2c", end.describe()))
