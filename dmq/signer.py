"""Building and KES-signing DMQ messages as a Mithril signer does.

Mithril's ``DmqMessageBuilder`` (``internal/mithril-dmq/src/model/builder.rs``) takes the body,
sets ``expiresAt = unix_now_secs + ttl`` with a TTL of exactly 1800 s, reads the current KES
period, signs the payload ``[body, kesPeriod, expiresAt]`` at evolution ``kesPeriod -
startKesPeriod`` with the pool's KES key, and attaches the operational certificate and cold key
from ``node.cert``. 1800 s is also the node's strict upper bound (``expiresAt < now + 1800``),
so a message built at the maximum passes only while the node's clock is not behind the
signer's by more than the fraction of the second (docs/protocol/validation.md 6.11); on the same host it always
passes.

Defined here rather than in ``clients.mithril`` (which offers it) because the node's
topic signer (``topics.signer``) signs the same way, and ``topics`` may not import ``clients``.

The credentials are loaded once and the period-0 key is never evolved: each message is signed
by regenerating the subtree its evolution needs, as Mithril does by re-reading the key file.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from dmq.clock import Clock, SystemClock
from dmq.codec import build_message
from dmq.kes import KesError, KesSigningKey
from dmq.keyfiles import (
    KeyFileError,
    read_bulk_credentials,
    read_kes_signing_key,
    read_operational_certificate,
)
from dmq.message import MAX_BODY_SIZE, MIN_BODY_SIZE, DmqMessage, OperationalCertificate, pool_id_of
from dmq.opcert import pool_id_bech32, verify_opcert

from dmq.kes_period import KesPeriodSource, KesPeriodUnavailable

__all__ = [
    "DEFAULT_TTL",
    "SigningError",
    "SigningCredentials",
    "MessageBuilder",
]

#: ``DMQ_MESSAGE_TTL_IN_SECONDS`` of Mithril: the node's maximum, used as is.
DEFAULT_TTL = 1800


class SigningError(ValueError):
    """A message cannot be built: mismatched credentials, a period out of the key's range, a bad body."""


@dataclass(frozen=True)
class SigningCredentials:
    """A pool's KES signing key and the operational certificate that certifies it."""

    kes_key: KesSigningKey
    opcert: OperationalCertificate
    cold_vk: bytes

    def __post_init__(self) -> None:
        if self.kes_key.verification_key() != self.opcert.hot_vk:
            raise SigningError(
                "the KES key does not belong to the operational certificate: its verification key "
                f"{self.kes_key.verification_key().hex()} is not the certified {self.opcert.hot_vk.hex()}"
            )
        if not verify_opcert(self.opcert, self.cold_vk):
            raise SigningError("the operational certificate's cold signature does not verify under its cold key")

    @classmethod
    def from_files(cls, kes_skey: str | os.PathLike, opcert: str | os.PathLike) -> SigningCredentials:
        """``kes.skey`` and ``node.cert`` as cardano-cli writes them (KeyFileError on a bad file)."""
        certificate, cold_vk = read_operational_certificate(opcert)
        return cls(read_kes_signing_key(kes_skey), certificate, cold_vk)

    @classmethod
    def from_bulk_credentials(cls, path: str | os.PathLike, index: int) -> SigningCredentials:
        """Entry ``index`` of a cardano-node bulk credentials file (devnets)."""
        credentials = read_bulk_credentials(path)
        if not 0 <= index < len(credentials):
            raise KeyFileError(f"{path}: no credential {index} (the file holds {len(credentials)})")
        entry = credentials[index]
        return cls(entry.kes_key, entry.opcert, entry.cold_vk)

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    @property
    def party_id(self) -> str:
        """The bech32 pool id, which Mithril uses as the signer's party id."""
        return pool_id_bech32(self.pool_id)


@dataclass
class MessageBuilder:
    """Builds one signed message per body, at the period and time its sources give."""

    credentials: SigningCredentials
    kes_periods: KesPeriodSource
    clock: Clock = field(default_factory=SystemClock)
    ttl: int = DEFAULT_TTL

    def __post_init__(self) -> None:
        if self.ttl < 0:
            raise SigningError(f"a TTL is non-negative, got {self.ttl}")

    def expires_at(self) -> int:
        """``floor(now) + ttl``: Mithril's rule (whole seconds of the wall clock)."""
        return math.floor(self.clock.now()) + self.ttl

    def build(self, body: bytes) -> DmqMessage:
        body = bytes(body)
        if not MIN_BODY_SIZE <= len(body) <= MAX_BODY_SIZE:
            raise SigningError(
                f"a message body is {MIN_BODY_SIZE}..{MAX_BODY_SIZE} bytes, this one is {len(body)}: "
                "the node would refuse to decode the message"
            )
        try:
            period = self.kes_periods.current_kes_period()
        except KesPeriodUnavailable as exc:
            raise SigningError(str(exc)) from None
        credentials = self.credentials
        start = credentials.opcert.start_kes_period
        if period < start:
            raise SigningError(
                f"KES period {period} is before the operational certificate's start period {start} "
                "(the node would answer KESBeforeStartOCERT)"
            )
        evolution = period - start
        if evolution >= credentials.kes_key.total_periods:
            raise SigningError(
                f"KES period {period} is {evolution} evolutions after the certificate's start {start}; "
                f"the key has {credentials.kes_key.total_periods}: rotate the KES key and certificate"
            )
        try:
            return build_message(body, period, self.expires_at(), credentials.kes_key, credentials.opcert,
                                 credentials.cold_vk)
        except (KesError, ValueError) as exc:
            raise SigningError(str(exc)) from None
