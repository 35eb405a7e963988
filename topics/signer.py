"""The node's signer: wraps adapter bodies into DMQ messages of the node's pool (docs/topics-design.md 2.7).

A local topic client cannot produce KES signatures, so a signing-capable node holds its
pool's ``kes.skey`` and ``node.cert`` (the same files a Mithril signer reads) and signs on the
client's behalf. Building and signing is :class:`dmq.signer.MessageBuilder`, the one Mithril clients use;
only ``expiresAt`` differs: the adapter's bound instead of Mithril's fixed 1800 s.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from dmq.clock import Clock
from dmq.message import DmqMessage
from dmq.kes_period import KesPeriodSource
from dmq.signer import MessageBuilder, SigningCredentials, SigningError

__all__ = ["NodeSigner", "SigningError"]


@dataclass
class NodeSigner:
    credentials: SigningCredentials
    kes_periods: KesPeriodSource
    clock: Clock

    @classmethod
    def from_files(cls, kes_skey: str | os.PathLike, opcert: str | os.PathLike, kes_periods: KesPeriodSource,
                   clock: Clock) -> NodeSigner:
        return cls(SigningCredentials.from_files(kes_skey, opcert), kes_periods, clock)

    @property
    def pool_id(self) -> bytes:
        return self.credentials.pool_id

    def sign(self, body: bytes, expires_at: int) -> DmqMessage:
        """The signed message for ``body`` expiring at ``expires_at`` (POSIX seconds)."""
        ttl = expires_at - math.floor(self.clock.now())
        if ttl < 0:
            raise SigningError(f"expiresAt {expires_at} is in the past")
        return MessageBuilder(self.credentials, self.kes_periods, self.clock, ttl).build(body)
