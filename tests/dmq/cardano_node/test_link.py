"""The cardano-node link against a fake cardano-node on a real Unix socket: the stake view
becomes Ready from the devnet snapshot, follows epoch changes, survives the node going
away and coming back, and says clearly what is wrong when something is."""

from __future__ import annotations

import random

import pytest
import trio
from prometheus_client import CollectorRegistry, generate_latest

from dmq.clock import Clock, ManualClock
from dmq.stake import Eligibility, PoolStake, StakeView
from dmq.trace import ConnectionClosed, ConnectionOpened, StakeViewUpdated
from handshake.links import CARDANO_N2C_VERSIONS, cardano_node_to_client_versions
from dmq.cardano_node import (
    Backoff,
    CardanoEpochChanged,
    CardanoLinkRetry,
    CardanoLinkWarning,
    CardanoNodeAwaited,
    CardanoNodeLink,
    register_gauges,
)
from miniprotocols.local_state_query import GET_STAKE_SNAPSHOTS, Era, PoolSnapshot, QueryIfCurrent, SystemStart

from .fake_node import DEVNET_GENESIS, DEVNET_MAGIC, FakeCardanoNode, FakeChain, genesis_pools
from .helpers import Recorder, eventually

NOW = 1_800_000_000.0
BACKOFF = Backoff(initial=0.02, maximum=0.16, factor=2.0, jitter=0.0)


class Harness:
    """A fake cardano-node, a stake view read from the devnet genesis, and a link between."""

    def __init__(self, tmp_path, chain: FakeChain | None = None, *, magic: int = DEVNET_MAGIC,
                 clock: Clock | None = None, **fake_options):
        self.clock = clock if clock is not None else ManualClock(now=NOW)
        self.recorder = Recorder()
        self.chain = chain if chain is not None else FakeChain.devnet()
        self.socket = tmp_path / "node.socket"
        self.fake = FakeCardanoNode(self.socket, self.chain, **fake_options)
        self.view = StakeView.from_shelley_genesis(DEVNET_GENESIS, self.clock, with_genesis_stake=False)
        self.link = CardanoNodeLink(self.socket, magic, self.view, tracer=self.recorder.tracer, clock=self.clock,
                                    refresh_interval=3600, backoff=BACKOFF, rng=random.Random(7))

    async def refreshed(self) -> None:
        """Ask for a round now and wait until it is done."""
        rounds = self.link.status.rounds
        self.link.refresh_now()
        await eventually(lambda: self.link.status.rounds > rounds, "a query round")

    def retries(self) -> list[CardanoLinkRetry]:
        return self.recorder.of(CardanoLinkRetry)


async def test_the_view_becomes_ready_from_the_devnet_snapshot(tmp_path):
    h = Harness(tmp_path, FakeChain.devnet(epoch=4))
    status = h.link.status
    assert not status.ready and status.epoch is None and status.since is None
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: status.ready, "a ready stake view")
        # The genesis gives the KES limits; the link gives the stake.
        assert (h.view.max_kes_evolutions, h.view.slots_per_kes_period) == (60, 129_600)
        assert dict(h.view.pools) == {pool: PoolStake(s, s, s) for pool, s in genesis_pools().items()}
        assert all(h.view.eligibility(pool) is Eligibility.ELIGIBLE for pool in h.view.pools)
        assert status.connected and status.epoch == 4 and status.since == NOW and status.era == Era.CONWAY
        assert status.version == max(CARDANO_N2C_VERSIONS) == 32791      # V23
        assert status.system_start.isoformat() == "2022-06-16T08:04:19+00:00"
        report = status.to_json()
        assert report["ready"] is True and report["readiness"] == "Ready" and report["epoch"] == 4
        assert report["era"] == "Conway" and report["eligible"] == 2 and report["lastError"] is None
        assert report["maxKESEvolutions"] == 60 and report["slotsPerKESPeriod"] == 129_600
        nursery.cancel_scope.cancel()
    assert h.fake.violations == []
    # The proposal carried V16..V23 with the Cardano magic; cardano-node accepted V23.
    assert h.fake.handshake_messages[0] == bytes.fromhex("8200a8") + b"".join(
        bytes.fromhex(f"1980{v & 0xff:02x}82182af4") for v in CARDANO_N2C_VERSIONS)
    assert h.fake.handshake_messages[1] == bytes.fromhex("830119801782182af4")
    opened = h.recorder.of(ConnectionOpened)
    assert [(e.link, e.version) for e in opened] == [("cardano-node", 32791)]
    updated = h.recorder.of(StakeViewUpdated)
    assert [(e.source, e.epoch, e.pools, e.eligible) for e in updated] == [("cardano-node", 4, 2, 2)]
    assert [(e.previous, e.epoch, e.era) for e in h.recorder.of(CardanoEpochChanged)] == [(None, 4, "Conway")]
    assert h.recorder.of(CardanoLinkWarning) == []


