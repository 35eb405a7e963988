"""Make registrations the way a Mithril signer does, for simulations and tests.

A mithril-signer draws a BLS secret, publishes ``vk = sk * g2`` with its proof of possession
``(sk * H(b"PoP"), sk * g1)`` (mithril-stm ``Initializer::new``), signs the key's 192 bytes with
its pool's KES key at the current KES period (mithril-common ``StmInitializerWrapper::setup``),
and sends the keys JSON-hex encoded (:mod:`.encoding`). :func:`build_registration` does the
same with the node's KES and certificate code, so the simulator can register thousands of
pools without Mithril; tests/interop/mithril proves the result is what Mithril makes and
accepts.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from dmq.kes import KesSigningKey, kes_sign_at
from dmq.message import OperationalCertificate
from dmq.opcert import cold_verification_key, encode_opcert, issue_opcert, pool_id_bech32, pool_id_of

from .message import SignerRegistration
from .pop import POP_DST, POP_MESSAGE

__all__ = ["GROUP_ORDER", "BlsKey", "Pool", "build_registration", "encode_json_hex", "encode_bytes_hex"]

#: The order of G1 and G2 (BLS12-381's r).
GROUP_ORDER = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


@dataclass(frozen=True, slots=True)
class BlsKey:
    """A BLS secret and its 192-byte verification key with proof of possession (vk, k1, k2)."""

    secret: int
    verification_key: bytes

    @classmethod
    def generate(cls, secret: int | None = None) -> BlsKey:
        sk = secret if secret is not None else 1 + secrets.randbelow(GROUP_ORDER - 1)
        scalar = Scalar(sk)
        vk = G2Point() * scalar
        k1 = G1Point.hash_to_curve(POP_MESSAGE, POP_DST) * scalar
        k2 = G1Point() * scalar
        return cls(sk, vk.to_compressed_bytes() + k1.to_compressed_bytes() + k2.to_compressed_bytes())


@dataclass(frozen=True, slots=True)
class Pool:
    """A stake pool's signing material: cold key seed, KES key (at period 0) and certificate."""

    cold_seed: bytes
    kes_key: KesSigningKey
    opcert: OperationalCertificate

    @classmethod
    def create(cls, cold_seed: bytes, kes_seed: bytes, *, start_kes_period: int, issue_number: int = 0) -> Pool:
        kes_key = KesSigningKey.generate(kes_seed)
        opcert = issue_opcert(cold_seed, kes_key.verification_key(), issue_number, start_kes_period)
        return cls(bytes(cold_seed), kes_key, opcert)

    @property
    def cold_vk(self) -> bytes:
        return cold_verification_key(self.cold_seed)

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    @property
    def party_id(self) -> str:
        return pool_id_bech32(self.pool_id)


def _json_hex(document: object) -> str:
    # serde_json's compact form: no spaces.
    return json.dumps(document, separators=(",", ":")).encode().hex()


def encode_json_hex(verification_key: bytes, kes_signature: bytes, opcert: OperationalCertificate,
                    cold_vk: bytes) -> tuple[str, str, str]:
    """The three key fields as mithril-signer writes them (hex of serde JSON)."""
    vk_json = {"vk": list(verification_key[:96]), "pop": list(verification_key[96:])}
    # Sum6KesSig: {"sigma": <inner>, "lhs_pk": [...], "rhs_pk": [...]}, the leaf an Ed25519 signature.
    sig_json: object = list(kes_signature[:64])
    for level in range(6):
        pair = kes_signature[64 + 64 * level: 128 + 64 * level]
        sig_json = {"sigma": sig_json, "lhs_pk": list(pair[:32]), "rhs_pk": list(pair[32:])}
    opcert_json = [[list(opcert.hot_vk), opcert.issue_number, opcert.start_kes_period, list(opcert.cold_signature)],
                   list(cold_vk)]
    return _json_hex(vk_json), _json_hex(sig_json), _json_hex(opcert_json)


def encode_bytes_hex(verification_key: bytes, kes_signature: bytes, opcert: OperationalCertificate,
                     cold_vk: bytes) -> tuple[str, str, str]:
    """The three key fields in Mithril's other accepted form (hex of the bytes; CBOR for the certificate)."""
    opcert_cbor = b"\x82" + encode_opcert(opcert) + b"\x58\x20" + cold_vk
    return verification_key.hex(), kes_signature.hex(), opcert_cbor.hex()


def build_registration(pool: Pool, bls_key: BlsKey, *, epoch: int, current_kes_period: int,
                       encoding: str = "json-hex") -> SignerRegistration:
    """``pool``'s registration of ``bls_key`` for ``epoch``, KES-signed at ``current_kes_period``."""
    evolution = current_kes_period - pool.opcert.start_kes_period
    kes_signature = kes_sign_at(pool.kes_key, evolution, bls_key.verification_key)
    encode = {"json-hex": encode_json_hex, "bytes-hex": encode_bytes_hex}[encoding]
    vk_text, sig_text, opcert_text = encode(bls_key.verification_key, kes_signature, pool.opcert, pool.cold_vk)
    return SignerRegistration(
        epoch=epoch,
        party_id=pool.party_id,
        verification_key=vk_text,
        verification_key_signature=sig_text,
        operational_certificate=opcert_text,
        kes_evolutions=evolution,
    )
