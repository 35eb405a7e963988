"""Check one Mithril signer registration as Mithril's aggregator does (docs/mithril-registration.md 3).

The aggregator's verifier (mithril-aggregator/src/services/signer_registration/verifier.rs)
hands each signer to mithril-common's ``KeyRegWrapper::register``
(mithril-common/src/crypto_helper/cardano/key_certification.rs), which checks:

1. an operational certificate is present (``OpCertMissing``), and the KES signature
   (``KesSignatureMissing``);
2. the certificate: its cold key signed ``kesVk || issue || startKesPeriod`` (``OpCertInvalid``);
3. the KES signature over the verification key's 192 canonical bytes, under the certificate's
   KES key, at ``e = currentKesPeriod - startKesPeriod`` (saturating at 0), or at ``e - 1`` or
   ``e + 1`` for clock skew (kes/verifier_standard.rs). ``currentKesPeriod`` is the
   **verifier's** (the aggregator asks its Cardano node): the message's ``kes_period`` is not
   used;
4. the pool id, Blake2b-224 of the cold key, has an entry in the stake distribution of the
   registration epoch (``PartyIdNonExisting``);
5. the BLS key's proof of possession (mithril-stm ``RegistrationEntry::new``; :mod:`.pop`).

The verdict here is Mithril's verdict. Two things differ on purpose, both refusing what no
honest signer sends: the message's ``party_id``, which Mithril overwrites with the
certificate's pool, must name that pool (:class:`PartyIdMismatch`), and keys must be in an
encoding Mithril writes (:mod:`.encoding`). The cheap checks come first and the pairings
last, so a registration failing several checks is named by the first; Mithril decodes the BLS
points first, which only changes which reason is named.

The KES and certificate checks are the node's own (:mod:`dmq.kes`, :mod:`dmq.opcert`),
the ones every DMQ message passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dmq.kes import kes_verify
from dmq.message import OperationalCertificate, pool_id_of
from dmq.opcert import pool_id_bech32, verify_opcert

from .encoding import KES_DEPTH, decode_kes_signature, decode_opcert, decode_verification_key
from .errors import (
    KesSignatureInvalid,
    KesSignatureMissing,
    OpcertInvalid,
    OpcertMissing,
    PartyIdMismatch,
    PoolNotInStakeDistribution,
    WrongEpoch,
)
from .message import SignerRegistration
from .pop import verify_proof_of_possession

__all__ = ["VerifiedSigner", "verify_registration", "kes_evolutions_tried"]

#: Mithril tries the evolution from the chain's period and one either side, capped at 64.
_KES_SKEW = 1
_KES_EVOLUTIONS_CAP = 64


@dataclass(frozen=True, slots=True)
class VerifiedSigner:
    """A registration that passed, with what the checks established."""

    registration: SignerRegistration    # as received
    pool_id: bytes                      # 28 bytes, Blake2b-224 of the cold key
    party_id: str                       # pool1… (bech32 of pool_id)
    stake: int                          # the pool's stake in the distribution checked against
    verification_key: bytes             # 192 canonical bytes: vk (G2), k1, k2 (G1)
    kes_evolution: int                  # the evolution the KES signature verified at
    opcert: OperationalCertificate
    cold_vk: bytes


def kes_evolutions_tried(current_kes_period: int, start_kes_period: int) -> range:
    """The evolutions Mithril accepts a signature at, in the order it tries them."""
    evolution = max(0, current_kes_period - start_kes_period)
    return range(max(0, evolution - _KES_SKEW), min(_KES_EVOLUTIONS_CAP, evolution + _KES_SKEW) + 1)


def verify_registration(
    registration: SignerRegistration,
    *,
    stake_distribution: Mapping[bytes, int],
    current_kes_period: int,
    epoch: int | None = None,
) -> VerifiedSigner:
    """Check ``registration``; the :class:`VerifiedSigner`, or a :class:`~.errors.RegistrationRefused`.

    ``stake_distribution`` maps 28-byte pool ids to stake: the distribution of the registration
    epoch (Mithril's aggregator records the one its Cardano node gives in the epoch before).
    ``current_kes_period`` is the verifier's current KES period. ``epoch``, when given, is the
    registration round's epoch the message must name.
    """
    if epoch is not None and registration.epoch != epoch:
        raise WrongEpoch(f"{registration.party_id}: registration for epoch {registration.epoch}, the round is epoch {epoch}")
    if registration.operational_certificate is None:
        raise OpcertMissing(f"{registration.party_id}: no operational certificate")
    if registration.verification_key_signature is None:
        raise KesSignatureMissing(f"{registration.party_id}: no KES signature over the verification key")
    verification_key = decode_verification_key(registration.verification_key)
    kes_signature = decode_kes_signature(registration.verification_key_signature)
    opcert, cold_vk = decode_opcert(registration.operational_certificate)

    if not verify_opcert(opcert, cold_vk):
        raise OpcertInvalid(f"{registration.party_id}: the cold key did not sign the operational certificate")
    tried = kes_evolutions_tried(current_kes_period, opcert.start_kes_period)
    evolution = next((t for t in tried if kes_verify(opcert.hot_vk, t, verification_key, kes_signature, KES_DEPTH)), None)
    if evolution is None:
        raise KesSignatureInvalid(
            f"{registration.party_id}: KES signature over the verification key fails at evolutions "
            f"{tried.start}..{tried.stop - 1} (current KES period {current_kes_period}, "
            f"certificate starts at {opcert.start_kes_period})")

    pool_id = pool_id_of(cold_vk)
    party_id = pool_id_bech32(pool_id)
    if registration.party_id and registration.party_id != party_id:
        raise PartyIdMismatch(f"{registration.party_id}: the operational certificate is {party_id}'s")
    stake = stake_distribution.get(pool_id)
    if stake is None:
        raise PoolNotInStakeDistribution(f"{party_id}: not in the stake distribution")

    verify_proof_of_possession(verification_key)
    return VerifiedSigner(registration, pool_id, party_id, stake, verification_key, evolution, opcert, cold_vk)

