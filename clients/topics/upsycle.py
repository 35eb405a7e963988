"""UPSYCLE bodies a client publishes: multicasts, unicasts and peer advertisements (docs/topics-design.md 4).

The client signs, the node wraps: a multicast is signed by the group key (whoever holds its
seed may publish to the group), a unicast by its source key, an advertisement by the
advertised peer's ``id`` key (4.3, 4.7). Every key is a 32-byte Ed25519 seed; the encoders are
those of :mod:`topics.upsycle.wire`, so what a client builds is what the node validates.
Expiry is given in seconds of lifetime from ``now`` and written as the design's minutes
since 2020 (4.4).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from topics.upsycle.identity import keypair_from_seed, sign
from topics.upsycle.timebase import posix_to_minutes
from topics.upsycle.wire import (
    KIND_ADVERTISEMENT,
    KIND_ROUTED,
    PeerAdvertisement,
    RoutedMessage,
    encode_advertisement,
    encode_envelope,
    encode_multicast,
    encode_unicast,
)

__all__ = ["TTL", "LIFETIME", "public_key", "multicast", "unicast", "advertisement", "routed_body",
           "advertisement_body", "peer_address"]

#: Default store-and-forward ``ttl`` of a routed message (seconds) and lifetime of its ``exp``.
TTL = 3600
LIFETIME = 7 * 86400


def public_key(seed: bytes) -> bytes:
    """The Ed25519 public key of ``seed``: a group key ``grp``, a source ``src``, a service or peer ``id``."""
    return keypair_from_seed(seed)[0]


def _exp(now: float, lifetime: int) -> int:
    return posix_to_minutes(int(now) + lifetime)


def multicast(group_seed: bytes, payload: bytes, now: float, *, ttl: int = TTL, lifetime: int = LIFETIME,
              seen: Sequence[bytes] = ()) -> RoutedMessage:
    """A multicast of ``payload`` to the group whose key ``group_seed`` is, signed by it."""
    return encode_multicast(lambda data: sign(group_seed, data), public_key(group_seed), ttl, _exp(now, lifetime),
                            payload, tuple(seen))


def unicast(source_seed: bytes, destination: bytes, payload: bytes, now: float, *, ttl: int = TTL,
            lifetime: int = LIFETIME) -> RoutedMessage:
    """A unicast of ``payload`` from the key of ``source_seed`` to the service key ``destination``."""
    return encode_unicast(lambda data: sign(source_seed, data), public_key(source_seed), destination, ttl,
                          _exp(now, lifetime), payload)


def peer_address(text: str) -> tuple[int, bytes, int]:
    """``203.0.113.7:3001`` or ``[2001:db8::7]:3001`` as the advertisement's ``addr`` (4.7);
    ``ValueError`` naming what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT with a port 1..65535")
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise ValueError(f"{host!r} is not an IPv4 or IPv6 address") from None
    return (1 if ip.version == 4 else 2, ip.packed, int(port))


def advertisement(peer_seed: bytes, address: tuple[int, bytes, int], now: float, *, revision: int,
                  services: Mapping[int, bytes] | None = None, groups: Sequence[bytes] = (), ttl: int = TTL,
                  lifetime: int = 86400) -> PeerAdvertisement:
    """The advertisement of the peer whose ``id`` key ``peer_seed`` is: where it listens, the services
    it offers (service number -> key) and the groups it relays; ``revision`` orders its versions."""
    return encode_advertisement(lambda data: sign(peer_seed, data), public_key(peer_seed), address,
                                dict(services or {}), list(groups), revision, ttl, _exp(now, lifetime))


def routed_body(routed: RoutedMessage) -> bytes:
    """The UPSYCLE body (envelope kind 0) that carries ``routed``: what ``MsgPublish`` takes."""
    return encode_envelope(KIND_ROUTED, routed.raw)


def advertisement_body(ad: PeerAdvertisement) -> bytes:
    """The UPSYCLE body (envelope kind 3) that carries ``ad``."""
    return encode_envelope(KIND_ADVERTISEMENT, ad.raw)
