"""The link to cardano-node: keeps the node's stake view in step with the ledger.

One task for the node's lifetime. It connects to cardano-node's Unix socket, runs the
Cardano node-to-client handshake (V16..V23, the Cardano network magic) and then only
mini-protocol 7, where it runs a query round (:mod:`.stake_round`) at once and then again
when the ledger's current epoch ends, as the reference does (docs/protocol/cardano-node-link.md 10.2 step 8): it sleeps
until the end the era history gives, clamped to [1 s, 1 day]. The ledger reaches the new
epoch only with the first block after the boundary, so a round just after it may still see
the old epoch, whose end is then in the past: the clamp makes the next round follow one
second later, and so on until the new epoch shows. Nodes running the reference judge pools
by the new epoch's snapshot within seconds of the boundary; so does this one. A round that
sees a new epoch fetches the stake snapshots and replaces the stake view as a whole
(:meth:`~dmq.stake.StakeView.update`).

Whatever ends a connection (cardano-node restarting, its socket vanishing, a handshake
refusal, an era mismatch at a hard fork, a malformed answer) is traced as a one-line
warning and retried with exponential back-off; the last stake map stays installed and the
view stays Ready, so validation goes on with the snapshot of the current epoch. The
reference has no visible reconnect (docs/protocol/cardano-node-link.md 10.1 ⚠); this is the project's rule.

A socket file that does not exist is the normal state after a reboot, while cardano-node
replays its chain: the reference exits then and leaves the restarting to systemd. Here the
node starts anyway (it serves as the reference does before its first snapshot: every message
is refused as ``NotInitialized``), traces that it waits (``CardanoNodeAwaited``: a notice, not
a warning, until the first snapshot; a socket vanishing later is a warning) and retries with
the same back-off. While the file is absent it also watches for it and tries at once when
cardano-node creates it, so the stake arrives within moments of cardano-node listening
however long the back-off has grown.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import NoReturn

import trio
from prometheus_client import CollectorRegistry

from dmq.clock import Clock, SystemClock
from dmq.config import NodeConfig
from dmq.connection import ProtocolTask, run_connection
from dmq.stake import PoolStake, StakeView
from dmq.trace import ConnectionClosed, ConnectionOpened, StakeViewUpdated, Tracer
from handshake import (
    CARDANO_NODE_TO_CLIENT,
    HandshakeError,
    HandshakeQueryResult,
    VersionTable,
    cardano_node_to_client_versions,
    connect_and_handshake,
)
from miniprotocols.local_state_query import (
    INGRESS_LIMIT,
    PICOSECONDS_PER_SECOND,
    PROTOCOL_NUM,
    LocalStateQueryClient,
    StakeSnapshots,
    era_name,
)
from ouroboros_mux.errors import ConnectFailed
from ouroboros_mux.mux import Mode, Mux, Provenance

from .backoff import Backoff
from .errors import CardanoLinkError, CardanoNodeUnreachable
from .events import CARDANO_LINK, CardanoEpochChanged, CardanoLinkRetry, CardanoLinkWarning, CardanoNodeAwaited
from .stake_round import RoundResult, query_stake_round
from .status import StakeLinkStatus, register_gauges

__all__ = ["CardanoNodeLink", "DEFAULT_REFRESH_INTERVAL", "EPOCH_WAIT_MIN", "EPOCH_WAIT_MAX", "STAKE_SOURCE",
           "genesis_magic_mismatch"]

#: Seconds to the next round when the ledger cannot tell when its epoch ends (the end lies
#: past its forecast horizon). The reference waits a day then; a minute keeps the view from
#: falling a whole day behind should that ever happen at a boundary.
DEFAULT_REFRESH_INTERVAL = 60.0
#: The reference's clamp on the wait until the epoch's end (docs/protocol/cardano-node-link.md 10.2 step 8).
EPOCH_WAIT_MIN = 1.0
EPOCH_WAIT_MAX = 86_400.0
#: The ``source`` of the ``StakeViewUpdated`` events (the ``StakeSource`` keyword).
STAKE_SOURCE = "cardano-node"
#: Seconds between two looks for cardano-node's socket file while it is absent (a ``stat``).
SOCKET_WATCH_INTERVAL = 0.5


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def genesis_magic_mismatch(view: StakeView, network_magic: int) -> str | None:
    """One line when the view's Shelley genesis is for another network than ``CardanoNetworkMagic``
    (also a ``dmq-node --check`` problem), else ``None``."""
    genesis = view.genesis
    if genesis is None or genesis.network_magic == network_magic:
        return None
    return (f"ShelleyGenesisFile {genesis.path} is for networkMagic {genesis.network_magic}, "
            f"but CardanoNetworkMagic is {network_magic}: one of them names the wrong network")


def _socket_absent(error: BaseException) -> bool:
    """Whether the connection failed because cardano-node's socket file does not exist (yet)."""
    return isinstance(error, CardanoNodeUnreachable) and isinstance(error.reason, FileNotFoundError)


