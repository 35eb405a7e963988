"""The outbound governor's decisions, without I/O: whom to dial, when to retry, whom to forget.

A deliberately simple version of the reference peer-selection governor. Peers come from
the topology (local roots in groups, each with a hot valency; public roots) and from peer
sharing. The governor keeps, for every local-root group, ``hot_valency`` of its peers
connected (none for a group ``behindFirewall``: those peers dial in), and tops the total up to ``TargetNumberOfActivePeers`` with public roots and
shared peers. Every outbound connection that passed the handshake is *hot* (it runs the
initiator instance of sig submission). A peer whose connection fails or ends goes into
back-off (exponential, with jitter) and the governor picks another one of its kind in
the meantime, so a dead peer is replaced as soon as a spare exists; when the back-off ends
the peer is a candidate again, and a local root is always tried again.

Time is a plain number passed in (the trio clock in the node, anything in tests) and the
jitter comes from an injected ``random.Random``, so every decision is reproducible.
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from dmq.config import DiffusionMode
from dmq.topology import Topology

from .peers import PeerState
from .policy import BackoffPolicy

__all__ = ["Address", "PeerSource", "KnownPeer", "Governor", "Verdict"]

#: ``(host, port)`` of a peer's listening socket.
Address = tuple[str, int]


class PeerSource(enum.IntEnum):
    """Where a peer came from; lower values are preferred and never forgotten."""

    LOCAL_ROOT = 0
    PUBLIC_ROOT = 1
    SHARED = 2


@dataclass(eq=False)
class KnownPeer:
    address: Address
    source: PeerSource
    #: Index of the local-root group (None for other peers).
    group: int | None = None
    advertise: bool = False
    #: The local-root group's diffusion mode: True to dial as InitiatorOnly.
    initiator_only: bool = False
    state: PeerState = PeerState.COLD
    failures: int = 0
    retry_at: float = 0.0
    connected_at: float | None = None
    order: int = 0

    @property
    def label(self) -> str:
        host, port = self.address
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def active(self) -> bool:
        return self.state in (PeerState.CONNECTING, PeerState.HOT)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the governor made of a failure: the peer's back-off, or that it was forgotten."""

    failures: int
    delay: float
    forgotten: bool = False


@dataclass
class _Group:
    hot_valency: int
    members: list[Address] = field(default_factory=list)


