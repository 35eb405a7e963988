"""The stake view: which pools may publish, and the KES limits their certificates live by.

Validation check 7 (docs/protocol/validation.md section 6.8) needs to know whether a pool has stake in the
ledger's *set* snapshot, and checks 5 and 6 need ``maxKESEvolutions`` from the Shelley
genesis. Both live here, so the validator reads one object however the stake arrived: from
cardano-node's ``GetStakeSnapshots`` (the link feeds :meth:`StakeView.update`), from the
Shelley genesis of a devnet, or from a plain JSON stake file for tests and demos.

Readiness follows the reference node exactly: ``NotInitialized`` until the first snapshot
has been installed (even an empty one), then ``Ready`` for the rest of the process lifetime.
A pool that is absent is ``UnrecognizedPool`` once ready; before that every pool is
``NotInitialized``. Only the set snapshot counts, because the mark snapshot taken at the
volatile tip may differ between forks.

A snapshot is replaced as a whole (one reference swap), so a reader never sees half of an
update; readers that cache anything derived from the view compare :attr:`StakeView.version`.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from dmq.clock import Clock, SystemClock
from dmq.errors import OperatorError, one_line
from dmq.operator_json import OperatorJsonError, read_operator_json
from dmq.opcert import POOL_ID_SIZE, pool_id_from_bech32

__all__ = [
    "POOL_ID_SIZE",
    "MAINNET_MAX_KES_EVOLUTIONS",
    "MAINNET_SLOTS_PER_KES_PERIOD",
    "SNAPSHOTS_KEPT",
    "PoolStake",
    "Readiness",
    "Eligibility",
    "StakeView",
    "StakeFileError",
    "ShelleyGenesis",
    "StakeFile",
    "load_shelley_genesis",
    "load_stake_file",
    "parse_pool_id",
]

MAINNET_MAX_KES_EVOLUTIONS = 62
MAINNET_SLOTS_PER_KES_PERIOD = 129_600
#: Set snapshots kept by epoch, the newest included (docs/topics-design.md 5.8: the last 3 Cardano epochs).
SNAPSHOTS_KEPT = 3

#: Shelley address header types whose stake part is a key-hash credential (base addresses
#: with a key-hash or script payment part). Genesis delegations name stake *key* hashes.
_BASE_ADDRESS_KEY_STAKE_TYPES = frozenset({0, 1})
_BASE_ADDRESS_SIZE = 1 + 28 + 28


class StakeFileError(OperatorError):
    """A stake or genesis file is unreadable, malformed, or not the file expected."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = one_line(problem)
        super().__init__(f"{self.path}: {self.problem}")


@dataclass(frozen=True, slots=True)
class PoolStake:
    """A pool's stake in lovelace in the three ledger snapshots."""

    mark: int
    set: int
    go: int

    def __post_init__(self) -> None:
        for name in ("mark", "set", "go"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"PoolStake.{name} must be a non-negative int, got {value!r}")


class Readiness(enum.Enum):
    """Whether a stake snapshot has ever been installed (docs/protocol/validation.md section 6.8)."""

    NOT_INITIALIZED = "NotInitialized"
    READY = "Ready"


class Eligibility(enum.Enum):
    """The answer to check 7 for one pool."""

    ELIGIBLE = "eligible"
    NOT_INITIALIZED = "not-initialized"   # no snapshot yet
    UNRECOGNIZED = "unrecognized"         # snapshot installed, pool absent
    NOT_ELIGIBLE = "not-eligible"         # present with zero set stake


@dataclass(frozen=True, slots=True)
class ShelleyGenesis:
    """The parts of a Shelley genesis file the node uses, and the pools it registers."""

    path: str
    file_hash: bytes                      # Blake2b-256 of the file bytes
    network_magic: int
    system_start: datetime
    epoch_length: int
    slot_length: float
    slots_per_kes_period: int
    max_kes_evolutions: int
    pools: Mapping[bytes, PoolStake]      # staking.pools with their delegated initial funds


@dataclass(frozen=True, slots=True)
class StakeFile:
    """A parsed plain stake file (see :func:`load_stake_file`)."""

    path: str
    epoch: int
    max_kes_evolutions: int
    slots_per_kes_period: int
    pools: Mapping[bytes, PoolStake]


