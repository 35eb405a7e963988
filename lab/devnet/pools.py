"""Simulated stake pools with real credentials, reproducible from one seed.

Each pool gets a directory holding exactly what an operator's pool directory holds for DMQ
(cardano-cli text envelopes, written by :func:`clients.keys.generate_pool`): cold key,
issue counter, Sum6KES key, and an operational certificate with issue number 0 starting at
KES period 0, plus a VRF key pair, which a Shelley genesis needs to register the pool.

Every key is derived from ``(seed, pool index, role)`` with Blake2b-256, so the same seed
gives the same pools (and the same pool ids) on every machine, and a devnet can be rebuilt
exactly. The payment and stake keys that hold and delegate the pool's initial funds are
derived the same way but not written: a DMQ devnet never spends them, and the genesis
needs only their hashes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import cbor2
from nacl.bindings import crypto_sign_seed_keypair
from pycardano import Address, Network, PaymentVerificationKey, StakeVerificationKey

from dmq.keyfiles import VRF_SIGNING_KEY_TYPE, TextEnvelope, write_text_envelope
from dmq.message import OperationalCertificate
from dmq.opcert import pool_id_bech32, pool_id_of
from clients.keys import PoolKeyPaths, generate_pool

__all__ = [
    "VRF_VERIFICATION_KEY_TYPE",
    "DevnetPool",
    "derive_seed",
    "pool_name",
    "generate_pools",
]

VRF_VERIFICATION_KEY_TYPE = "VrfVerificationKey_PraosVRF"
_SEED_SIZE = 32


def derive_seed(seed: int, index: int, role: str) -> bytes:
    """The 32-byte seed of one key of one pool: Blake2b-256 of ``dmq-devnet/<seed>/<index>/<role>``."""
    return hashlib.blake2b(f"dmq-devnet/{seed}/{index}/{role}".encode(), digest_size=_SEED_SIZE).digest()


def pool_name(index: int) -> str:
    """``pool-0001`` for index 0: directory names that sort in pool order up to 9 999 pools."""
    return f"pool-{index + 1:04d}"


@dataclass(frozen=True, slots=True)
class DevnetPool:
    """One generated pool: where its files are and the public parts the genesis and tools need."""

    index: int
    directory: Path
    cold_vk: bytes
    opcert: OperationalCertificate
    vrf_vk: bytes
    payment_vk: bytes
    stake_vk: bytes

    @property
    def name(self) -> str:
        return pool_name(self.index)

    @property
    def paths(self) -> PoolKeyPaths:
        return PoolKeyPaths.in_directory(self.directory)

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    @property
    def pool_id_bech32(self) -> str:
        return pool_id_bech32(self.pool_id)

    @property
    def vrf_key_hash(self) -> bytes:
        """What a genesis registers for the pool: Blake2b-256 of its VRF verification key."""
        return hashlib.blake2b(self.vrf_vk, digest_size=32).digest()

    @property
    def stake_key_hash(self) -> bytes:
        """The stake credential that delegates the pool's funds (also its reward account)."""
        return StakeVerificationKey(self.stake_vk).hash().payload

    @property
    def address(self) -> bytes:
        """The base address (testnet) holding the funds delegated to the pool."""
        return bytes(Address(PaymentVerificationKey(self.payment_vk).hash(),
                             StakeVerificationKey(self.stake_vk).hash(), Network.TESTNET).to_primitive())


def _ed25519_public(seed: bytes) -> bytes:
    return crypto_sign_seed_keypair(seed)[0]


def _write_vrf_keys(directory: Path, seed: bytes) -> bytes:
    """``vrf.skey`` / ``vrf.vkey`` as ``cardano-cli node key-gen-VRF`` writes them.

    Praos VRF keys (ECVRF-ED25519-SHA512-Elligator2) are derived from a seed as Ed25519 keys
    are; the signing key is stored as ``seed ‖ verification key`` (64 bytes).
    """
    vk = _ed25519_public(seed)
    write_text_envelope(directory / "vrf.skey",
                        TextEnvelope(VRF_SIGNING_KEY_TYPE, "VRF Signing Key", cbor2.dumps(seed + vk)), secret=True)
    write_text_envelope(directory / "vrf.vkey",
                        TextEnvelope(VRF_VERIFICATION_KEY_TYPE, "VRF Verification Key", cbor2.dumps(vk)))
    return vk


def generate_pools(directory: str | os.PathLike, count: int, *, seed: int = 0) -> list[DevnetPool]:
    """Write ``count`` pools under ``directory/pool-NNNN/``; existing pool files are refused.

    About 6 ms per pool (one Sum6KES key generation, one Ed25519 certificate signature and
    eight small files), so 1 500 pools take seconds.
    """
    if count < 1:
        raise ValueError(f"a devnet needs at least one pool, got {count}")
    root = Path(directory)
    pools = []
    for index in range(count):
        pool_dir = root / pool_name(index)
        generated = generate_pool(pool_dir, cold_seed=derive_seed(seed, index, "cold"),
                                  kes_seed=derive_seed(seed, index, "kes"))
        vrf_vk = _write_vrf_keys(pool_dir, derive_seed(seed, index, "vrf"))
        pools.append(DevnetPool(
            index=index,
            directory=pool_dir,
            cold_vk=generated.cold_vk,
            opcert=generated.opcert,
            vrf_vk=vrf_vk,
            payment_vk=_ed25519_public(derive_seed(seed, index, "payment")),
            stake_vk=_ed25519_public(derive_seed(seed, index, "stake")),
        ))
    return pools
