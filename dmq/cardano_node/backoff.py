"""How long to wait before the next attempt to reach cardano-node.

cardano-node restarts take minutes (ledger replay) and the socket vanishes meanwhile;
retrying every second would flood the log, retrying every minute from the start would
leave a briefly interrupted link down for a minute. So the delay doubles from a short
first wait up to a ceiling, and is jittered so that several DMQ nodes on one host (or
relays restarted together) do not retry in lock step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay ``initial * factor**attempt`` capped at ``maximum``, minus up to ``jitter`` of it."""

    initial: float = 1.0
    maximum: float = 60.0
    factor: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"back-off needs 0 < initial <= maximum, got {self.initial} and {self.maximum}")
        if self.factor < 1:
            raise ValueError(f"back-off factor must be >= 1, got {self.factor}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"back-off jitter must be within [0, 1), got {self.jitter}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """The wait before retry number ``attempt`` (0 for the first retry)."""
        if attempt < 0:
            raise ValueError(f"attempt must be >= 0, got {attempt}")
        # Cap the exponent first: factor ** attempt overflows a float after a long outage.
        base = self.initial
        for _ in range(attempt):
            base *= self.factor
            if base >= self.maximum:
                base = self.maximum
                break
        return base * (1.0 - self.jitter * rng.random())
