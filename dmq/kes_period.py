"""Where a publisher's current KES period comes from, made explicit.

A message carries the **absolute** KES period ``slot div slotsPerKESPeriod`` and is signed at
evolution ``period - startKesPeriod`` (docs/protocol/validation.md 6.5). Mithril asks its cardano-node for the tip
slot and falls back to period 0 when it cannot (docs/protocol/local-protocols.md 7.4), which a node rejects as
``KESBeforeStartOCERT`` for any certificate starting later. Here the source is always chosen
by the caller:

* :class:`FixedKesPeriod`: a period the operator states;
* :class:`SlotKesPeriod`: from a slot (a chain tip read elsewhere) and ``slotsPerKESPeriod``;
* :class:`GenesisClockKesPeriod`: the slot computed from the Shelley genesis ``systemStart``
  and ``slotLength`` and the wall clock.

The genesis computation is right only for chains that started in Shelley (devnets, preview):
on mainnet and preprod the Byron era ran with 20-second slots, so slot numbers are not
``(now - systemStart) / slotLength`` there; those networks are refused rather than given a
wrong period.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from dmq.clock import Clock, SystemClock
from dmq.stake import ShelleyGenesis

__all__ = [
    "KesPeriodSource",
    "KesPeriodUnavailable",
    "FixedKesPeriod",
    "SlotKesPeriod",
    "GenesisClockKesPeriod",
    "BYRON_HISTORY_CARDANO_MAGICS",
]

#: Cardano magics of the public networks whose chain begins with Byron (mainnet, preprod).
BYRON_HISTORY_CARDANO_MAGICS = frozenset({764_824_073, 1})


class KesPeriodUnavailable(ValueError):
    """The chosen source cannot give a KES period (now, or ever)."""


class KesPeriodSource(Protocol):
    def current_kes_period(self) -> int:
        """The absolute KES period a message built now must carry."""


def _check_slots_per_period(slots_per_kes_period: int) -> None:
    if slots_per_kes_period <= 0:
        raise KesPeriodUnavailable(f"slotsPerKESPeriod must be positive, got {slots_per_kes_period}")


@dataclass(frozen=True, slots=True)
class FixedKesPeriod:
    period: int

    def __post_init__(self) -> None:
        if self.period < 0:
            raise KesPeriodUnavailable(f"a KES period is non-negative, got {self.period}")

    def current_kes_period(self) -> int:
        return self.period


@dataclass(frozen=True, slots=True)
class SlotKesPeriod:
    slot: int
    slots_per_kes_period: int

    def __post_init__(self) -> None:
        _check_slots_per_period(self.slots_per_kes_period)
        if self.slot < 0:
            raise KesPeriodUnavailable(f"a slot number is non-negative, got {self.slot}")

    def current_kes_period(self) -> int:
        return self.slot // self.slots_per_kes_period


@dataclass(frozen=True, slots=True)
class GenesisClockKesPeriod:
    """``floor((now - systemStart) / slotLength) div slotsPerKESPeriod`` on a Shelley-only chain."""

    system_start: float          # POSIX seconds
    slot_length: float           # seconds
    slots_per_kes_period: int
    clock: Clock = field(default_factory=SystemClock)

    def __post_init__(self) -> None:
        _check_slots_per_period(self.slots_per_kes_period)
        if not self.slot_length > 0:
            raise KesPeriodUnavailable(f"slotLength must be positive, got {self.slot_length}")

    @classmethod
    def from_genesis(cls, genesis: ShelleyGenesis, clock: Clock | None = None) -> GenesisClockKesPeriod:
        if genesis.network_magic in BYRON_HISTORY_CARDANO_MAGICS:
            raise KesPeriodUnavailable(
                f"{genesis.path}: network magic {genesis.network_magic} has a Byron history, so its slots "
                "cannot be computed from the Shelley genesis; give the KES period or the current slot instead"
            )
        return cls(genesis.system_start.timestamp(), genesis.slot_length, genesis.slots_per_kes_period,
                   clock if clock is not None else SystemClock())

    def current_slot(self) -> int:
        elapsed = self.clock.now() - self.system_start
        if elapsed < 0:
            raise KesPeriodUnavailable("the chain has not started yet (now is before the genesis systemStart)")
        return math.floor(elapsed / self.slot_length)

    def current_kes_period(self) -> int:
        return self.current_slot() // self.slots_per_kes_period
