"""The registration topic's Event payloads (docs/mithril-registration.md 8).

Registrations travel as the Event payloads of one Blocklace topic. A ``RegisterSignerMessage``
in JSON-hex is about 6 KB; a block body is at most 1280 bytes (docs/topics-design.md 5.2). So
an Event carries the key material as bytes, in deterministic CBOR:

=====================================================  ===========================================
``[0, epoch, vk, kesSignature, opcert, kesEvolutions]``  a registration: ``vk`` the 192 canonical
                                                        bytes (vk, k1, k2), ``kesSignature`` the 448
                                                        bytes of the Sum6 signature, ``opcert`` the
                                                        CBOR ``[[kesVk, issue, start, sig], coldVk]``
                                                        Mithril reads as bytes-hex, ``kesEvolutions``
                                                        an integer or null
``[1, epoch]``                                          the publishing pool's node holds the
                                                        registration round of ``epoch`` closed
``[2, epoch, digest, count]``                           the publishing pool's node fixed the set of
                                                        ``epoch``: its digest and size (a notice for
                                                        subscribers; it decides nothing)
=====================================================  ===========================================

Nothing is lost: the KES signature covers the key's 192 bytes, never its text, and the three
fields become exactly Mithril's bytes-hex texts (:func:`registration_of`), which Mithril's
decoders accept (tests/interop/mithril). The pool id is the certificate's; the party id a
signer wrote is checked against it when the event is made (:func:`registration_event`) and
not carried. With at most 4 pointers per block (the topic's ``maxPointers``), a registration
block is about 1,000 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from dmq.opcert import pool_id_bech32
from dmq.message import pool_id_of
from topics import cbor

from .build import encode_bytes_hex
from .encoding import decode_kes_signature, decode_opcert, decode_verification_key
from .errors import PartyIdMismatch, RegistrationMalformed
from .message import SignerRegistration

__all__ = ["REGISTRATION", "CLOSE", "AGREED", "MAX_POINTERS", "Registered", "Closed", "Agreed",
           "registration_event", "close_event", "agreed_event", "decode_event", "registration_of"]

REGISTRATION, CLOSE, AGREED = 0, 1, 2
#: The registration topic's pointer limit, so that a registration fits in a block.
MAX_POINTERS = 8


@dataclass(frozen=True, slots=True)
class Registered:
    epoch: int
    raw: bytes                  # the Event payload as carried
    registration: SignerRegistration


@dataclass(frozen=True, slots=True)
class Closed:
    epoch: int


@dataclass(frozen=True, slots=True)
class Agreed:
    epoch: int
    digest: bytes
    count: int


def registration_event(registration: SignerRegistration) -> bytes:
    """The Event payload of ``registration`` (any encoding Mithril writes); a
    :class:`~.errors.RegistrationRefused` when a key does not decode or ``party_id`` names
    another pool than the certificate."""
    if registration.operational_certificate is None or registration.verification_key_signature is None:
        raise RegistrationMalformed(f"{registration.party_id}: a registration over DMQ needs its operational "
                                    "certificate and KES signature")
    vk = decode_verification_key(registration.verification_key)
    signature = decode_kes_signature(registration.verification_key_signature)
    opcert, cold_vk = decode_opcert(registration.operational_certificate)
    party_id = pool_id_bech32(pool_id_of(cold_vk))
    if registration.party_id and registration.party_id != party_id:
        raise PartyIdMismatch(f"{registration.party_id}: the operational certificate is {party_id}'s")
    opcert_raw = bytes.fromhex(encode_bytes_hex(vk, signature, opcert, cold_vk)[2])
    return cbor.encode([REGISTRATION, registration.epoch, vk, signature, opcert_raw, registration.kes_evolutions])


def close_event(epoch: int) -> bytes:
    return cbor.encode([CLOSE, epoch])


def agreed_event(epoch: int, digest: bytes, count: int) -> bytes:
    return cbor.encode([AGREED, epoch, digest, count])


def _uint(value: object) -> int:
    if type(value) is not int or not 0 <= value < 1 << 64:
        raise RegistrationMalformed(f"expected an unsigned 64-bit integer, got {value!r}")
    return value


def _sized(value: object, size: int | None, what: str) -> bytes:
    if not isinstance(value, bytes) or (size is not None and len(value) != size):
        raise RegistrationMalformed(f"{what}: expected {size or 'some'} bytes")
    return value


def decode_event(payload: bytes) -> Registered | Closed | Agreed:
    """The event an Event payload carries; :class:`~.errors.RegistrationMalformed` otherwise."""
    try:
        value = cbor.decode(payload)
    except ValueError as exc:
        raise RegistrationMalformed(f"not deterministic CBOR: {exc}") from None
    if not isinstance(value, list) or not value or value[0] not in (REGISTRATION, CLOSE, AGREED):
        raise RegistrationMalformed("not a registration topic event")
    if value[0] == CLOSE and len(value) == 2:
        return Closed(_uint(value[1]))
    if value[0] == AGREED and len(value) == 4:
        return Agreed(_uint(value[1]), _sized(value[2], 32, "digest"), _uint(value[3]))
    if value[0] == REGISTRATION and len(value) == 6:
        _, epoch, vk, signature, opcert_raw, evolutions = value
        evolutions = None if evolutions is None else _uint(evolutions)
        registration = registration_of(_uint(epoch), _sized(vk, 192, "verification key"),
                                       _sized(signature, 448, "KES signature"),
                                       _sized(opcert_raw, None, "operational certificate"), evolutions)
        return Registered(registration.epoch, payload, registration)
    raise RegistrationMalformed("a registration topic event of the wrong length")


def registration_of(epoch: int, vk: bytes, signature: bytes, opcert_raw: bytes,
                    kes_evolutions: int | None) -> SignerRegistration:
    """The ``RegisterSignerMessage`` of a registration event, keys in Mithril's bytes-hex form."""
    _, cold_vk = decode_opcert(opcert_raw.hex())
    return SignerRegistration(epoch=epoch, party_id=pool_id_bech32(pool_id_of(cold_vk)), verification_key=vk.hex(),
                              verification_key_signature=signature.hex(), operational_certificate=opcert_raw.hex(),
                              kes_evolutions=kes_evolutions)