async def test_an_older_cardano_node_agrees_on_its_highest_version(tmp_path):
    older = {v: d for v, d in cardano_node_to_client_versions(DEVNET_MAGIC).items() if v <= 32787}
    h = Harness(tmp_path, versions=older)
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.link.status.ready, "a ready stake view")
        nursery.cancel_scope.cancel()
    assert h.fake.agreed_versions == [32787] and h.link.status.version == 32787   # V19


async def test_an_epoch_change_adds_and_removes_pools_while_running(tmp_path):
    h = Harness(tmp_path, FakeChain.devnet(epoch=10))
    leaving, staying = sorted(h.chain.pools)
    joining, without_stake = b"\x0a" * 28, b"\x0b" * 28
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.view.epoch == 10, "epoch 10")
        version = h.view.version
        # Same epoch: rounds go on, no snapshot is fetched, the view is untouched.
        await h.refreshed()
        await h.refreshed()
        assert h.fake.count(QueryIfCurrent, GET_STAKE_SNAPSHOTS) == 1 and h.view.version == version

        del h.chain.pools[leaving]
        h.chain.pools[joining] = PoolSnapshot(0, 5_000_000, 0)
        h.chain.pools[without_stake] = PoolSnapshot(9, 0, 9)   # only mark stake: not yet eligible
        h.chain.epoch = 11
        await h.refreshed()
        assert h.view.epoch == 11 and h.view.version == version + 1
        assert h.view.eligibility(leaving) is Eligibility.UNRECOGNIZED
        assert h.view.eligibility(staying) is Eligibility.ELIGIBLE
        assert h.view.eligibility(joining) is Eligibility.ELIGIBLE
        assert h.view.eligibility(without_stake) is Eligibility.NOT_ELIGIBLE
        assert h.fake.count(QueryIfCurrent, GET_STAKE_SNAPSHOTS) == 2
        nursery.cancel_scope.cancel()
    assert h.fake.violations == []
    changes = [(e.previous, e.epoch) for e in h.recorder.of(CardanoEpochChanged)]
    assert changes == [(None, 10), (10, 11)]
    assert [(e.epoch, e.pools, e.eligible) for e in h.recorder.of(StakeViewUpdated)] == [(10, 2, 2), (11, 3, 2)]


async def test_a_large_pool_map_arrives_indefinite(tmp_path):
    pools = {bytes([i]) * 28: PoolSnapshot(i, i + 1, i) for i in range(40)}
    h = Harness(tmp_path, FakeChain(pools=pools, epoch=2))
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.link.status.ready, "a ready stake view")
        nursery.cancel_scope.cancel()
    results = [raw for direction, raw in h.fake.lsq_messages if direction == "sent" and raw[:2] == b"\x82\x04"]
    assert any(raw[2:5] == bytes([0x81, 0x84, 0xBF]) for raw in results)   # [4, [[{_ ...
    assert len(h.view) == 40 and h.view.eligible_count == 40
    assert h.fake.violations == []


