"""Devnet signers: each pool publishes one message per period to the node it is assigned to.

A pool behaves as a Mithril signer does (docs/protocol/local-protocols.md 7.4): it signs with its ``kes.skey`` and
``node.cert`` at the KES period the genesis and the clock give, and submits with one
connection per message through :class:`clients.mithril.Publisher`. Pools are spread
evenly over the period (pool k of P starts k/P of a period in), so a devnet's load is steady
rather than a burst per round.

Every verdict is tallied; the accepted publications are what the aggregators must receive.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import trio

from dmq.clock import Clock
from clients.mithril import (
    DmqClientError,
    KesPeriodSource,
    MessageBuilder,
    Publisher,
    SigningCredentials,
    SigningError,
    describe_result,
    is_accepted,
)

from .pools import DevnetPool
from .probe import Probe, probe_body
from .stats import LatencyRecorder

__all__ = ["Publication", "PublishingTally", "PoolPublisher"]


@dataclass(frozen=True, slots=True)
class Publication:
    """One message a node accepted from a devnet pool."""

    pool_index: int
    sequence: int
    node_index: int
    sent_at: float
    message_id: bytes
    size: int


@dataclass
class PublishingTally:
    """What all publishers did: accepted messages by id, the other verdicts by reason."""

    accepted: dict[bytes, Publication] = field(default_factory=dict)
    rejected: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    #: Fires (and is replaced) on every accepted publication, for waiters.
    changed: trio.Event = field(default_factory=trio.Event)
    #: How late each submission started after its due time: whether the process that publishes
    #: keeps time (a starved one falls behind, and then nothing it measures is on time).
    lateness: LatencyRecorder = field(default_factory=LatencyRecorder)

    @property
    def attempted(self) -> int:
        return len(self.accepted) + sum(self.rejected.values()) + sum(self.failed.values())

    def record_accepted(self, publication: Publication) -> None:
        self.accepted[publication.message_id] = publication
        self.changed.set()
        self.changed = trio.Event()


class PoolPublisher:
    """One pool's signer, bound to one node's socket."""

    def __init__(self, pool: DevnetPool, node_index: int, socket_path: str | os.PathLike[str], network_magic: int,
                 kes_periods: KesPeriodSource, clock: Clock, *, body_size: int) -> None:
        self.pool = pool
        self.node_index = node_index
        self.clock = clock
        self.body_size = body_size
        credentials = SigningCredentials.from_files(pool.paths.kes_skey, pool.paths.opcert)
        self.publisher = Publisher(socket_path, network_magic, MessageBuilder(credentials, kes_periods, clock))
        self.sequence = 0

    async def publish_next(self, tally: PublishingTally) -> None:
        """Sign and submit the next message; its verdict goes into ``tally``."""
        sequence, self.sequence = self.sequence, self.sequence + 1
        sent_at = self.clock.now()
        body = probe_body(Probe(self.pool.index, sequence, sent_at), self.body_size)
        try:
            message = self.publisher.build(body)
            verdict = await self.publisher.submit(message.raw)
        except SigningError as exc:
            tally.failed[f"signing: {exc}"] += 1
            return
        except DmqClientError as exc:
            tally.failed[type(exc).__name__] += 1
            return
        if is_accepted(verdict):
            tally.record_accepted(Publication(self.pool.index, sequence, self.node_index, sent_at,
                                              message.message_id, len(message.raw)))
        else:
            tally.rejected[describe_result(verdict).removeprefix("rejected: ")] += 1

    async def run(self, first_at: float, period: float, end_at: float, tally: PublishingTally) -> None:
        """Publish at ``first_at``, then every ``period`` seconds until ``end_at`` (trio clock).

        A slot missed because a submission took longer than a period is skipped, not crammed
        in late: a signer never sends faster than its period.
        """
        due = first_at
        while due < end_at:
            await trio.sleep_until(due)
            tally.lateness.add(trio.current_time() - due)
            await self.publish_next(tally)
            due += period
            now = trio.current_time()
            while due < now:
                due += period