class Governor:
    """Known peers and the rules that pick which of them to connect to."""

    def __init__(self, topology: Topology | None, *, target_active: int, target_known: int,
                 backoff: BackoffPolicy = BackoffPolicy(), rng: random.Random | None = None,
                 own_addresses: Iterable[Address] = ()) -> None:
        if target_active < 0 or target_known < 0:
            raise ValueError(f"targets must be non-negative, got active {target_active}, known {target_known}")
        self.target_active = target_active
        self.target_known = target_known
        self.backoff = backoff
        self.rng = rng if rng is not None else random.Random()
        self.own_addresses = set(own_addresses)
        self._peers: dict[Address, KnownPeer] = {}
        self._groups: list[_Group] = []
        self._order = 0
        self.set_topology(topology or Topology())

    # -- the peer set ------------------------------------------------------------------
    def set_topology(self, topology: Topology) -> None:
        """Adopt a (new) topology: roots are added or re-labelled, state of kept peers survives.

        Roots that left the topology are demoted to shared peers (an open connection to
        one keeps running; once it ends the peer may be forgotten like any shared peer).
        """
        wanted: dict[Address, tuple[PeerSource, int | None, bool, bool]] = {}
        groups: list[_Group] = []
        for index, group in enumerate(topology.local_roots):
            members = []
            if group.behind_firewall:
                # cardano-node's meaning: these peers dial us; dialling them would only fail.
                groups.append(_Group(0))
                continue
            for point in group.access_points:
                address = _address(point.address, point.port)
                if address is None or address in wanted or address in self.own_addresses:
                    continue
                initiator_only = group.diffusion_mode is DiffusionMode.INITIATOR_ONLY
                wanted[address] = (PeerSource.LOCAL_ROOT, index, group.advertise, initiator_only)
                members.append(address)
            groups.append(_Group(group.hot_valency, members))
        for group in topology.public_roots:
            for point in group.access_points:
                address = _address(point.address, point.port)
                if address is None or address in wanted or address in self.own_addresses:
                    continue
                wanted[address] = (PeerSource.PUBLIC_ROOT, None, group.advertise, False)
        for address, peer in self._peers.items():
            if address not in wanted and peer.source is not PeerSource.SHARED:
                peer.source, peer.group, peer.advertise, peer.initiator_only = PeerSource.SHARED, None, False, False
        for address, (source, group_index, advertise, initiator_only) in wanted.items():
            peer = self._peers.get(address)
            if peer is None:
                peer = self._add(address, source)
            peer.source, peer.group, peer.advertise, peer.initiator_only = source, group_index, advertise, \
                initiator_only
        self._groups = groups

    def learn(self, addresses: Iterable[Address]) -> list[Address]:
        """Add addresses learnt by peer sharing while the known set is below its target."""
        added = []
        for host, port in addresses:
            address = (str(host), int(port))
            if address in self._peers or address in self.own_addresses or port == 0:
                continue
            if len(self._peers) >= self.target_known:
                break
            self._add(address, PeerSource.SHARED)
            added.append(address)
        return added

    def _add(self, address: Address, source: PeerSource) -> KnownPeer:
        self._order += 1
        peer = KnownPeer(address, source, order=self._order)
        self._peers[address] = peer
        return peer

    # -- views -------------------------------------------------------------------------
    def peer(self, address: Address) -> KnownPeer | None:
        return self._peers.get(address)

    @property
    def known(self) -> list[KnownPeer]:
        return list(self._peers.values())

    @property
    def active_count(self) -> int:
        return sum(1 for p in self._peers.values() if p.active)

    def hot(self) -> list[KnownPeer]:
        return [p for p in self._peers.values() if p.state is PeerState.HOT]

    def peers_wanted(self) -> int:
        """How many more addresses peer sharing should bring (0 when the targets are met)."""
        if self.active_count >= self._active_goal():
            return 0
        spare = sum(1 for p in self._peers.values() if p.state in (PeerState.COLD, PeerState.BACKOFF)
                    and p.group is None)
        if spare:
            return 0
        return max(0, self.target_known - len(self._peers))

    def shareable(self, amount: int) -> list[Address]:
        """Addresses to give a peer that asks: advertised roots, connected ones first."""
        candidates = [p for p in self._peers.values() if p.advertise]
        candidates.sort(key=lambda p: (p.state is not PeerState.HOT, p.order))
        return [p.address for p in candidates[:amount]]

    def next_wakeup(self) -> float | None:
        """When a peer in back-off becomes a candidate again (None: nobody waits)."""
        times = [p.retry_at for p in self._peers.values() if p.state is PeerState.BACKOFF]
        return min(times) if times else None

    def _active_goal(self) -> int:
        local = sum(min(g.hot_valency, len(g.members)) for g in self._groups)
        return max(self.target_active, local)

    # -- decisions ---------------------------------------------------------------------
    def decide(self, now: float) -> list[KnownPeer]:
        """Peers to dial now; they are marked CONNECTING."""
        for peer in self._peers.values():
            if peer.state is PeerState.BACKOFF and peer.retry_at <= now:
                peer.state = PeerState.COLD
        chosen: list[KnownPeer] = []
        for group in self._groups:
            members = [self._peers[a] for a in group.members if a in self._peers]
            missing = group.hot_valency - sum(1 for p in members if p.active)
            chosen.extend(self._pick([p for p in members if p.state is PeerState.COLD], missing))
        for peer in chosen:
            peer.state = PeerState.CONNECTING
        missing = self.target_active - self.active_count
        others = [p for p in self._peers.values() if p.group is None and p.state is PeerState.COLD]
        extra = self._pick(others, missing)
        for peer in extra:
            peer.state = PeerState.CONNECTING
        return chosen + extra

    @staticmethod
    def _pick(candidates: list[KnownPeer], count: int) -> list[KnownPeer]:
        if count <= 0:
            return []
        candidates.sort(key=lambda p: (p.failures, p.source, p.order))
        return candidates[:count]

    # -- outcomes ----------------------------------------------------------------------
    def connected(self, address: Address, now: float) -> None:
        peer = self._peers[address]
        peer.state = PeerState.HOT
        peer.connected_at = now

    def failed(self, address: Address, now: float) -> Verdict:
        """A dial (connect or handshake) failed, or an established connection ended."""
        peer = self._peers[address]
        if peer.connected_at is not None and now - peer.connected_at >= self.backoff.stable_after:
            peer.failures = 0
        peer.connected_at = None
        peer.failures += 1
        if peer.source is PeerSource.SHARED and peer.failures >= self.backoff.forget_after:
            del self._peers[address]
            return Verdict(peer.failures, math.inf, forgotten=True)
        delay = self.backoff.delay(peer.failures, self.rng)
        peer.state = PeerState.BACKOFF
        peer.retry_at = now + delay
        return Verdict(peer.failures, delay)


def _address(host: str, port: int | None) -> Address | None:
    """A dialable address; SRV domains (no port) need DNS SRV lookups this node does not do."""
    if port is None or port == 0:
        return None
    return (host, port)
