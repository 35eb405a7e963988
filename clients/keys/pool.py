"""A stake pool's DMQ credentials as cardano-cli files: generate, rotate the KES key, identify.

The files and their names are the ones SPO guides use with cardano-cli, so an operator's
existing pool directory works unchanged and files written here work with cardano-cli:

============== ===========================================  ================================
file           text envelope type                           cardano-cli command that writes it
============== ===========================================  ================================
cold.skey      StakePoolSigningKey_ed25519                  ``node key-gen``
cold.vkey      StakePoolVerificationKey_ed25519             ``node key-gen``
cold.counter   NodeOperationalCertificateIssueCounter       ``node key-gen`` / ``issue-op-cert``
kes.skey       KesSigningKey_ed25519_kes_2^6                ``node key-gen-KES``
kes.vkey       KesVerificationKey_ed25519_kes_2^6           ``node key-gen-KES``
node.cert      NodeOperationalCertificate                   ``node issue-op-cert``
============== ===========================================  ================================

Issuing follows ``issue-op-cert``: the certificate takes the counter's next issue number and
the counter moves on by one. A rotation therefore always carries a higher issue number than
the certificate it replaces, which is what nodes require (docs/protocol/validation.md 6.9: a pool's counter may
not go down).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dmq.kes import KES_SEED_SIZE, KesSigningKey
from dmq.keyfiles import (
    COLD_SIGNING_KEY_TYPE,
    COLD_VERIFICATION_KEY_TYPE,
    ISSUE_COUNTER_TYPE,
    OPCERT_TYPE,
    IssueCounter,
    KeyFileError,
    read_cold_signing_key,
    read_cold_verification_key,
    read_issue_counter,
    read_operational_certificate,
    read_text_envelope,
    write_cold_signing_key,
    write_cold_verification_key,
    write_issue_counter,
    write_kes_signing_key,
    write_kes_verification_key,
    write_operational_certificate,
)
from dmq.message import OperationalCertificate
from dmq.opcert import cold_verification_key, issue_opcert, pool_id_bech32, pool_id_of

__all__ = [
    "PoolKeyPaths",
    "GeneratedPool",
    "RotatedKesKey",
    "PoolIdentity",
    "KeyToolError",
    "generate_pool",
    "rotate_kes_key",
    "pool_identity",
]

_COLD_SEED_SIZE = 32
_UINT64_MAX = 0xFFFF_FFFF_FFFF_FFFF


class KeyToolError(KeyFileError):
    """A key operation refused: files in the way, missing, or not belonging together."""


@dataclass(frozen=True, slots=True)
class PoolKeyPaths:
    """The six files of one pool, under the names cardano-cli users expect."""

    directory: Path

    @classmethod
    def in_directory(cls, directory: str | os.PathLike) -> PoolKeyPaths:
        return cls(Path(directory))

    @property
    def cold_skey(self) -> Path:
        return self.directory / "cold.skey"

    @property
    def cold_vkey(self) -> Path:
        return self.directory / "cold.vkey"

    @property
    def cold_counter(self) -> Path:
        return self.directory / "cold.counter"

    @property
    def kes_skey(self) -> Path:
        return self.directory / "kes.skey"

    @property
    def kes_vkey(self) -> Path:
        return self.directory / "kes.vkey"

    @property
    def opcert(self) -> Path:
        return self.directory / "node.cert"

    def all(self) -> tuple[Path, ...]:
        return (self.cold_skey, self.cold_vkey, self.cold_counter, self.kes_skey, self.kes_vkey, self.opcert)


@dataclass(frozen=True, slots=True)
class GeneratedPool:
    paths: PoolKeyPaths
    cold_vk: bytes
    opcert: OperationalCertificate

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)


@dataclass(frozen=True, slots=True)
class RotatedKesKey:
    paths: PoolKeyPaths
    opcert: OperationalCertificate
    previous_issue_number: int | None    # the certificate replaced, if there was a readable one


@dataclass(frozen=True, slots=True)
class PoolIdentity:
    """The pool a key file belongs to: Blake2b-224 of its cold verification key."""

    path: str
    file_type: str
    cold_vk: bytes

    @property
    def pool_id(self) -> bytes:
        return pool_id_of(self.cold_vk)

    @property
    def hex(self) -> str:
        return self.pool_id.hex()

    @property
    def bech32(self) -> str:
        return pool_id_bech32(self.pool_id)


def _seed(given: bytes | None, size: int, what: str) -> bytes:
    if given is None:
        return os.urandom(size)
    if len(given) != size:
        raise KeyToolError(f"a {what} seed is {size} bytes, got {len(given)}")
    return bytes(given)


def _check_range(name: str, value: int) -> None:
    if not 0 <= value <= _UINT64_MAX:
        raise KeyToolError(f"{name} {value} outside 0..2^64-1")


def _write_kes_and_certificate(paths: PoolKeyPaths, cold_seed: bytes, kes_seed: bytes, issue_number: int,
                               start_kes_period: int) -> OperationalCertificate:
    kes_key = KesSigningKey.generate(kes_seed)
    opcert = issue_opcert(cold_seed, kes_key.verification_key(), issue_number, start_kes_period)
    write_kes_signing_key(paths.kes_skey, kes_key)
    write_kes_verification_key(paths.kes_vkey, kes_key.verification_key())
    write_operational_certificate(paths.opcert, opcert, cold_verification_key(cold_seed))
    write_issue_counter(paths.cold_counter, IssueCounter(issue_number + 1, cold_verification_key(cold_seed)))
    kes_key.erase()
    return opcert


def generate_pool(
    directory: str | os.PathLike,
    *,
    start_kes_period: int = 0,
    issue_number: int = 0,
    cold_seed: bytes | None = None,
    kes_seed: bytes | None = None,
    overwrite: bool = False,
) -> GeneratedPool:
    """Write a new pool's six files into ``directory`` (created if needed).

    Seeds come from the operating system unless given (reproducible devnets and tests).
    Existing files are never replaced unless ``overwrite``: a cold key lost is a pool lost.
    """
    _check_range("start KES period", start_kes_period)
    _check_range("issue number", issue_number)
    if issue_number == _UINT64_MAX:
        raise KeyToolError("issue number 2^64-1 leaves no next number for the counter")
    paths = PoolKeyPaths.in_directory(directory)
    if not overwrite:
        present = [str(p) for p in paths.all() if p.exists()]
        if present:
            raise KeyToolError(f"refusing to overwrite existing key files: {', '.join(present)}")
    try:
        paths.directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KeyToolError(f"{paths.directory}: cannot create the directory ({exc.strerror})") from None
    cold = _seed(cold_seed, _COLD_SEED_SIZE, "cold key")
    kes = _seed(kes_seed, KES_SEED_SIZE, "KES key")
    cold_vk = cold_verification_key(cold)
    write_cold_signing_key(paths.cold_skey, cold)
    write_cold_verification_key(paths.cold_vkey, cold_vk)
    opcert = _write_kes_and_certificate(paths, cold, kes, issue_number, start_kes_period)
    return GeneratedPool(paths, cold_vk, opcert)


def rotate_kes_key(
    directory: str | os.PathLike,
    *,
    start_kes_period: int,
    kes_seed: bytes | None = None,
) -> RotatedKesKey:
    """A new KES key and a certificate for it from ``start_kes_period``, with the next issue number.

    Reads ``cold.skey`` and ``cold.counter``, replaces ``kes.skey``, ``kes.vkey`` and
    ``node.cert``, and advances ``cold.counter``.
    """
    _check_range("start KES period", start_kes_period)
    paths = PoolKeyPaths.in_directory(directory)
    cold = read_cold_signing_key(paths.cold_skey)
    counter = read_issue_counter(paths.cold_counter)
    cold_vk = cold_verification_key(cold)
    if counter.cold_vk != cold_vk:
        raise KeyToolError(f"{paths.cold_counter}: the counter belongs to another cold key than {paths.cold_skey}")
    if counter.next_issue_number >= _UINT64_MAX:
        raise KeyToolError(f"{paths.cold_counter}: the issue counter is exhausted")
    previous = None
    if paths.opcert.exists():
        try:
            previous_cert, previous_cold_vk = read_operational_certificate(paths.opcert)
        except KeyFileError:
            previous_cert = None
        if previous_cert is not None:
            if previous_cold_vk != cold_vk:
                raise KeyToolError(f"{paths.opcert}: the certificate belongs to another cold key than {paths.cold_skey}")
            if start_kes_period < previous_cert.start_kes_period:
                raise KeyToolError(
                    f"start KES period {start_kes_period} is before the current certificate's "
                    f"{previous_cert.start_kes_period}"
                )
            previous = previous_cert.issue_number
    kes = _seed(kes_seed, KES_SEED_SIZE, "KES key")
    opcert = _write_kes_and_certificate(paths, cold, kes, counter.next_issue_number, start_kes_period)
    return RotatedKesKey(paths, opcert, previous)


_READERS = {
    COLD_VERIFICATION_KEY_TYPE: read_cold_verification_key,
    COLD_SIGNING_KEY_TYPE: lambda path: cold_verification_key(read_cold_signing_key(path)),
    OPCERT_TYPE: lambda path: read_operational_certificate(path)[1],
    ISSUE_COUNTER_TYPE: lambda path: read_issue_counter(path).cold_vk,
}


def pool_identity(path: str | os.PathLike) -> PoolIdentity:
    """The pool of a cold key (signing or verification), an operational certificate or an issue counter."""
    envelope = read_text_envelope(path)
    reader = _READERS.get(envelope.type)
    if reader is None:
        known = ", ".join(sorted(_READERS))
        raise KeyToolError(f"{path}: a {envelope.type} file does not identify a pool (expected one of {known})")
    return PoolIdentity(str(path), envelope.type, reader(path))
