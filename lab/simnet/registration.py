"""A simulated network running the Mithril signer-registration application (docs/mithril-registration.md 8).

Every node is a whole node as in :mod:`.run` (``assemble_node``, simulated links, the virtual
clock) that also carries Blocklace topics, signs as its own pool, and runs the registration
application (``MithrilRegistration``) on one registration topic. Order of a run:

1. the nodes' pools and the Mithril signers' pools (:mod:`.signers`) get stake; the chain's
   Cardano epochs last ``epoch_length`` virtual seconds (a Shelley genesis whose epoch 1 begins
   when the warm-up ends); the topic's owner key follows from the seed;
2. the nodes start and connect; one advertisement names the **electors**: the first
   ``electors`` nodes' pools, with every permission, under the quorum rule asked for. An
   advertisement is one block of at most 1280 bytes, which holds 34 publishers
   (:func:`electors_that_fit`), so at most that many nodes can publish in the topic; the others
   follow it, fix the sets and serve them like the electors;
3. the round open when the advertisement arrives closes at once, empty: every node fixing it
   shows the application running everywhere;
4. during each of the ``epochs`` Cardano epochs ``c`` every signer sends its registration for
   ``R = c + 1`` through a publishing node, over that node's local socket with the signer's
   client (:func:`apps.mithril_registration.client.publish_registration`), spread over the
   first ``spread`` of the epoch (:func:`.signers.sends`). When epoch ``c + 1`` begins the
   nodes close the round of ``R`` by themselves, and a Blocklace certificate fixes the set;
5. once every node fixed the last round (at most ``drain`` virtual seconds after its close),
   every node is stopped and the report (:mod:`.registration_report`) gives, per round, the
   digests and set sizes at every node, the time from the round's close to each node's
   agreement, and the bytes each node sent during each epoch.

Simulation shortcuts beyond :mod:`.run`'s (:mod:`.checks`): a registration's verdict is
computed once and shared by the nodes (:class:`.checks.SharedRegistrationVerdicts`), and the
application's blocking work (its journal, its verdicts) runs in the loop's own thread. The
application and the signers reach their node over its real Unix socket: on the virtual clock
each exchange can let time move to the next pending deadline, which with many nodes is a
fraction of a millisecond to a few. The pools' publication budgets are opened: a Cardano epoch
of five days is compressed into minutes, and an elector carries ``signers / electors``
registrations in it (a hundred in five days is far inside the default budget of 8 blocks per
25 s; in two minutes it is not).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import trio

from apps.mithril_registration.client import publish_registration
from apps.mithril_registration.events import MAX_POINTERS
from apps.mithril_registration.message import SignerRegistration
from apps.mithril_registration.trace import (
    MithrilRegistrationAgreed,
    MithrilRegistrationClosed,
    MithrilRegistrationDisagreement,
    MithrilRegistrationProblem,
)
from clients.topics import TopicOwners, advertisement_draft, draft_block, open_topic_connection
from dmq.diffusion import DiffusionPolicy
from dmq.keyfiles import write_kes_signing_key, write_operational_certificate
from dmq.trace import TraceEvent
from lab.devnet.genesis import GenesisParameters, pool_stakes
from lab.devnet.pools import derive_seed
from topics.blocklace.codec import AD, PERM_ACK, PERM_EPOCH, PERM_EVENT, Payload, TopicParams
from topics.blocklace.reasons import BlocklaceReject

from .checks import SharedRegistrationVerdicts
from .deliveries import summarise
from .registration_report import RegistrationReport
from .run import EPOCH, Assemble, Simnet, SimnetOptions, SimNode, process_peak_rss_mib, run_on_virtual_clock
from .signers import MithrilSigner, make_signers, sends
from .workload import SimPool, make_pools

__all__ = ["RegistrationPlan", "RegistrationSimnet", "run_registration_simnet", "electors_that_fit"]

ALL_PERMISSIONS = PERM_EVENT | PERM_ACK | PERM_EPOCH
QUORUM_RULES = {"count": (0, 2, 3), "stake": (1, 2, 3)}
#: The KES period's length in slots (mainnet's): the run stays in period 0, where every certificate starts.
SLOTS_PER_KES_PERIOD = 129_600
MAX_KES_EVOLUTIONS = 62
#: The topic network's magic (the documents' examples use it): a Mithril network's magic carries raw messages only.
TOPIC_MAGIC = 424242
#: Budgets no run reaches (see the module's docstring).
OPEN_BUCKET = {"Capacity": 100_000, "RefillSeconds": 0.001}


@dataclass(frozen=True)
class RegistrationPlan:
    """What a registration run does on top of :class:`.run.SimnetOptions` (nodes, signers as its
    ``pools``, links, seed, ``warmup`` and ``drain``)."""

    #: Registration rounds measured: Cardano epochs in which the signers register.
    epochs: int = 5
    #: The Cardano epoch, in virtual seconds (slots of 1 s).
    epoch_length: int = 120
    #: The topic's Blocklace epoch interval and attempt timeout, seconds.
    interval: int = 5
    attempt_timeout: int = 10
    #: The part of each Cardano epoch over which the registrations are sent, from its start.
    spread: float = 0.5
    #: Publishing nodes, the topic's electors: at most the 34 one advertisement holds. With more
    #: than about 10, a block's 8 pointers cannot reach a quorum of the last epoch's
    #: acknowledgements, and the gatherer's Acks carry the certificate on
    #: (docs/mithril-registration.md 10.2); the 100-node run was made with 10.
    electors: int = 10
    #: Signers (among ``pools``) that register two keys each round, through two nodes.
    equivocators: int = 1
    quorum: str = "stake"

    def problem(self, options: SimnetOptions) -> str | None:
        if self.epochs < 1 or self.epoch_length < 1 or self.interval < 1 or self.attempt_timeout < 1:
            return "--epochs, --epoch-length, --blocklace-interval and --attempt-timeout must be positive"
        if not 0 < self.spread <= 1:
            return f"--spread is a fraction of the epoch in (0, 1], got {self.spread}"
        if self.quorum not in QUORUM_RULES:
            return f"--quorum is count or stake, got {self.quorum!r}"
        if not 0 <= self.equivocators < options.pools:
            return f"--equivocators must be below the signers ({options.pools}), got {self.equivocators}"
        if not 1 <= self.electors <= options.nodes:
            return f"--electors is 1 to the nodes ({options.nodes}), got {self.electors}"
        if not options.warmup < self.epoch_length:
            return (f"the warm-up ({options.warmup:g} s) must be shorter than a Cardano epoch "
                    f"({self.epoch_length} s): it runs inside epoch 0")
        return None


def electors_that_fit(owners: TopicOwners, pools: list[bytes], params: TopicParams) -> int:
    """How many of ``pools`` one advertisement can name with every permission: its block is at
    most 1280 bytes (docs/topics-design.md 5.2), with the tag the node adds to its publishing
    pool's first block in the topic (5.8, "Honest creator"), which the run's advertisement is."""
    fitting = 0
    for count in range(1, len(pools) + 1):
        ad = owners.advertisement(0, {pool: ALL_PERMISSIONS for pool in pools[:count]}, params=params)
        try:
            draft_block(ad.body.owner.topic_id, Payload(AD, ad=ad), (pools[0],), draft_id=1)
        except BlocklaceReject:
            break
        fitting = count
    return fitting


class RegistrationSimnet(Simnet):
    """One registration run; :meth:`run` returns its report."""

    def __init__(self, options: SimnetOptions, plan: RegistrationPlan, assemble: Assemble, *,
                 say: Callable[[str], None] = lambda text: None, policy: DiffusionPolicy | None = None,
                 progress: Callable[[RegistrationReport], None] | None = None) -> None:
        """``progress`` is handed the report so far once each round had its epoch's sending time to
        agree (a long run that is stopped keeps what it measured)."""
        options = replace(options, flood=False, eclipse=0, kill_fraction=0.0, partition_fraction=0.0)
        problem = plan.problem(options)
        if problem is not None:
            raise ValueError(problem)
        super().__init__(options, assemble, say=say, policy=policy)
        self.plan = plan
        self.progress = progress
        self.verdicts = SharedRegistrationVerdicts()
        self.owners = TopicOwners([derive_seed(options.seed, 0, "registration-topic-owner")], 1)
        self.topic = self.owners.topic_id
        self.params = TopicParams(quorum=QUORUM_RULES[plan.quorum], epoch_interval=plan.interval,
                                  attempt_timeout=plan.attempt_timeout, max_pointers=MAX_POINTERS)
        #: Registration epoch -> node -> (virtual time, digest, signers, excluded), of the node's first set.
        self.agreed: dict[int, dict[int, tuple[float, bytes, int, int]]] = {}
        #: Registration epoch -> node -> virtual time it published ``close``.
        self.closes: dict[int, dict[int, float]] = {}
        self.disagreements = 0
        self.problems: Counter[str] = Counter()
        self.sent: Counter[str] = Counter()
        self._byte_marks: dict[int, list[int]] = {}
        self._epoch_cpu: dict[int, float] = {}

    # -- the nodes --------------------------------------------------------------------------

    def _config_values(self, sim: SimNode, stake_file: Path) -> dict[str, str]:
        values = super()._config_values(sim, stake_file)
        pool_dir = sim.directory / "pool"
        values.update(ConfigFile=str(self._shared_config), NetworkMagic=str(TOPIC_MAGIC), TopicKesKey=str(pool_dir / "kes.skey"),
                      TopicOperationalCertificate=str(pool_dir / "node.cert"))
        return values

    def _assembly_options(self) -> dict[str, Any]:
        return {"registration_verifier": self.verdicts}

    def _sink(self, index: int) -> Callable[[TraceEvent], None]:
        inner = super()._sink(index)
        agreed, closes, problems = self.agreed, self.closes, self.problems

        def sink(event: TraceEvent) -> None:
            kind = type(event)
            if kind is MithrilRegistrationAgreed:
                agreed.setdefault(event.epoch, {}).setdefault(
                    index, (trio.current_time(), event.digest, event.signers, event.excluded))
            elif kind is MithrilRegistrationClosed:
                closes.setdefault(event.epoch, {}).setdefault(index, trio.current_time())
            elif kind is MithrilRegistrationDisagreement:
                self.disagreements += 1
            elif kind is MithrilRegistrationProblem:
                problems[event.detail.split(":", 1)[0]] += 1
            else:
                inner(event)
        return sink

    def _write_chain(self, root: Path, node_pools: list[SimPool], signers: list[MithrilSigner]) -> None:
        """The stake file (every pool, the devnet's spread), the Shelley genesis (epoch 1 begins
        when the warm-up ends) and the topic settings every node shares."""
        options, plan = self.options, self.plan
        ids = [pool.pool_id for pool in node_pools] + [signer.pool_id for signer in signers]
        stakes = pool_stakes(ids, seed=options.seed, parameters=GenesisParameters())
        self._stake_file = root / "stake.json"
        self._stake_file.write_text(json.dumps({
            "epoch": 0, "maxKESEvolutions": MAX_KES_EVOLUTIONS, "slotsPerKESPeriod": SLOTS_PER_KES_PERIOD,
            "pools": {pool.hex(): stake for pool, stake in zip(ids, stakes)}}))
        # Epoch c begins at virtual time ``self.epoch_zero + c * epoch_length``; the chain has
        # started by virtual time 0 (the warm-up is shorter than an epoch).
        system_start = math.ceil(EPOCH + options.warmup - plan.epoch_length)
        self.epoch_zero = system_start - EPOCH
        genesis = root / "shelley-genesis.json"
        genesis.write_text(json.dumps({
            "systemStart": datetime.fromtimestamp(system_start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "slotLength": 1, "slotsPerKESPeriod": SLOTS_PER_KES_PERIOD, "networkMagic": 42,
            "epochLength": plan.epoch_length, "maxKESEvolutions": MAX_KES_EVOLUTIONS}))
        self._shared_config = root / "registration-node.json"
        self._shared_config.write_text(json.dumps({
            "TopicsCarried": ["raw", "blocklace"], "ShelleyGenesisFile": str(genesis),
            "TopicTokenBucket": OPEN_BUCKET, "MithrilRegistration": {"Topic": self.topic.hex()}}))
        for sim, pool in zip(self.nodes, node_pools):
            pool_dir = sim.directory / "pool"
            pool_dir.mkdir(parents=True, exist_ok=True)
            write_kes_signing_key(pool_dir / "kes.skey", pool.credentials.kes_key)
            write_operational_certificate(pool_dir / "node.cert", pool.credentials.opcert, pool.credentials.cold_vk)

    def epoch_start(self, epoch: int) -> float:
        """The virtual time Cardano epoch ``epoch`` begins."""
        return self.epoch_zero + epoch * self.plan.epoch_length

    # -- the run ----------------------------------------------------------------------------

    async def _run_in(self, root: Path, wall: float) -> RegistrationReport:  # type: ignore[override]
        options = self.options
        node_pools = make_pools(options.nodes, options.seed)
        signers = make_signers(options.pools, self.plan.equivocators, options.seed)
        self.nodes = [SimNode(i, self.hosts[i], self.regions[i], root / f"n{i}", self._topology(i))
                      for i in range(options.nodes)]
        self._write_chain(root, node_pools, signers)
        pools = [pool.pool_id for pool in node_pools]
        fit = electors_that_fit(self.owners, pools, self.params)
        if self.plan.electors > fit:
            raise ValueError(f"--electors {self.plan.electors}: one advertisement holds {fit} publishers")
        self.electors, self.electors_fit = self.plan.electors, fit
        self.say(f"{options.nodes} node pools and {options.pools:,} signers made, {self.electors} electors "
                 f"(an advertisement holds {fit}) ({time.perf_counter() - wall:.0f} s)")
        return await self._run(signers, pools[:self.electors], wall)

    async def _run(self, signers: list[MithrilSigner], electors: list[bytes], wall: float) -> RegistrationReport:  # type: ignore[override]
        options, plan = self.options, self.plan
        self._mark("pools")
        async with trio.open_nursery() as nursery:
            for sim in self.nodes:
                await self.start(sim, nursery)
            self.say(f"{len(self.nodes)} nodes started ({time.perf_counter() - wall:.0f} s)")
            self._mark("started")
            await trio.sleep(options.warmup / 3)
            ad = self.owners.advertisement(0, {pool: ALL_PERMISSIONS for pool in electors}, params=self.params)
            async with open_topic_connection(self._socket(self.nodes[0]), TOPIC_MAGIC) as conn:
                await conn.ask(conn.topics.publish(advertisement_draft(ad)))
            self._advertised_at = trio.current_time()
            self.say(f"advertisement published at {trio.current_time():.1f} virtual s")
            first = self.current_epoch()
            await self._until_agreed(first, self.epoch_start(1), "the first (empty) round")
            self._mark("warm")
            async with trio.open_nursery() as work:
                for epoch in range(1, plan.epochs + 1):
                    await trio.sleep_until(self.epoch_start(epoch))
                    self._epoch_mark(epoch)
                    for at, signer, home, variant in sends(signers, self.electors, self.epoch_start(epoch),
                                                          plan.epoch_length, plan.spread):
                        await trio.sleep_until(at)
                        work.start_soon(self._register, self.nodes[home], signer.registration(epoch + 1, variant))
                    self.say(f"epoch {epoch}: {self.sent['attempted']:,} registrations sent so far "
                             f"({time.perf_counter() - wall:.0f} s wall, {time.process_time() - self._cpu:.0f} s CPU)")
                    if self.progress is not None:
                        self.progress(self.report(wall, signers, first, measured=epoch))
            last = plan.epochs + 1
            await trio.sleep_until(self.epoch_start(last))
            self._epoch_mark(last)
            self._mark("published")
            await self._until_agreed(last, self.epoch_start(last) + options.drain, f"round {last}")
            self._drained = trio.current_time()
            self._mark("drained")
            report = self.report(wall, signers, first, measured=last)
            nursery.cancel_scope.cancel()
        return report

    def current_epoch(self) -> int:
        return math.floor((trio.current_time() - self.epoch_zero) / self.plan.epoch_length)

    @staticmethod
    def _socket(sim: SimNode) -> Path:
        return sim.directory / "s"

    async def _until_agreed(self, epoch: int, deadline: float, what: str) -> None:
        with trio.move_on_at(deadline):
            while len(self.agreed.get(epoch, {})) < len(self.nodes):
                await trio.sleep(0.5)
        self.say(f"{what} (epoch {epoch}) fixed at {len(self.agreed.get(epoch, {}))} of {len(self.nodes)} nodes by "
                 f"{trio.current_time():.1f} virtual s")

    async def _register(self, sim: SimNode, registration: SignerRegistration) -> None:
        self.sent["attempted"] += 1
        try:
            async with open_topic_connection(self._socket(sim), TOPIC_MAGIC) as conn:
                await publish_registration(conn, self.topic, registration)
        except Exception as exc:  # counted by kind: the report says how many were not published, and why
            self.sent[f"failed: {type(exc).__name__}: {str(exc)[:80]}"] += 1
            return
        self.sent["published"] += 1

    def _epoch_mark(self, epoch: int) -> None:
        self._byte_marks[epoch] = list(self.net.bytes_sent[:self.options.nodes])
        self._epoch_cpu[epoch] = time.process_time() - self._cpu

    # -- the report -------------------------------------------------------------------------

    def report(self, wall: float, signers: list[MithrilSigner], first: int,  # type: ignore[override]
               measured: int) -> RegistrationReport:
        """The rounds up to registration epoch ``measured``; the run is finished when that is the last."""
        options, plan = self.options, self.plan
        finished = measured == plan.epochs + 1
        nodes = len(self.nodes)
        honest = sum(1 for s in signers if not s.equivocates)
        equivocators = len(signers) - honest
        # The first round is timed from the advertisement; the next one closes empty (nothing is
        # sent before epoch 1), then one round per epoch of registrations.
        rounds = [self._round(first, 0, 0, nodes, opened=self._advertised_at)]
        rounds += [self._round(epoch, 0, 0, nodes) for epoch in range(first + 1, 2)]
        rounds += [self._round(epoch, honest, equivocators, nodes) for epoch in range(2, measured + 1)]
        traffic = []
        marks = sorted(self._byte_marks)
        for start, end in zip(marks, marks[1:]):
            sent = [b - a for a, b in zip(self._byte_marks[start], self._byte_marks[end])]
            traffic.append({"cardano_epoch": start, "registrations_for": start + 1,
                            "bytes_sent_per_node": {"mean": round(sum(sent) / nodes), "min": min(sent),
                                                    "max": max(sent)},
                            "cpu_seconds": round(self._epoch_cpu[end] - self._epoch_cpu[start], 1)})
        seconds = time.perf_counter() - wall
        return RegistrationReport(
            settings={**options.settings(), **asdict(plan)}, load_average=os.getloadavg(),
            finished=finished, wall_seconds=round(seconds, 1), cpu_seconds=round(time.process_time() - self._cpu, 1),
            simulated_seconds=round(trio.current_time(), 3), nodes=nodes, electors=self.electors,
            electors_that_fit=self.electors_fit, signers=honest, equivocators=equivocators,
            topic=self.topic.hex(), sent=dict(sorted(self.sent.items())), rounds=rounds, traffic=traffic,
            disagreements=self.disagreements, problems=dict(sorted(self.problems.items())),
            rejections=dict(sorted(self.rejections.items())), registration_checks=self.verdicts.stats(),
            kes_checks=self.checks.stats(), cost=self._cost(),
            peak_rss_mib=process_peak_rss_mib())

    def _round(self, epoch: int, signers: int, excluded: int, nodes: int, opened: float | None = None) -> dict[str, Any]:
        """One round's outcome; timed from its close, or from ``opened`` when later (the first round)."""
        closed_at = self.epoch_start(epoch) if opened is None else max(opened, self.epoch_start(epoch))
        agreed = self.agreed.get(epoch, {})
        closes = self.closes.get(epoch, {})
        first_close = min(closes.values()) if closes else None
        digests = Counter(digest.hex() for _, digest, _, _ in agreed.values())
        return {
            "epoch": epoch, "closed_at": round(closed_at, 3), "nodes_agreed": len(agreed), "nodes": nodes,
            "digests": dict(digests), "signers": dict(Counter(s for _, _, s, _ in agreed.values())),
            "excluded": dict(Counter(e for _, _, _, e in agreed.values())),
            "expected_signers": signers, "expected_excluded": excluded,
            "electors_closed": len(closes),
            "first_close_after": None if first_close is None else round(first_close - closed_at, 3),
            "agreement_after_close": summarise([at - closed_at for at, _, _, _ in agreed.values()]),
            "agreement_after_first_close": summarise([at - first_close for at, _, _, _ in agreed.values()])
            if first_close is not None else None,
        }

    def _cost(self) -> dict[str, Any]:
        """CPU seconds by phase: making the pools, starting the nodes, the first round, the epochs of
        registrations, and the last round's agreement (the phases reached so far)."""
        marks = [(name, self._cpu_marks[mark]) for name, mark in (
            ("pools", "pools"), ("start", "started"), ("first_round", "warm"), ("registration_epochs", "published"),
            ("last_round", "drained")) if mark in self._cpu_marks]
        previous, phases = self._cpu, {}
        for name, at in marks:
            phases[name] = round(at - previous, 1)
            previous = at
        return {"cpu_seconds_by_phase": phases}


def run_registration_simnet(options: SimnetOptions, plan: RegistrationPlan, assemble: Assemble, *,
                            say: Callable[[str], None] = lambda text: None, policy: DiffusionPolicy | None = None,
                            progress: Callable[[RegistrationReport], None] | None = None) -> RegistrationReport:
    """Run ``plan`` over ``options``'s network in a trio run of its own on a virtual clock."""
    return run_on_virtual_clock(RegistrationSimnet(options, plan, assemble, say=say, policy=policy, progress=progress))
