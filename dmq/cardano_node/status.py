"""What the node can say about its stake view and the link that feeds it.

An operator (and a health check) needs three answers at a glance: may the node validate
messages yet (ready, and since when), how fresh is the stake it validates with (which
epoch, when last refreshed), and is cardano-node reachable right now (connected, and the
last error if not). Readiness itself belongs to the :class:`~dmq.stake.StakeView`, which
never goes back to NotInitialized; the status reads it from there so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from dmq.stake import StakeView
from miniprotocols.local_state_query import era_name

__all__ = ["StakeLinkStatus", "register_gauges"]


@dataclass(eq=False)
class StakeLinkStatus:
    """Live status of one cardano-node link; the link updates it in place."""

    #: Where the stake comes from: ``"cardano-node"`` and the socket path.
    source: str
    socket: str
    view: StakeView = field(repr=False)
    connected: bool = False
    #: The agreed Cardano node-to-client version number (32784.. for V16..).
    version: int | None = None
    era: int | None = None
    system_start: datetime | None = None
    #: Wall time of the last complete query round.
    last_refresh_at: float | None = None
    #: Wall time at which the ledger's current epoch ends (None while unknown): the next round.
    next_epoch_at: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    #: Completed query rounds, since start-up.
    rounds: int = 0
    #: Connection attempts that failed or connections that ended, since start-up.
    failures: int = 0

    @property
    def ready(self) -> bool:
        return self.view.ready

    @property
    def since(self) -> float | None:
        """Wall time at which the first snapshot was installed."""
        return self.view.ready_since

    @property
    def epoch(self) -> int | None:
        """The epoch of the installed snapshot."""
        return self.view.epoch

    def to_json(self) -> dict[str, Any]:
        view = self.view
        return {
            "source": self.source,
            "socket": self.socket,
            "ready": self.ready,
            "readiness": view.readiness.value,
            "since": self.since,
            "epoch": self.epoch,
            "pools": len(view),
            "eligible": view.eligible_count,
            "connected": self.connected,
            "version": self.version,
            "era": None if self.era is None else era_name(self.era),
            "systemStart": None if self.system_start is None else self.system_start.isoformat(),
            "lastRefreshAt": self.last_refresh_at,
            "nextEpochAt": self.next_epoch_at,
            "lastError": self.last_error,
            "lastErrorAt": self.last_error_at,
            "rounds": self.rounds,
            "failures": self.failures,
            "maxKESEvolutions": view.max_kes_evolutions,
            "slotsPerKESPeriod": view.slots_per_kes_period,
        }


def register_gauges(status: StakeLinkStatus, registry: CollectorRegistry, prefix: str = "dmq_node_") -> None:
    """Expose the status as Prometheus gauges, read live at every scrape."""
    Gauge(f"{prefix}stake_view_ready", "1 once a stake snapshot has been installed, else 0",
          registry=registry).set_function(lambda: float(status.ready))
    Gauge(f"{prefix}stake_view_epoch", "Epoch of the installed stake snapshot, -1 before the first",
          registry=registry).set_function(lambda: -1.0 if status.epoch is None else float(status.epoch))
    Gauge(f"{prefix}cardano_node_connected", "1 while the link to cardano-node is up, else 0",
          registry=registry).set_function(lambda: float(status.connected))