class StakeView:
    """The stake map the validator reads, with its readiness and KES parameters."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        max_kes_evolutions: int = MAINNET_MAX_KES_EVOLUTIONS,
        slots_per_kes_period: int = MAINNET_SLOTS_PER_KES_PERIOD,
        genesis: ShelleyGenesis | None = None,
    ) -> None:
        if type(max_kes_evolutions) is not int or max_kes_evolutions < 0:
            raise ValueError(f"max_kes_evolutions must be a non-negative int, got {max_kes_evolutions!r}")
        if type(slots_per_kes_period) is not int or slots_per_kes_period <= 0:
            raise ValueError(f"slots_per_kes_period must be a positive int, got {slots_per_kes_period!r}")
        self._clock: Clock = clock if clock is not None else SystemClock()
        self.max_kes_evolutions = max_kes_evolutions
        self.slots_per_kes_period = slots_per_kes_period
        self.genesis = genesis
        self._pools: Mapping[bytes, PoolStake] = MappingProxyType({})
        self._readiness = Readiness.NOT_INITIALIZED
        self._epoch: int | None = None
        self._ready_since: float | None = None
        self._updated_at: float | None = None
        self._version = 0
        self._by_epoch: Mapping[int, Mapping[bytes, PoolStake]] = MappingProxyType({})

    # -- reading -------------------------------------------------------------------------

    @property
    def readiness(self) -> Readiness:
        return self._readiness

    @property
    def ready(self) -> bool:
        return self._readiness is Readiness.READY

    @property
    def epoch(self) -> int | None:
        """The epoch of the installed snapshot, None before the first one."""
        return self._epoch

    @property
    def ready_since(self) -> float | None:
        """Wall time (POSIX seconds) at which the first snapshot was installed."""
        return self._ready_since

    @property
    def updated_at(self) -> float | None:
        """Wall time (POSIX seconds) of the latest snapshot."""
        return self._updated_at

    @property
    def version(self) -> int:
        """Incremented on every update; a reader holding an older number knows it is stale."""
        return self._version

    @property
    def pools(self) -> Mapping[bytes, PoolStake]:
        """The current snapshot, read-only. A later update replaces it, never mutates it."""
        return self._pools

    @property
    def eligible_count(self) -> int:
        return sum(1 for stake in self._pools.values() if stake.set > 0)

    def __len__(self) -> int:
        return len(self._pools)

    def stake_of(self, pool_id: bytes) -> PoolStake | None:
        return self._pools.get(pool_id)

    @property
    def snapshot_epochs(self) -> tuple[int, ...]:
        """The epochs whose set snapshots are held, oldest first."""
        return tuple(sorted(self._by_epoch))

    def set_stake_at(self, epoch: int, pool_id: bytes) -> int | None:
        """A pool's stake in the *set* snapshot of Cardano epoch ``epoch``.

        None when that snapshot is not held (never installed, or older than the last
        :data:`SNAPSHOTS_KEPT` epochs); 0 for a pool absent from a held snapshot. This is the
        ``stake_of(epoch, pool)`` lookup of the Blocklace stake rule (docs/topics-design.md 5.7).
        """
        pools = self._by_epoch.get(epoch)
        if pools is None:
            return None
        stake = pools.get(pool_id)
        return 0 if stake is None else stake.set

    def eligibility(self, pool_id: bytes) -> Eligibility:
        """Check 7: present with non-zero *set* stake. Mark and go are never consulted."""
        stake = self._pools.get(pool_id)
        if stake is None:
            if self._readiness is Readiness.READY:
                return Eligibility.UNRECOGNIZED
            return Eligibility.NOT_INITIALIZED
        if stake.set > 0:
            return Eligibility.ELIGIBLE
        return Eligibility.NOT_ELIGIBLE

    # -- writing -------------------------------------------------------------------------

    def update(self, pools: Mapping[bytes, PoolStake], epoch: int | None) -> None:
        """Install a whole new snapshot; the view becomes Ready and stays Ready."""
        fresh: dict[bytes, PoolStake] = {}
        for pool_id, stake in pools.items():
            if type(pool_id) is not bytes or len(pool_id) != POOL_ID_SIZE:
                raise ValueError(f"pool ids are {POOL_ID_SIZE} raw bytes, got {pool_id!r}")
            if not isinstance(stake, PoolStake):
                raise TypeError(f"stake of pool {pool_id.hex()} must be a PoolStake, got {stake!r}")
            fresh[pool_id] = stake
        self._install(MappingProxyType(fresh), epoch)

    def _install(self, pools: MappingProxyType, epoch: int | None) -> None:
        """Install a checked, read-only snapshot (nothing else holds its dictionary for writing)."""
        if epoch is not None and (type(epoch) is not int or epoch < 0):
            raise ValueError(f"epoch must be a non-negative int or None, got {epoch!r}")
        now = self._clock.now()
        self._pools = pools
        if epoch is not None:
            kept = {**self._by_epoch, epoch: self._pools}
            newest = max(kept)
            self._by_epoch = MappingProxyType({e: p for e, p in kept.items() if e > newest - SNAPSHOTS_KEPT})
        self._epoch = epoch
        self._updated_at = now
        if self._readiness is not Readiness.READY:
            self._readiness = Readiness.READY
            self._ready_since = now
        self._version += 1

    # -- loaders -------------------------------------------------------------------------

    @classmethod
    def from_shelley_genesis(
        cls,
        path: str | Path,
        clock: Clock | None = None,
        *,
        expected_hash: str | bytes | None = None,
        with_genesis_stake: bool = True,
    ) -> StakeView:
        """A view with the genesis KES parameters and, unless told otherwise, its pools.

        A node linked to cardano-node passes ``with_genesis_stake=False``: the genesis then
        only supplies ``maxKESEvolutions``, and the view stays NotInitialized until the
        first stake query, as the reference does. A devnet without that link uses the
        genesis delegations as the stake (installed as epoch 0).
        """
        genesis = load_shelley_genesis(path, expected_hash)
        view = cls(
            clock,
            max_kes_evolutions=genesis.max_kes_evolutions,
            slots_per_kes_period=genesis.slots_per_kes_period,
            genesis=genesis,
        )
        if with_genesis_stake:
            view.update(genesis.pools, 0)
        return view

    @classmethod
    def from_json(cls, path: str | Path, clock: Clock | None = None) -> StakeView:
        """A Ready view from a plain stake file (see :func:`load_stake_file`)."""
        return cls.from_stake_file(load_stake_file(path), clock)

    @classmethod
    def from_stake_file(cls, stake_file: StakeFile, clock: Clock | None = None) -> StakeView:
        """A Ready view of a parsed stake file, holding the file's own read-only pool map (no copy).

        :func:`load_stake_file` has checked every entry and wraps a dictionary no one else holds, so
        views made from one parsed file can share it: a simulated network of a thousand nodes
        reads its 3,000-pool file once, not once per node (``lab.simnet.checks.SharedStakeFiles``).
        """
        view = cls(
            clock,
            max_kes_evolutions=stake_file.max_kes_evolutions,
            slots_per_kes_period=stake_file.slots_per_kes_period,
        )
        if type(stake_file.pools) is MappingProxyType:
            view._install(stake_file.pools, stake_file.epoch)
        else:  # made by hand, not by load_stake_file: checked and copied
            view.update(stake_file.pools, stake_file.epoch)
        return view


# -- pool ids ----------------------------------------------------------------------------


def parse_pool_id(text: str) -> bytes:
    """A pool id from 56 hex digits or a ``pool1…`` bech32 string; ValueError otherwise."""
    text = text.strip()
    if text.lower().startswith("pool1"):
        return pool_id_from_bech32(text)
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither {2 * POOL_ID_SIZE} hex digits nor a pool1 bech32 id") from None
    if len(raw) != POOL_ID_SIZE:
        raise ValueError(f"{text!r} is {len(raw)} bytes, a pool id is {POOL_ID_SIZE}")
    return raw


# -- Shelley genesis ---------------------------------------------------------------------


def _read_json(path: Path, what: str) -> tuple[bytes, Any]:
    try:
        return read_operator_json(path, what)
    except FileNotFoundError as exc:
        raise StakeFileError(path, f"cannot read the file ({exc.strerror or exc})") from None
    except OperatorJsonError as exc:
        raise StakeFileError(path, exc.problem) from None


def _field(path: Path, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in obj:
        raise StakeFileError(path, f"missing key {key!r} ({what})")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise StakeFileError(path, f"key {key!r} must be {what}, got {value!r}")
    return value


def _non_negative_int(path: Path, obj: Mapping[str, Any], key: str) -> int:
    value = _field(path, obj, key, int, "a non-negative integer")
    if value < 0:
        raise StakeFileError(path, f"key {key!r} must be a non-negative integer, got {value}")
    return value


def _expected_hash_bytes(path: Path, expected: str | bytes) -> bytes:
    if isinstance(expected, bytes):
        raw = expected
    else:
        try:
            raw = bytes.fromhex(expected.strip())
        except ValueError:
            raise StakeFileError(path, f"expected genesis hash {expected!r} is not hex") from None
    if len(raw) != 32:
        raise StakeFileError(path, f"expected genesis hash must be 32 bytes (Blake2b-256), got {len(raw)}")
    return raw


def _genesis_pools(path: Path, genesis: Mapping[str, Any]) -> dict[bytes, PoolStake]:
    """Each genesis pool with the initial funds delegated to it, in all three snapshots.

    The ledger builds its initial snapshots from the genesis: a pool's stake is the sum of
    the initial funds held at base addresses whose stake key hash ``staking.stake``
    delegates to that pool. Addresses without a stake key hash (enterprise, pointer,
    script-staked, Byron) carry no delegated stake.
    """
    staking = genesis.get("staking") or {}
    if not isinstance(staking, Mapping):
        raise StakeFileError(path, "key 'staking' must be an object")
    pools_obj = staking.get("pools") or {}
    delegations_obj = staking.get("stake") or {}
    if not isinstance(pools_obj, Mapping) or not isinstance(delegations_obj, Mapping):
        raise StakeFileError(path, "keys 'staking.pools' and 'staking.stake' must be objects")

    totals: dict[bytes, int] = {}
    for key in pools_obj:
        try:
            totals[parse_pool_id(key)] = 0
        except ValueError as exc:
            raise StakeFileError(path, f"staking.pools: {exc}") from None

    delegation: dict[bytes, bytes] = {}
    for stake_key_hash, pool in delegations_obj.items():
        try:
            credential = bytes.fromhex(stake_key_hash)
            pool_id = parse_pool_id(pool) if isinstance(pool, str) else None
        except ValueError as exc:
            raise StakeFileError(path, f"staking.stake: {exc}") from None
        if len(credential) != 28 or pool_id is None:
            raise StakeFileError(path, f"staking.stake: {stake_key_hash!r} -> {pool!r} is not a key hash -> pool id")
        delegation[credential] = pool_id

    funds = genesis.get("initialFunds") or {}
    if not isinstance(funds, Mapping):
        raise StakeFileError(path, "key 'initialFunds' must be an object")
    for address_hex, amount in funds.items():
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise StakeFileError(path, f"initialFunds[{address_hex!r}] must be a non-negative integer")
        try:
            address = bytes.fromhex(address_hex)
        except ValueError:
            raise StakeFileError(path, f"initialFunds key {address_hex!r} is not a hex address") from None
        if len(address) != _BASE_ADDRESS_SIZE or address[0] >> 4 not in _BASE_ADDRESS_KEY_STAKE_TYPES:
            continue
        pool_id = delegation.get(address[29:])
        if pool_id is not None and pool_id in totals:
            totals[pool_id] += amount

    return {pool_id: PoolStake(total, total, total) for pool_id, total in totals.items()}


def load_shelley_genesis(path: str | Path, expected_hash: str | bytes | None = None) -> ShelleyGenesis:
    """Read a Shelley genesis file; with ``expected_hash`` its Blake2b-256 must match."""
    path = Path(path)
    data, genesis = _read_json(path, "Shelley genesis")
    file_hash = hashlib.blake2b(data, digest_size=32).digest()
    if expected_hash is not None:
        expected = _expected_hash_bytes(path, expected_hash)
        if expected != file_hash:
            raise StakeFileError(
                path, f"genesis hash mismatch: expected {expected.hex()}, the file hashes to {file_hash.hex()}"
            )
    if not isinstance(genesis, Mapping):
        raise StakeFileError(path, "a Shelley genesis is a JSON object")
    start_text = _field(path, genesis, "systemStart", str, "an ISO 8601 UTC time")
    try:
        system_start = datetime.fromisoformat(start_text)
    except ValueError:
        raise StakeFileError(path, f"key 'systemStart' is not an ISO 8601 time: {start_text!r}") from None
    if system_start.tzinfo is None:
        system_start = system_start.replace(tzinfo=timezone.utc)
    slot_length = _field(path, genesis, "slotLength", (int, float), "a positive number of seconds")
    if slot_length <= 0:
        raise StakeFileError(path, f"key 'slotLength' must be positive, got {slot_length}")
    slots_per_kes_period = _non_negative_int(path, genesis, "slotsPerKESPeriod")
    if slots_per_kes_period == 0:
        raise StakeFileError(path, "key 'slotsPerKESPeriod' must be positive")
    return ShelleyGenesis(
        path=str(path),
        file_hash=file_hash,
        network_magic=_non_negative_int(path, genesis, "networkMagic"),
        system_start=system_start,
        epoch_length=_non_negative_int(path, genesis, "epochLength"),
        slot_length=float(slot_length),
        slots_per_kes_period=slots_per_kes_period,
        max_kes_evolutions=_non_negative_int(path, genesis, "maxKESEvolutions"),
        pools=MappingProxyType(_genesis_pools(path, genesis)),
    )


# -- plain stake file --------------------------------------------------------------------


def _pool_stake_entry(path: Path, key: str, value: Any) -> PoolStake:
    if isinstance(value, bool):
        raise StakeFileError(path, f"pools[{key!r}]: expected an integer or {{mark, set, go}}, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise StakeFileError(path, f"pools[{key!r}]: stake must be non-negative, got {value}")
        return PoolStake(value, value, value)
    if isinstance(value, Mapping):
        unknown = set(value) - {"mark", "set", "go"}
        if unknown:
            raise StakeFileError(path, f"pools[{key!r}]: unknown keys {sorted(unknown)}, expected mark, set, go")
        amounts = []
        for name in ("mark", "set", "go"):
            amount = value.get(name)
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                raise StakeFileError(path, f"pools[{key!r}].{name} must be a non-negative integer, got {amount!r}")
            amounts.append(amount)
        return PoolStake(*amounts)
    raise StakeFileError(path, f"pools[{key!r}]: expected an integer or {{mark, set, go}}, got {value!r}")


def load_stake_file(path: str | Path) -> StakeFile:
    """Read a plain stake file.

    Format (JSON object)::

        {"epoch": 512,                       # required, the snapshot's epoch
         "maxKESEvolutions": 62,             # optional, default 62 (mainnet)
         "slotsPerKESPeriod": 129600,        # optional, default 129600 (mainnet)
         "pools": {                          # required
            "<56 hex digits or pool1… bech32>": {"mark": a, "set": b, "go": c},
            "<pool id>": 1000000             # shorthand: the same stake in all three
         }}

    Only the set stake decides eligibility; a pool listed with set 0 is ineligible, a pool
    not listed is unrecognized.
    """
    path = Path(path)
    _data, doc = _read_json(path, "stake")
    epoch = _non_negative_int(path, doc, "epoch")
    max_kes = MAINNET_MAX_KES_EVOLUTIONS
    if "maxKESEvolutions" in doc:
        max_kes = _non_negative_int(path, doc, "maxKESEvolutions")
    slots_per_kes = MAINNET_SLOTS_PER_KES_PERIOD
    if "slotsPerKESPeriod" in doc:
        slots_per_kes = _non_negative_int(path, doc, "slotsPerKESPeriod")
        if slots_per_kes == 0:
            raise StakeFileError(path, "key 'slotsPerKESPeriod' must be positive")
    pools_obj = _field(path, doc, "pools", Mapping, "an object of pool id -> stake")
    pools: dict[bytes, PoolStake] = {}
    for key, value in pools_obj.items():
        try:
            pool_id = parse_pool_id(key)
        except ValueError as exc:
            raise StakeFileError(path, f"pools: {exc}") from None
        if pool_id in pools:
            raise StakeFileError(path, f"pools: pool {pool_id.hex()} is listed twice")
        pools[pool_id] = _pool_stake_entry(path, key, value)
    return StakeFile(
        path=str(path),
        epoch=epoch,
        max_kes_evolutions=max_kes,
        slots_per_kes_period=slots_per_kes,
        pools=MappingProxyType(pools),
    )
