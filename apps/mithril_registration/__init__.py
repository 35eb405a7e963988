"""Mithril signer registrations, checked as Mithril's aggregator checks them (docs/mithril-registration.md).

An application built on the node and its topics: a pool's Mithril signer registers a BLS key
for an epoch with the fields of Mithril's ``RegisterSignerMessage``, and every node must reach
the verdict a Mithril aggregator reaches, since the registered set is what Mithril aggregators
will read. This package holds the message, the decoding of Mithril's key encodings, the proof
of possession (BLS12-381) and :func:`verify_registration`; the KES and operational certificate
checks are the node's own.

Imports from the node are kept few and explicit: ``dmq.kes``, ``dmq.opcert``, ``dmq.message``
and ``ouroboros_mux.cbor``.
"""

from .errors import (
    KesSignatureInvalid,
    KesSignatureMissing,
    OpcertInvalid,
    OpcertMissing,
    PartyIdMismatch,
    PoolNotInStakeDistribution,
    ProofOfPossessionInvalid,
    RegistrationMalformed,
    RegistrationRefused,
    WrongEpoch,
)
from .message import SignerRegistration, parse_register_signer
from .pop import verify_proof_of_possession
from .verify import VerifiedSigner, kes_evolutions_tried, verify_registration

__all__ = [
    "SignerRegistration",
    "parse_register_signer",
    "VerifiedSigner",
    "verify_registration",
    "kes_evolutions_tried",
    "verify_proof_of_possession",
    "RegistrationRefused",
    "RegistrationMalformed",
    "WrongEpoch",
    "OpcertMissing",
    "KesSignatureMissing",
    "OpcertInvalid",
    "KesSignatureInvalid",
    "PartyIdMismatch",
    "PoolNotInStakeDistribution",
    "ProofOfPossessionInvalid",
]