async def test_cardano_node_disappears_and_comes_back(tmp_path):
    h = Harness(tmp_path, FakeChain.devnet(epoch=20))
    status = h.link.status
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: status.ready, "a ready stake view")
        pools = dict(h.view.pools)

        h.fake.stop()                         # the connection drops and the socket vanishes
        await eventually(lambda: len(h.retries()) >= 4, "four retries")
        assert not status.connected
        assert status.ready and status.epoch == 20 and dict(h.view.pools) == pools   # the last map is kept
        closed = h.recorder.of(ConnectionClosed)
        assert len(closed) == 1 and closed[0].link == "cardano-node" and "BearerClosed" in closed[0].error
        missing = h.retries()[1:]
        assert all("does not exist" in r.reason and str(h.socket) in r.reason for r in missing)
        assert "does not exist" in status.last_error and status.last_error_at == NOW
        # The first retry follows a working connection: short; then the delay doubles.
        assert [r.retry_in for r in h.retries()[:4]] == [0.02, 0.04, 0.08, 0.16]

        h.chain.epoch = 21                    # the node comes back in the next epoch
        del h.chain.pools[min(h.chain.pools)]
        await h.fake.start(nursery)
        await eventually(lambda: status.connected and h.view.epoch == 21, "reconnected in epoch 21")
        assert len(h.view) == 1 and status.failures >= 4
        nursery.cancel_scope.cancel()
    assert h.fake.violations == []
    assert len(h.fake.agreed_versions) == 2


async def test_a_missing_socket_at_start_is_awaited_until_cardano_node_appears(tmp_path):
    h = Harness(tmp_path)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(h.link.run)
        await eventually(lambda: len(h.recorder.of(CardanoNodeAwaited)) >= 2, "two waits")
        assert not h.link.status.ready and not h.link.status.connected
        assert h.retries() == []  # waiting for cardano-node at start is no warning
        first = h.recorder.of(CardanoNodeAwaited)[0]
        assert first.socket == str(h.socket)
        assert "the socket file does not exist" in h.link.status.last_error
        await h.fake.start(nursery)
        await eventually(lambda: h.link.status.ready, "a ready stake view")
        nursery.cancel_scope.cancel()


async def test_a_long_back_off_ends_when_the_socket_appears(tmp_path):
    """However long the back-off has grown, cardano-node creating its socket is noticed at once."""
    h = Harness(tmp_path)
    h.link.backoff = Backoff(initial=3600.0, maximum=3600.0, jitter=0.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.recorder.of(CardanoNodeAwaited), "a wait")
        assert h.recorder.of(CardanoNodeAwaited)[0].retry_in == 3600.0
        await h.fake.start(nursery)
        await eventually(lambda: h.link.status.ready, "a ready stake view", timeout=10)
        nursery.cancel_scope.cancel()


async def test_a_socket_nobody_listens_on_is_named(tmp_path):
    h = Harness(tmp_path)
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.link.status.ready, "a ready stake view")
        h.fake.stop()
        await eventually(lambda: len(h.retries()) >= 2, "two retries")
        # A stale socket file left behind by a crashed cardano-node.
        stale = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await stale.bind(str(h.socket))
        stale.close()
        count = len(h.retries())
        await eventually(lambda: len(h.retries()) > count + 1, "more retries")
        assert "connection refused" in h.retries()[-1].reason
        nursery.cancel_scope.cancel()


async def test_a_wrong_network_magic_is_refused_by_cardano_node(tmp_path):
    h = Harness(tmp_path, magic=764824073)    # mainnet magic against the devnet node
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: len(h.retries()) >= 2, "two retries")
        nursery.cancel_scope.cancel()
    reason = h.retries()[0].reason
    assert reason.startswith("HandshakeRefused") and "version data mismatch" in reason
    assert not h.link.status.ready
    # The refusal is a well-formed handshake message too; and the genesis disagrees with the magic.
    assert h.fake.violations == []
    warnings = h.recorder.of(CardanoLinkWarning)
    assert len(warnings) == 1 and "networkMagic 42" in warnings[0].message


