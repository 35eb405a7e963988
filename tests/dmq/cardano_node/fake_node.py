"""A fake cardano-node: the server side of the Cardano N2C handshake and of local state
query, on a Unix socket, answering from a chain state the test scripts.

It speaks with the project's real handshake server, mux and protocol-7 server, so the
bytes the link sees are framed exactly as cardano-node frames them. Every message it
receives or sends is checked against the project's CDDL (``docs/protocol/cddl``): handshake
messages against ``handshake-cardano-node-to-client.cddl``, protocol-7 messages and the queries
and results inside them against ``local-state-query.cddl`` (docs/protocol/cardano-node-link.md 10.2, 10.3).
A message no rule accepts is recorded in :attr:`FakeCardanoNode.violations` and ends the
connection, so a test both sees the failure and can assert there was none.

The chain state starts from the Haskell-generated devnet genesis: its two pools, each with
the initial funds delegated to it in all three snapshots, as the ledger's first snapshots
hold them. Its era history (``GetInterpreter``) says when the current epoch ends; a test
moves the chain into the next epoch itself, when it wants the ledger to get there.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import trio

from handshake import CARDANO_NODE_TO_CLIENT, HandshakeError, HandshakeQueryResult, VersionTable, run_server
from handshake.links import cardano_node_to_client_versions
from miniprotocols.framework import Driver, DriverEvent, Role
from miniprotocols.local_state_query import (
    GET_EPOCH_NO,
    GET_STAKE_SNAPSHOTS,
    PICOSECONDS_PER_SECOND,
    INGRESS_LIMIT,
    LOCAL_STATE_QUERY,
    PROTOCOL_NUM,
    AcquireFailure,
    AcquireTarget,
    Bound,
    CardanoQuery,
    Era,
    EraParams,
    EraSummary,
    GetCurrentEra,
    GetInterpreter,
    GetSystemStart,
    Interpreter,
    MsgQuery,
    MsgResult,
    PoolSnapshot,
    QueryIfCurrent,
    StakeSnapshots,
    SystemStart,
    encode_current_era,
    encode_epoch_no,
    encode_era_mismatch,
    encode_if_current,
    encode_interpreter,
    encode_stake_snapshots,
    encode_system_start,
    parse_query,
    serve,
)
from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mode, Mux
from ouroboros_mux.mux import Provenance
from ouroboros_mux.sdu import SDU
from dmq.connection import ConnectionEnd, ProtocolTask, run_connection
from tests.conftest import CONFORMANCE

from .cddl import CddlViolation, cardano_query_rules, protocol_rules

DEVNET_GENESIS = CONFORMANCE / "cardano-devnet" / "shelley-genesis.json"
DEVNET_MAGIC = 42
_BASE_ADDRESS_SIZE = 57


def genesis_pools(path: Path = DEVNET_GENESIS) -> dict[bytes, int]:
    """Each genesis pool and the initial funds delegated to it (base addresses' stake keys)."""
    genesis = json.loads(path.read_text())
    staking = genesis["staking"]
    stake = {bytes.fromhex(pool): 0 for pool in staking["pools"]}
    delegation = {bytes.fromhex(key): bytes.fromhex(pool) for key, pool in staking["stake"].items()}
    for address_hex, lovelace in genesis["initialFunds"].items():
        address = bytes.fromhex(address_hex)
        if len(address) == _BASE_ADDRESS_SIZE and address[0] >> 4 in (0, 1):
            pool = delegation.get(address[29:])
            if pool in stake:
                stake[pool] += lovelace
    return stake


def genesis_system_start(path: Path = DEVNET_GENESIS) -> SystemStart:
    return SystemStart.from_datetime(datetime.fromisoformat(json.loads(path.read_text())["systemStart"]))


@dataclass
class FakeChain:
    """The ledger the fake node answers from; tests change it while everything runs.

    An acquire takes a copy, so all queries of one round see one state, as on a real node.
    """

    pools: dict[bytes, PoolSnapshot] = field(default_factory=dict)
    epoch: int = 0
    era: int = Era.CONWAY
    system_start: SystemStart = field(default_factory=genesis_system_start)
    #: What ``GetCurrentEra`` answers when not None (a node whose era answer is stale).
    era_answer: int | None = None
    #: Refuse every acquire with this failure when not None.
    acquire_failure: AcquireFailure | None = None
    #: Pool map encoding: None follows the ledger (indefinite above 23 pools).
    indefinite_map: bool | None = None
    #: Wall time (POSIX) at which the current epoch ends; None: past the forecast horizon.
    epoch_ends_at: float | None = None
    #: Epoch length of the era history (the devnet genesis: 432 000 slots of 1 s).
    epoch_slots: int = 432_000
    slot_length_ms: int = 1_000

    @classmethod
    def devnet(cls, **kwargs) -> FakeChain:
        pools = {pool: PoolSnapshot(s, s, s) for pool, s in genesis_pools().items()}
        return cls(pools=pools, **kwargs)

    def interpreter(self) -> Interpreter:
        """A one-era history in which the current epoch ends at :attr:`epoch_ends_at`.

        Without that time the history stops where the current epoch starts, so the end of
        the epoch is past the horizon, as when cardano-node cannot forecast that far.
        """
        params = EraParams(self.epoch_slots, self.slot_length_ms, safe_zone=129_600, genesis_window=129_600)
        epoch_ps = self.epoch_slots * self.slot_length_ms * 10**9
        slot = self.epoch * self.epoch_slots
        if self.epoch_ends_at is None:
            era = EraSummary(Bound(0, 0, 0, 0), Bound(self.epoch * epoch_ps, slot, self.epoch, 0), params)
        else:
            since_start = self.epoch_ends_at - self.system_start.to_datetime().timestamp()
            started_ps = round(since_start * PICOSECONDS_PER_SECOND) - epoch_ps
            era = EraSummary(Bound(started_ps, slot, self.epoch, 0), None, params)
        return Interpreter((era,))

    def snapshots(self) -> StakeSnapshots:
        pools = self.pools
        return StakeSnapshots(pools, sum(p.mark for p in pools.values()), sum(p.set for p in pools.values()),
                              sum(p.go for p in pools.values()))


class _CheckedBearer(Bearer):
    """A bearer that checks every handshake message against the N2C handshake CDDL."""

    def __init__(self, stream: trio.abc.Stream, fake: FakeCardanoNode) -> None:
        super().__init__(stream)
        self._fake = fake

    async def read_sdu(self) -> SDU:
        return self._checked(await super().read_sdu())

    def read_sdu_nowait(self) -> SDU | None:
        sdu = super().read_sdu_nowait()
        return None if sdu is None else self._checked(sdu)

    def _checked(self, sdu: SDU) -> SDU:
        if sdu.protocol_num == 0:
            self._fake.check_handshake(bytes(sdu.payload))
        return sdu

    async def write_sdu(self, sdu: SDU) -> None:
        if sdu.protocol_num == 0:
            self._fake.check_handshake(bytes(sdu.payload))
        await super().write_sdu(sdu)


class FakeLedger:
    """The protocol-7 server's source of ledger states: copies of the fake's chain."""

    def __init__(self, fake: FakeCardanoNode) -> None:
        self.fake = fake

    async def acquire(self, target: AcquireTarget) -> FakeChain | AcquireFailure:
        self.fake.acquires.append(target)
        chain = self.fake.chain
        if chain.acquire_failure is not None:
            return chain.acquire_failure
        return copy.deepcopy(chain)

    async def answer(self, state: FakeChain, raw: bytes) -> bytes:
        query = parse_query(raw)
        self.fake.queries.append(query)
        if isinstance(query, GetSystemStart):
            return encode_system_start(state.system_start)
        if isinstance(query, GetCurrentEra):
            return encode_current_era(state.era if state.era_answer is None else state.era_answer)
        if isinstance(query, GetInterpreter):
            return encode_interpreter(state.interpreter())
        if isinstance(query, QueryIfCurrent):
            if query.era != state.era:
                return encode_era_mismatch(query.era, state.era)
            if (query.tag, query.argument) == (GET_EPOCH_NO, None):
                return encode_if_current(encode_epoch_no(state.epoch))
            if (query.tag, query.argument) == (GET_STAKE_SNAPSHOTS, b"\x80"):
                return encode_if_current(encode_stake_snapshots(state.snapshots(), indefinite=state.indefinite_map))
        raise ValueError(f"the fake cardano-node does not answer {query!r}")


# Which result rule of local-state-query.cddl each query's answer must satisfy.
def _result_rule(query: CardanoQuery) -> str:
    if isinstance(query, GetSystemStart):
        return "systemStartResult"
    if isinstance(query, GetCurrentEra):
        return "currentEraResult"
    if isinstance(query, GetInterpreter):
        return "interpreterResult"
    if isinstance(query, QueryIfCurrent) and query.tag == GET_EPOCH_NO:
        return "epochNoResult"
    if isinstance(query, QueryIfCurrent) and query.tag == GET_STAKE_SNAPSHOTS:
        return "stakeSnapshotsResult"
    raise CddlViolation(f"no result rule for {query!r}")


class FakeCardanoNode:
    """Listens on ``socket_path`` until :meth:`stop`; :meth:`start` again to come back."""

    def __init__(self, socket_path: Path, chain: FakeChain, *, network_magic: int = DEVNET_MAGIC,
                 versions: VersionTable | None = None) -> None:
        self.socket_path = Path(socket_path)
        self.chain = chain
        self.versions = versions if versions is not None else cardano_node_to_client_versions(network_magic)
        self.violations: list[str] = []
        self.handshake_messages: list[bytes] = []
        self.lsq_messages: list[tuple[str, bytes]] = []   # (direction, raw)
        self.acquires: list[AcquireTarget] = []
        self.queries: list[CardanoQuery] = []
        self.agreed_versions: list[int] = []
        self.ends: list[ConnectionEnd] = []
        self._scope: trio.CancelScope | None = None
        self._last_query: CardanoQuery | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        self._scope = await nursery.start(self._serve)

    def stop(self) -> None:
        """Vanish: close every connection and remove the socket file, as a stopped node does."""
        assert self._scope is not None
        self._scope.cancel()
        self._scope = None

    @property
    def running(self) -> bool:
        return self._scope is not None

    async def _serve(self, task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            if self.socket_path.exists():
                self.socket_path.unlink()
            sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
            await sock.bind(os.fspath(self.socket_path))
            sock.listen(16)
            try:
                async with trio.SocketListener(sock) as listener:
                    task_status.started(scope)
                    await trio.serve_listeners(self._handle, [listener])
            finally:
                self.socket_path.unlink(missing_ok=True)

    # -- one connection ------------------------------------------------------------------

    async def _handle(self, stream: trio.abc.Stream) -> None:
        bearer = _CheckedBearer(stream, self)
        try:
            agreed = await run_server(bearer, self.versions, CARDANO_NODE_TO_CLIENT)
        except (HandshakeError, HandshakeQueryResult, CddlViolation):
            return
        self.agreed_versions.append(agreed.version)
        mux = Mux(bearer, Provenance.INBOUND)
        channel = mux.register(PROTOCOL_NUM, Mode.RESPONDER, INGRESS_LIMIT)
        driver = Driver(channel, LOCAL_STATE_QUERY, Role.SERVER, trace=self.check_lsq)
        end = await run_connection(mux, [ProtocolTask(channel, lambda: serve(driver, FakeLedger(self)), "lsq")],
                                   peer_close_is_clean=True)
        self.ends.append(end)

    # -- CDDL checks ---------------------------------------------------------------------

    def _violation(self, what: str, exc: CddlViolation) -> None:
        self.violations.append(f"{what}: {exc}")
        raise exc

    def check_handshake(self, raw: bytes) -> None:
        self.handshake_messages.append(raw)
        rules, messages = protocol_rules("handshake-cardano-node-to-client")
        try:
            rules.check(raw, *messages)
        except CddlViolation as exc:
            self._violation("handshake", exc)

    def check_lsq(self, event: DriverEvent) -> None:
        self.lsq_messages.append((event.direction.value, event.raw))
        rules, messages = protocol_rules("local-state-query")
        queries = cardano_query_rules()
        try:
            rules.check(event.raw, *messages)
            if isinstance(event.message, MsgQuery):
                queries.check(event.message.query, "dmqQuery")
                self._last_query = parse_query(event.message.query)
            elif isinstance(event.message, MsgResult):
                assert self._last_query is not None
                queries.check(event.message.result, _result_rule(self._last_query))
        except CddlViolation as exc:
            self._violation(f"local state query {event.direction.value}", exc)

    # -- for assertions ------------------------------------------------------------------

    def count(self, kind: type, tag: int | None = None) -> int:
        return sum(1 for q in self.queries if isinstance(q, kind) and (tag is None or q.tag == tag))