def _always(_epoch: int) -> bool:
    return True


def pool_stakes(snapshots: StakeSnapshots) -> dict[bytes, PoolStake]:
    return {pool_id: PoolStake(s.mark, s.set, s.go) for pool_id, s in snapshots.pools.items()}


class CardanoNodeLink:
    """Feeds ``stake_view`` from the cardano-node listening on ``socket_path``."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str],
        network_magic: int,
        stake_view: StakeView,
        *,
        tracer: Tracer | None = None,
        clock: Clock | None = None,
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
        backoff: Backoff = Backoff(),
        rng: random.Random | None = None,
        versions: VersionTable | None = None,
    ) -> None:
        if refresh_interval <= 0:
            raise ValueError(f"refresh interval must be positive, got {refresh_interval}")
        self.socket_path = Path(socket_path)
        self.network_magic = network_magic
        self.view = stake_view
        self.tracer = tracer if tracer is not None else Tracer()
        self.clock = clock if clock is not None else SystemClock()
        self.refresh_interval = refresh_interval
        self.backoff = backoff
        self.versions = versions if versions is not None else cardano_node_to_client_versions(network_magic)
        CARDANO_NODE_TO_CLIENT.check_table(self.versions)
        self._rng = rng if rng is not None else random.Random()
        self._refresh = trio.Event()
        self.status = StakeLinkStatus(source=STAKE_SOURCE, socket=str(self.socket_path), view=stake_view)

    @classmethod
    def from_config(cls, config: NodeConfig, stake_view: StakeView, *, tracer: Tracer, clock: Clock,
                    registry: CollectorRegistry, **options) -> CardanoNodeLink:
        """The link a node with ``StakeSource: cardano-node`` runs, its gauges in the node's ``registry``.

        It is given the stake view it feeds, not the node: the node runs it as one of its tasks.
        """
        link = cls(config.cardano_node_socket, config.cardano_network_magic, stake_view,
                   tracer=tracer, clock=clock, **options)
        register_gauges(link.status, registry, config.trace_option_metrics_prefix)
        return link

    def refresh_now(self) -> None:
        """Run the next query round now rather than when the epoch ends."""
        self._refresh.set()

    # -- the outer loop: connections and back-off ------------------------------------------

    async def run(self) -> NoReturn:
        """Keep the link up until cancelled."""
        self._check_genesis_magic()
        attempt = 0
        while True:
            rounds_before = self.status.rounds
            error = await self.connect_once()
            if self.status.rounds > rounds_before:
                attempt = 0  # the connection worked for a while: retry promptly
            delay = self.backoff.delay(attempt, self._rng)
            attempt += 1
            self._record_failure(error, delay)
            if _socket_absent(error):
                if await self._watch_for_socket(delay):
                    attempt = 0  # a cardano-node has just started: back off from the start again
            else:
                await trio.sleep(delay)

    async def _watch_for_socket(self, delay: float) -> bool:
        """Wait up to ``delay`` s for the socket file to appear; whether it did."""
        with trio.move_on_after(delay):
            while not self.socket_path.exists():
                await trio.sleep(SOCKET_WATCH_INTERVAL)
            return True
        return False

    async def connect_once(self) -> BaseException:
        """One connection from connect to its end; returns the error that ended it."""
        try:
            bearer, agreed = await connect_and_handshake(self.socket_path, self.versions, CARDANO_NODE_TO_CLIENT)
        except ConnectFailed as exc:
            return CardanoNodeUnreachable(self.socket_path, exc.reason)
        except (HandshakeError, HandshakeQueryResult) as exc:
            return exc
        status = self.status
        status.connected, status.version = True, agreed.version
        self.tracer.emit(ConnectionOpened(self.tracer.now(), str(self.socket_path), CARDANO_LINK, agreed.version))
        mux = Mux(bearer, Provenance.OUTBOUND)
        channel = mux.register(PROTOCOL_NUM, Mode.INITIATOR, INGRESS_LIMIT)
        client = LocalStateQueryClient(channel)
        try:
            end = await run_connection(mux, [ProtocolTask(channel, lambda: self._poll(client), "local-state-query")])
        finally:
            status.connected = False
        error = end.error if end.error is not None else CardanoLinkError("cardano-node ended the connection")
        self.tracer.emit(ConnectionClosed(self.tracer.now(), str(self.socket_path), CARDANO_LINK, describe(error)))
        return error

    def _record_failure(self, error: BaseException, retry_in: float) -> None:
        status = self.status
        status.failures += 1
        status.last_error = describe(error)
        status.last_error_at = self.clock.now()
        if _socket_absent(error) and not self.view.ready:  # starting before cardano-node: no warning
            self.tracer.emit(CardanoNodeAwaited(self.tracer.now(), str(self.socket_path), retry_in))
        else:
            self.tracer.emit(CardanoLinkRetry(self.tracer.now(), str(self.socket_path), status.last_error, retry_in))

    # -- the inner loop: query rounds on one connection ------------------------------------

    async def _poll(self, client: LocalStateQueryClient) -> NoReturn:
        first = True
        while True:
            # Each connection starts from a fresh snapshot; later rounds fetch one per epoch.
            wanted = _always if first else self._is_new_epoch
            result = await query_stake_round(client, with_system_start=first, snapshot_wanted=wanted)
            self._apply(result)
            first = False
            with trio.move_on_after(self._wait_after(result)):
                await self._refresh.wait()
            self._refresh = trio.Event()

    def _wait_after(self, result: RoundResult) -> float:
        """Seconds until the next round: to the end of the ledger's epoch, clamped."""
        start = self.status.system_start
        if result.epoch_end_ps is None or start is None:
            self.status.next_epoch_at = None
            return self.refresh_interval
        ends_at = start.timestamp() + result.epoch_end_ps / PICOSECONDS_PER_SECOND
        self.status.next_epoch_at = ends_at
        return min(max(ends_at - self.clock.now(), EPOCH_WAIT_MIN), EPOCH_WAIT_MAX)

    def _is_new_epoch(self, epoch: int) -> bool:
        return epoch != self.view.epoch

    def _apply(self, result: RoundResult) -> None:
        status = self.status
        status.era = result.era
        if result.system_start is not None:
            status.system_start = result.system_start.to_datetime()
            self._check_system_start()
        if result.snapshots is not None:
            previous = self.view.epoch
            self.view.update(pool_stakes(result.snapshots), result.epoch)
            now = self.tracer.now()
            if previous != result.epoch:
                self.tracer.emit(CardanoEpochChanged(now, previous, result.epoch, era_name(result.era)))
            self.tracer.emit(StakeViewUpdated(now, STAKE_SOURCE, result.epoch, len(self.view),
                                              self.view.eligible_count))
        status.last_refresh_at = self.clock.now()
        status.rounds += 1

    # -- sanity checks against the Shelley genesis -----------------------------------------

    def _warn(self, message: str) -> None:
        self.tracer.emit(CardanoLinkWarning(self.tracer.now(), str(self.socket_path), message))

    def _check_genesis_magic(self) -> None:
        mismatch = genesis_magic_mismatch(self.view, self.network_magic)
        if mismatch is not None:
            self._warn(mismatch)

    def _check_system_start(self) -> None:
        genesis = self.view.genesis
        started = self.status.system_start
        if genesis is not None and started is not None and started != genesis.system_start:
            self._warn(f"cardano-node's system start {started.isoformat()} differs from the systemStart "
                       f"{genesis.system_start.isoformat()} of ShelleyGenesisFile {genesis.path}: "
                       f"the genesis file is not this chain's")
