"""Secret key files of the topic commands: 32 random bytes as 64 hex digits, readable by the owner only.

Every topic key an operator or client holds (UPSYCLE group, source and subscriber keys,
Blocklace owner keys, private-group member keys, dmsg static keys) is such a file: the
commands differ only in what they derive from it (an Ed25519, X25519 or secp256k1 key).
"""

from __future__ import annotations

import os
from pathlib import Path

from dmq.cli import hex_bytes
from dmq.errors import OperatorError

__all__ = ["read_secret", "write_secret"]


def read_secret(path: str, what: str) -> bytes:
    """The 32 bytes of ``path``; one line naming ``what`` (the flag) when it cannot be read."""
    try:
        text = Path(path).read_text().strip()
    except OSError as exc:
        raise OperatorError(f"{what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise OperatorError(f"{what} {path}: not a key file (64 hex digits)") from None
    return hex_bytes(text, f"{what} {path}", 32)


def write_secret(path: str, what: str = "--out", secret: bytes | None = None) -> bytes:
    """A new file ``path`` (never replacing one: a lost key is lost) holding ``secret`` or fresh random bytes."""
    secret = os.urandom(32) if secret is None else secret
    out = Path(path)
    try:
        out.touch(mode=0o600, exist_ok=False)
        out.write_text(secret.hex() + "\n")
    except OSError as exc:
        raise OperatorError(f"{what} {path}: {exc.strerror}") from None
    return secret
