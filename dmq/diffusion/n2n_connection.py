"""One node-to-node connection after its handshake: the mux and its mini-protocol instances.

The plan (:mod:`.plan`) says which instances exist; this module says what each runs:

* sig submission (11): the job of an instance comes from the negotiated version
  (``Dialect.side_of``). The serving side reads the node's mempool through the shared
  :class:`~dmq.diffusion.mempool_source.MempoolSigSource`; the pulling side asks for
  ids the node neither holds nor is fetching from another peer (one
  :class:`InFlightRegistry` per node) and hands every batch to the node's one ingress,
  from the mux reader when the ingress admits it without waiting (a plain node's does).
  A batch whose verdict calls for a disconnect (docs/protocol/validation.md 6.2) raises
  :class:`DisconnectPeer`, which ends this connection and nothing else. On a duplex
  connection the two share one :class:`KnownHeld`: what the peer announced to the pulling
  side, the serving side does not announce back (docs/protocol/node-to-node.md 9.8).
* keep-alive (12): the initiator instance pings, the responder instance echoes.
* peer sharing (13): the responder answers with the governor's shareable peers, the
  initiator asks when the governor wants more.

Responder instances start on demand (:func:`started_on_demand`), and start again on demand
after a clean finish, each run a new instance with fresh state (a sig-submission server
announces the mempool from its start again, as the reference's). Every error of any
instance, or of the mux, ends the connection through :func:`dmq.connection.run_connection`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from itertools import count
import random
import time

import trio

from handshake.protocol import HandshakeResult
from miniprotocols import keep_alive, peer_sharing, sig_submission_v1, sig_submission_v2
from miniprotocols.framework import ProtocolSpec
from miniprotocols.sig_submission import Dialect, Side
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import MessageChannel
from ouroboros_mux.mux import Mux, MuxChannel, Provenance

from dmq.connection import ConnectionEnd, ProtocolTask, run_connection
from dmq.ingress import BatchVerdict, Ingress
from dmq.mempool import Mempool
from dmq.trace import TraceEvent

from .mempool_source import MempoolSigSource, RecordedSigSource
from .on_demand import started_on_demand
from .peers import PeerStats
from .plan import Instance, Protocol, connection_plan
from .sig_submission import (
    ClaimingSink,
    DisconnectPeer,
    PullingPeer,
    InFlightRegistry,
    KnownHeld,
    ServingPeer,
)

__all__ = ["DIALECTS", "N2NContext", "run_n2n_connection"]

#: Node-to-node version -> the sig-submission wire format it selects (docs/protocol/handshake.md 4.4).
DIALECTS: dict[int, Dialect] = {
    sig_submission_v1.VERSION: sig_submission_v1.DIALECT,
    sig_submission_v2.VERSION: sig_submission_v2.DIALECT,
}

_SPECS: dict[Protocol, ProtocolSpec] = {
    Protocol.KEEP_ALIVE: keep_alive.KEEP_ALIVE,
    Protocol.PEER_SHARING: peer_sharing.PEER_SHARING,
}

_connection_numbers = count(1)


@dataclass(eq=False)
class N2NContext:
    """What every node-to-node connection of one node shares."""

    ingress: Ingress
    mempool: Mempool
    registry: InFlightRegistry
    source: MempoolSigSource
    #: The peer-sharing server's answer: up to ``n`` ``(host, port)`` addresses.
    peers_for: Callable[[int], Iterable[tuple[str, int]]]
    #: How many addresses the governor would like peer sharing to bring now.
    peers_wanted: Callable[[], int]
    #: Hand addresses learnt from ``peer`` (a label) to the governor.
    learn_peers: Callable[[str, list[tuple[str, int]]], None]
    #: Wait until the governor may want more peers (returns at once if it does).
    wait_peers_wanted: Callable[[], Awaitable[None]]
    keep_alive_interval: float
    blocking_reply_timeout: float
    peer_share_interval: float
    #: How long a connection may stay idle after its last running instance finished before it
    #: is closed (the reference's ``ProtocolIdleTimeout``): a peer that demoted us to warm and
    #: promotes us again within it finds its responders ready to start again.
    protocol_idle_timeout: float
    #: Draws the keep-alive cookies: the diffusion's one generator (seeded when the policy has a
    #: seed). Required, not made here: a cookie is on the wire, in the ping and in the peer's echo,
    #: and its CBOR width (1 to 3 bytes) follows its value, so a context with a fresh unseeded
    #: generator (a simulated peer that forgot to pass one) makes two runs of one seed send
    #: different bytes.
    rng: random.Random
    #: Wraps each running connection: ``watch(peer, mux, link)`` (the traffic recorder samples its mux).
    watch: Callable[[str, Mux, str], AbstractContextManager] = field(default=lambda peer, mux, link: nullcontext())
    #: The traffic recorder's sink for offered and sent messages, and its clock (None: not recording).
    record: Callable[[TraceEvent], None] | None = None
    now: Callable[[], float] = time.time
    #: Seconds a pulling peer waits after an answer of known ids only (``SigSubmissionHoldAfterKnown``).
    hold_after_known: float = 0.0
    #: The longest such wait, for a peer that keeps announcing known ids (``SigSubmissionHoldAfterKnownMax``).
    hold_after_known_max: float = 0.0


async def run_n2n_connection(ctx: N2NContext, bearer: Bearer, result: HandshakeResult, stats: PeerStats, *,
                             we_opened: bool, link: str) -> ConnectionEnd:
    """Run the agreed connection until it ends; return how it ended."""
    agreed = result.agreed_data
    dialect = DIALECTS[result.version]
    mux = Mux(bearer, Provenance.OUTBOUND if we_opened else Provenance.INBOUND)
    claim_key = f"{stats.peer}#{next(_connection_numbers)}"
    # Both sig-submission peers of a duplex connection: what the peer announced, it holds.
    known = KnownHeld() if agreed.duplex else None
    tasks = []
    for instance in connection_plan(we_opened=we_opened, duplex=agreed.duplex, peer_sharing=agreed.peer_sharing):
        channel = mux.register(instance.protocol, instance.mode, instance.ingress_limit)
        tasks.append(ProtocolTask(channel, _runner(ctx, instance, channel, dialect, stats, claim_key, known),
                                  instance.name, on_demand=instance.on_demand))
    stats.established(mux, result.version, agreed.duplex)
    try:
        with ctx.watch(stats.peer, mux, link):
            return await run_connection(mux, tasks, idle_timeout=ctx.protocol_idle_timeout)
    finally:
        ctx.registry.release_peer(claim_key)


def _runner(ctx: N2NContext, instance: Instance, channel: MuxChannel, dialect: Dialect, stats: PeerStats,
            claim_key: str, known: KnownHeld | None) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        target: MessageChannel = channel
        if instance.on_demand:
            spec = dialect.spec if instance.protocol is Protocol.SIG_SUBMISSION else _SPECS[instance.protocol]
            target = await started_on_demand(channel, spec)
        if instance.protocol is Protocol.SIG_SUBMISSION:
            await _sig_submission(ctx, target, dialect, dialect.side_of(instance.initiator), stats, claim_key, known)
        elif instance.protocol is Protocol.KEEP_ALIVE:
            await _keep_alive(ctx, target, instance.initiator, stats)
        else:
            await _peer_sharing(ctx, target, instance.initiator, stats)

    return run


async def _sig_submission(ctx: N2NContext, channel: MessageChannel, dialect: Dialect, side: Side,
                          stats: PeerStats, claim_key: str, known: KnownHeld | None) -> None:
    if side is Side.SERVING:
        timeout = ctx.blocking_reply_timeout if dialect.reply_no_ids is not None else None
        source = ctx.source if ctx.record is None else RecordedSigSource(ctx.source, stats.peer, ctx.record, ctx.now,
                                                                         () if known is None else known)
        await ServingPeer(dialect, channel, source, blocking_timeout=timeout, known=known).run()
        return

    ingress = ctx.ingress

    def settle(verdict: BatchVerdict) -> None:
        accepted = verdict.accepted
        stats.messages_accepted += accepted
        stats.messages_rejected += len(verdict.outcomes) - accepted
        if verdict.disconnect is not None:
            raise DisconnectPeer(verdict.disconnect)

    async def accept(raw_messages: list[bytes]) -> None:
        settle(await ingress.submit_from_peer(raw_messages, stats.peer))

    def accept_now(raw_messages: list[bytes]) -> bool:
        verdict = ingress.submit_from_peer_now(raw_messages, stats.peer)
        if verdict is None:
            return False
        settle(verdict)
        return True

    sink = ClaimingSink(ctx.registry, claim_key, holds=ctx.mempool.contains, accept=accept, accept_now=accept_now,
                        announced_by_peer=None if known is None else known.add)
    await PullingPeer(dialect, channel, sink, hold_after_known=ctx.hold_after_known,
                      hold_after_known_max=ctx.hold_after_known_max).run()


async def _keep_alive(ctx: N2NContext, channel: MessageChannel, initiator: bool, stats: PeerStats) -> None:
    if not initiator:
        await keep_alive.serve(channel)
        return

    def on_rtt(rtt: float) -> None:
        stats.keep_alive_rtt = rtt

    await keep_alive.KeepAliveClient(channel, interval=ctx.keep_alive_interval, on_rtt=on_rtt, rng=ctx.rng).run()


async def _peer_sharing(ctx: N2NContext, channel: MessageChannel, initiator: bool, stats: PeerStats) -> None:
    if not initiator:
        await peer_sharing.serve(channel, ctx.peers_for)
        return
    client = peer_sharing.PeerSharingClient(channel)
    while True:
        await ctx.wait_peers_wanted()
        wanted = ctx.peers_wanted()
        if wanted > 0:
            ctx.learn_peers(stats.peer, await client.request(min(wanted, 0xFF)))
        await trio.sleep(ctx.peer_share_interval)