async def test_era_mismatch_and_byron_are_reported_and_retried(tmp_path):
    h = Harness(tmp_path, FakeChain.devnet(epoch=5))
    status = h.link.status
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: status.ready, "a ready stake view")

        h.chain.era_answer = Era.BABBAGE      # GetCurrentEra lags a hard fork
        h.link.refresh_now()
        await eventually(lambda: h.retries(), "a retry")
        mismatch = h.retries()[0].reason
        assert mismatch.startswith("EraMismatch") and "Babbage (5)" in mismatch and "Conway (6)" in mismatch
        assert status.ready and status.epoch == 5            # the last map is kept

        h.chain.era_answer = None
        h.chain.era = Era.BYRON
        await eventually(lambda: any(r.reason.startswith("UnsupportedEra") for r in h.retries()), "UnsupportedEra")

        h.chain.era = Era.CONWAY
        h.chain.epoch = 6
        await eventually(lambda: h.view.epoch == 6, "recovery in epoch 6")
        assert status.connected and "UnsupportedEra" in status.last_error
        nursery.cancel_scope.cancel()
    assert h.fake.violations == []


async def test_a_foreign_system_start_is_a_warning(tmp_path):
    chain = FakeChain.devnet(system_start=SystemStart(2023, 1, 0))
    h = Harness(tmp_path, chain)
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.link.status.ready, "a ready stake view")
        nursery.cancel_scope.cancel()
    [warning] = h.recorder.of(CardanoLinkWarning)
    assert "2023-01-01T00:00:00+00:00" in warning.message and "2022-06-16T08:04:19+00:00" in warning.message


async def test_gauges_follow_the_status(tmp_path):
    h = Harness(tmp_path, FakeChain.devnet(epoch=9))
    registry = CollectorRegistry()
    register_gauges(h.link.status, registry, "dmq_node_")

    def gauges() -> dict[str, float]:
        lines = generate_latest(registry).decode().splitlines()
        return {line.split()[0]: float(line.split()[1]) for line in lines if line and not line.startswith("#")}

    assert gauges() == {"dmq_node_stake_view_ready": 0.0, "dmq_node_stake_view_epoch": -1.0,
                        "dmq_node_cardano_node_connected": 0.0}
    async with trio.open_nursery() as nursery:
        await h.fake.start(nursery)
        nursery.start_soon(h.link.run)
        await eventually(lambda: h.link.status.ready, "a ready stake view")
        assert gauges() == {"dmq_node_stake_view_ready": 1.0, "dmq_node_stake_view_epoch": 9.0,
                            "dmq_node_cardano_node_connected": 1.0}
        h.fake.stop()
        await eventually(lambda: not h.link.status.connected, "the link down")
        assert gauges()["dmq_node_cardano_node_connected"] == 0.0
        assert gauges()["dmq_node_stake_view_ready"] == 1.0
        nursery.cancel_scope.cancel()


def test_backoff_doubles_to_its_ceiling_with_jitter_below():
    rng = random.Random(3)
    plain = Backoff(initial=1, maximum=60, jitter=0)
    assert [plain.delay(n, rng) for n in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert plain.delay(10_000, rng) == 60            # no overflow after a long outage
    jittered = Backoff(initial=1, maximum=60, jitter=0.2)
    for attempt in range(10):
        delay = jittered.delay(attempt, rng)
        ceiling = min(60, 2 ** attempt)
        assert 0.8 * ceiling <= delay <= ceiling
    with pytest.raises(ValueError):
        Backoff(initial=0)
    with pytest.raises(ValueError):
        Backoff(jitter=1)
