"""Why a Mithril signer registration is refused, one type per check (docs/mithril-registration.md 3).

Every refusal is a :class:`RegistrationRefused` with a stable ``reason`` (a short name for traces,
metrics and the agreement's proofs) and a one-line message that names the pool when it is known.
The checks follow Mithril's aggregator; the types map to the errors of mithril-common's
``KeyRegWrapper::register`` (``ProtocolRegistrationErrorWrapper``) and mithril-stm's
``RegisterError`` as each class says.
"""

from __future__ import annotations

__all__ = [
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


class RegistrationRefused(ValueError):
    """A registration that does not pass; ``reason`` names the check."""

    reason = "refused"


class RegistrationMalformed(RegistrationRefused):
    """A field is missing or not an encoding Mithril writes (Mithril: the message adapter's decode error)."""

    reason = "malformed"


class WrongEpoch(RegistrationRefused):
    """The registration is for another epoch than the round (Mithril: ``RegistrationRoundUnexpectedEpoch``)."""

    reason = "wrong-epoch"


class OpcertMissing(RegistrationRefused):
    """No operational certificate (Mithril: ``OpCertMissing``; uncertified signers are test-only there)."""

    reason = "opcert-missing"


class KesSignatureMissing(RegistrationRefused):
    """No KES signature over the verification key (Mithril: ``KesSignatureMissing``)."""

    reason = "kes-signature-missing"


class OpcertInvalid(RegistrationRefused):
    """The cold key did not sign the certificate (Mithril: ``OpCertInvalid`` inside the KES verifier)."""

    reason = "opcert-invalid"


class KesSignatureInvalid(RegistrationRefused):
    """The KES signature does not verify at the chain's evolution, nor one either side (Mithril: ``KesSignatureInvalid``)."""

    reason = "kes-signature-invalid"


class PartyIdMismatch(RegistrationRefused):
    """The message names another pool than the certificate's cold key (Mithril replaces it silently; refused here)."""

    reason = "party-id-mismatch"


class PoolNotInStakeDistribution(RegistrationRefused):
    """The certificate's pool has no entry in the stake distribution (Mithril: ``PartyIdNonExisting``)."""

    reason = "not-in-stake-distribution"


class ProofOfPossessionInvalid(RegistrationRefused):
    """The BLS key is not a valid G2 key or its proof of possession fails (mithril-stm: ``ConcatenationKeyInvalid``)."""

    reason = "proof-of-possession-invalid"
