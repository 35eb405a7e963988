"""Mithril's ``RegisterSignerMessage``: the fields a signer registers with, as received.

The JSON (mithril-common/src/messages/register_signer.rs) has these members; the ones marked
optional are left out when empty, and members this build does not know (the SNARK fields that
an aggregator built with Mithril's ``snark`` feature reads) are ignored, as serde does:

=============================  ===========================================================
``epoch``                      the registration epoch: the signer's current epoch + 1
``party_id``                   the pool id, bech32 ``pool1…``
``verification_key``           BLS key with its proof of possession (:mod:`.encoding`)
``verification_key_signature`` optional: KES signature over the key's 192 bytes
``operational_certificate``    optional: the pool's certificate and cold key
``kes_period``                 optional: KES evolutions at signing (start period to current)
=============================  ===========================================================

The texts are kept exactly as received: decoding happens in :mod:`.verify`, and what is
stored, forwarded or served is what the signer sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .encoding import strict_json
from .errors import RegistrationMalformed

__all__ = ["SignerRegistration", "parse_register_signer"]

_UINT64_MAX = 0xFFFFFFFFFFFFFFFF


@dataclass(frozen=True, slots=True)
class SignerRegistration:
    """One ``RegisterSignerMessage``; key fields are the hex texts as received."""

    epoch: int
    party_id: str
    verification_key: str
    verification_key_signature: str | None = None
    operational_certificate: str | None = None
    kes_evolutions: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The message's JSON members, optional ones left out when absent (as Mithril writes them)."""
        out: dict[str, Any] = {"epoch": self.epoch, "party_id": self.party_id, "verification_key": self.verification_key}
        if self.verification_key_signature is not None:
            out["verification_key_signature"] = self.verification_key_signature
        if self.operational_certificate is not None:
            out["operational_certificate"] = self.operational_certificate
        if self.kes_evolutions is not None:
            out["kes_period"] = self.kes_evolutions
        return out


def _uint(document: Mapping[str, Any], name: str) -> int:
    value = document.get(name)
    if type(value) is not int or not 0 <= value <= _UINT64_MAX:
        raise RegistrationMalformed(f"{name}: expected an unsigned 64-bit integer, got {value!r}")
    return value


def _text(document: Mapping[str, Any], name: str) -> str:
    value = document.get(name)
    if not isinstance(value, str):
        raise RegistrationMalformed(f"{name}: expected a string, got {type(value).__name__}")
    return value


def _optional_uint(document: Mapping[str, Any], name: str) -> int | None:
    return None if document.get(name) is None else _uint(document, name)


def _optional_text(document: Mapping[str, Any], name: str) -> str | None:
    return None if document.get(name) is None else _text(document, name)


def parse_register_signer(document: Mapping[str, Any] | str | bytes) -> SignerRegistration:
    """A :class:`SignerRegistration` from the message's JSON (text or already parsed)."""
    if isinstance(document, (str, bytes, bytearray)):
        try:
            document = strict_json(document)
        except (ValueError, UnicodeDecodeError) as exc:
            raise RegistrationMalformed(f"not JSON: {exc}") from None
    if not isinstance(document, Mapping):
        raise RegistrationMalformed("a RegisterSignerMessage is a JSON object")
    return SignerRegistration(
        epoch=_uint(document, "epoch"),
        party_id=_text(document, "party_id"),
        verification_key=_text(document, "verification_key"),
        verification_key_signature=_optional_text(document, "verification_key_signature"),
        operational_certificate=_optional_text(document, "operational_certificate"),
        kes_evolutions=_optional_uint(document, "kes_period"),
    )
