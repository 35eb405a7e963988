"""Messages for the end-to-end tests: signed with real devnet keys, or broken on purpose.

Valid messages are signed with the Haskell-generated KES keys and operational
certificates of the conformance devnet (the two pools of its Shelley genesis), exactly as a
Mithril signer builds them (``kesPeriod`` absolute, ``expiresAt`` in POSIX seconds). The
broken ones each fail exactly one validation check, so the node's reply names that check.
Pools outside the genesis are generated from seeds (KES key, cold key, opcert).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from nacl.signing import SigningKey

from dmq.codec import build_legacy_message, build_message, encode_message
from dmq.kes import KesSigningKey
from dmq.keyfiles import BulkCredential, read_bulk_credentials
from dmq.message import DmqMessage, OperationalCertificate, pool_id_of
from dmq.opcert import cold_verification_key, issue_opcert
from tests.conftest import CONFORMANCE

__all__ = [
    "DEVNET", "DMQ_DEVNET_MAGIC", "Signer", "devnet_signers", "generated_signer", "unique_body",
    "with_message_id", "with_kes_signature", "with_cold_signature", "foreign_cold_signature", "now_s",
    "StakedPools", "staked_pools",
]

DEVNET = CONFORMANCE / "cardano-devnet"
#: The DMQ magic of the Mithril devnet (Cardano magic 42 + 2^31).
DMQ_DEVNET_MAGIC = 2147483690

_bodies = itertools.count()


def now_s() -> int:
    return int(time.time())


def unique_body(size: int = 160) -> bytes:
    """A body no other message of this test run has (the id covers it, so ids differ too)."""
    serial = next(_bodies).to_bytes(8, "big") + time.time_ns().to_bytes(8, "big")
    return (serial * (size // len(serial) + 1))[:size]


@dataclass(frozen=True)
class Signer:
    """What a Mithril signer holds for one pool: KES key, opcert and cold verification key."""

    kes_key: KesSigningKey
    opcert: OperationalCertificate
    cold_vk: bytes

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    def sign(self, *, expires_in: int = 1700, expires_at: int | None = None, kes_period: int = 0,
             body: bytes | None = None, sign_period: int | None = None, legacy: bool = False) -> DmqMessage:
        """A message as ``mithril-dmq`` builds it; ``sign_period`` signs at a wrong evolution;
        ``legacy`` builds the layout of released Mithril 2543–2617 (docs/protocol/message.md 5.5)."""
        build = build_legacy_message if legacy else build_message
        return build(
            unique_body() if body is None else body,
            kes_period,
            now_s() + expires_in if expires_at is None else expires_at,
            self.kes_key, self.opcert, self.cold_vk,
            sign_period=sign_period,
        )


def devnet_signers() -> list[Signer]:
    """The two genesis pools of the conformance devnet, from its ``bulk-creds-k2.json``."""
    credentials: list[BulkCredential] = read_bulk_credentials(DEVNET / "bulk-creds-k2.json")
    return [Signer(c.kes_key, c.opcert, c.cold_vk) for c in credentials]


def generated_signer(seed: int, *, issue_number: int = 0, start_kes_period: int = 0) -> Signer:
    """A pool of our own: KES and cold keys derived from ``seed``, an opcert signed by the cold key."""
    kes_key = KesSigningKey.generate(seed.to_bytes(4, "big") * 8)
    cold_seed = (seed + 0x5EED).to_bytes(4, "big") * 8
    opcert = issue_opcert(cold_seed, kes_key.verification_key(), issue_number, start_kes_period)
    return Signer(kes_key, opcert, cold_verification_key(cold_seed))


def with_message_id(message: DmqMessage, message_id: bytes) -> bytes:
    """The same message carrying another id (fails check 4 only)."""
    return encode_message(message.signed_bytes, message.kes_signature, message.opcert, message.cold_vk,
                          message_id=message_id)


def with_kes_signature(message: DmqMessage, kes_signature: bytes) -> bytes:
    """The same message with another KES signature (its id still matches: fails check 10 only)."""
    return encode_message(message.signed_bytes, kes_signature, message.opcert, message.cold_vk)


def with_cold_signature(message: DmqMessage, cold_signature: bytes) -> bytes:
    """The same message whose opcert carries another cold signature (fails check 9 only)."""
    opcert = OperationalCertificate(message.opcert.hot_vk, message.opcert.issue_number,
                                    message.opcert.start_kes_period, cold_signature)
    return encode_message(message.signed_bytes, message.kes_signature, opcert, message.cold_vk)


def foreign_cold_signature(opcert: OperationalCertificate) -> bytes:
    """A well-formed Ed25519 signature of the opcert's signable by a key that is not the pool's."""
    return SigningKey(b"\x42" * 32).sign(opcert.signable()).signature


@dataclass(frozen=True)
class StakedPools:
    """Pools for the rejects a genesis cannot produce, with the stake file that sets them up:
    ``staked`` (opcert issue 1), the same pool with a lower opcert (issue 0), and ``unstaked``,
    a pool with zero set stake. The node reads the stake file as ``StakeSource``."""

    staked: Signer
    staked_lower_counter: Signer
    unstaked: Signer

    def stake_file(self) -> dict:
        return {"epoch": 3, "maxKESEvolutions": 60,
                "pools": {self.staked.pool_id.hex(): 1_000_000,
                          self.unstaked.pool_id.hex(): {"mark": 5, "set": 0, "go": 5}}}


def staked_pools() -> StakedPools:
    return StakedPools(generated_signer(11, issue_number=1), generated_signer(11, issue_number=0), generated_signer(12))
