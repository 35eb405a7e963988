"""Mithril signer registrations, checked as Mithril's aggregator checks them (docs/mithril-registration.md).

An application built on the node and its topics: a pool's Mithril signer registers a BLS key
for an epoch with the fields of Mithril's ``RegisterSignerMessage``, and every node must reach
the verdict a Mithril aggregator reaches, since the registered set is what Mithril aggregators
will read. This package holds the message, the decoding of Mithril's key encodings, the proof
of possession (BLS12-381) and :func:`verify_registration`; the KES and operational certificate
checks are the node's own.

Over DMQ (docs/mithril-registration.md 8, 9): :mod:`.events` is what the registration topic
carries, :mod:`.agreement` the rule that fixes one set per epoch from a Blocklace certificate
(sans-IO), :mod:`.node_side` what a node runs when ``MithrilRegistration`` is configured
(follow the topic, close rounds, announce sets, serve ``/epoch-settings``), and :mod:`.client`
what a signer's side publishes with (``dmq mithril register``).

The checks import from the node only ``dmq.kes``, ``dmq.opcert``, ``dmq.message`` and
``ouroboros_mux.cbor``; the parts over DMQ add the topic client (``clients.topics``) and the
Blocklace codec.
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
