"""A scripted node-to-node peer: real TCP, handshake and mux, with protocol 11 driven by hand.

It dials a node like any peer would (DMQ N2N handshake, duplex unless told otherwise),
registers both instances of sig submission and keep-alive, answers the node's keep-alives,
and exposes a bare :class:`Driver` for the sig-submission instance that does the job asked
for (serve or pull, whichever instance that is in the version), so its user sends exactly
the messages it wants, in or out of the rules. It records how the connection ended.

The netlab's adversaries (:mod:`.adversary`) are built on it, and so are the tests that
check the node's reactions to a misbehaving peer.
"""

from __future__ import annotations

from collections.abc import Iterable

import trio

from handshake.driver import run_client
from handshake.links import DMQ_NODE_TO_NODE
from handshake.version_data import NodeToNodeVersionData
from miniprotocols import keep_alive, peer_sharing
from miniprotocols.framework import Driver
from miniprotocols.sig_submission import INGRESS_LIMIT, Side
from miniprotocols.sig_submission_v1 import MsgInit
from ouroboros_mux.bearer import connect_tcp
from ouroboros_mux.mux import Mode, Mux, MuxChannel, Provenance

from dmq.diffusion import DIALECTS

__all__ = ["ScriptedPeer", "open_side"]


class ScriptedPeer:
    """One hand-driven connection to ``host:port`` proposing the node-to-node ``versions``
    (one int or several; the node picks, :attr:`version` says which)."""

    def __init__(self, host: str, port: int, versions: int | Iterable[int], *, magic: int,
                 peer_sharing: bool = False, initiator_only: bool = False) -> None:
        self.host = host
        self.port = port
        self.versions = (versions,) if isinstance(versions, int) else tuple(versions)
        self.version = max(self.versions)
        self.dialect = DIALECTS[self.version]
        self.data = NodeToNodeVersionData(magic, initiator_only, peer_sharing, False)
        self.ended = trio.Event()
        self.end_error: BaseException | None = None
        self.channels: dict[tuple[int, Mode], MuxChannel] = {}

    async def __aenter__(self) -> ScriptedPeer:
        self.bearer = await connect_tcp(self.host, self.port)
        try:
            host, port = self.bearer.stream.socket.getsockname()[:2]
            #: How the node names this connection (the remote end it sees).
            self.label = f"{host}:{port}"
            self.result = await run_client(self.bearer, {v: self.data for v in self.versions}, DMQ_NODE_TO_NODE)
        except BaseException:
            with trio.CancelScope(shield=True):
                await self.bearer.aclose()
            raise
        self.version = self.result.version
        self.dialect = DIALECTS[self.version]
        self.mux = Mux(self.bearer, Provenance.OUTBOUND)
        agreed = self.result.agreed_data
        modes = (Mode.INITIATOR, Mode.RESPONDER) if agreed.duplex else (Mode.INITIATOR,)
        protocols = {11: INGRESS_LIMIT, 12: keep_alive.INGRESS_LIMIT}
        if agreed.peer_sharing:
            protocols[13] = peer_sharing.INGRESS_LIMIT
        for number, limit in protocols.items():
            for mode in modes:
                self.channels[(number, mode)] = self.mux.register(number, mode, limit)
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        self._cancel = nursery.cancel_scope
        nursery.start_soon(self._run_mux)
        if agreed.duplex:
            nursery.start_soon(self._answer_keep_alives)
        return self

    async def _run_mux(self) -> None:
        try:
            await self.mux.run()
        except Exception as exc:
            self.end_error = exc
        finally:
            self.ended.set()

    async def _answer_keep_alives(self) -> None:
        try:
            await keep_alive.serve(self.channels[(12, Mode.RESPONDER)])
        except Exception:
            pass

    async def __aexit__(self, *exc) -> None:
        self._cancel.cancel()
        await self._nursery_cm.__aexit__(None, None, None)
        with trio.CancelScope(shield=True):
            await self.bearer.aclose()

    def mode_for(self, side: Side) -> Mode:
        """Which of our sig-submission instances does ``side`` in this version."""
        return Mode.INITIATOR if self.dialect.side_of(True) is side else Mode.RESPONDER

    def channel(self, side: Side) -> MuxChannel:
        return self.channels[(11, self.mode_for(side))]

    def driver(self, side: Side) -> Driver:
        """A bare driver for the instance doing ``side``: ``Side.PULLING`` pulls, ``Side.SERVING`` serves."""
        role = self.dialect.serving_role if side is Side.SERVING else self.dialect.pulling_role
        return Driver(self.channel(side), self.dialect.spec, role)

    async def wait_closed(self, timeout: float = 5.0) -> BaseException | None:
        """Wait for the node to end the connection; return the error our mux saw."""
        with trio.fail_after(timeout):
            await self.ended.wait()
        return self.end_error


async def open_side(peer: ScriptedPeer, side: Side):
    """The driver for ``side``, past V1's MsgInit (sent by the serving side)."""
    driver = peer.driver(side)
    if peer.dialect.init is not None:
        if side is Side.PULLING:
            assert isinstance(await driver.recv(), MsgInit)
        else:
            await driver.send(peer.dialect.init())
    return driver
