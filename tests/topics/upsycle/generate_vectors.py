"""Regenerate ``vectors.json``: UPSYCLE ids, signatures and times from fixed Ed25519 seeds.

Run ``python -m tests.topics.upsycle.generate_vectors`` after a deliberate change of docs/topics-design.md
4.2 or 4.3; the test recomputes every vector without the project's encoder.
"""

from __future__ import annotations

import json
from pathlib import Path

from topics.upsycle.identity import keypair_from_seed, sign
from topics.upsycle.timebase import minutes_to_posix
from topics.upsycle.wire import KIND_ADVERTISEMENT, KIND_ROUTED, encode_advertisement, encode_envelope, encode_multicast, encode_unicast

OUT = Path(__file__).with_name("vectors.json")
SEEDS = [bytes(32), bytes(range(32)), bytes([0xA5]) * 32]


def _signer(seed: bytes):
    return lambda message: sign(seed, message)


def build() -> dict:
    keys = [keypair_from_seed(s)[0] for s in SEEDS]
    routed = []
    unicast = encode_unicast(_signer(SEEDS[0]), keys[0], keys[1], 3600, 3_000_000, b"hello unicast")
    multicast = encode_multicast(_signer(SEEDS[1]), keys[1], 0, 0xFFFF_FFFF, b"", [])
    seen = encode_multicast(_signer(SEEDS[2]), keys[2], 0xFFFF_FFFF, 1, bytes(range(256)) * 4,
                            [unicast.id, multicast.id])
    for name, seed, message in (("unicast", SEEDS[0], unicast), ("multicast-empty", SEEDS[1], multicast),
                                ("multicast-seen", SEEDS[2], seen)):
        routed.append({
            "name": name,
            "seed": seed.hex(),
            "publicKey": message.signer.hex(),
            "type": message.type,
            "header": {k: (v.hex() if isinstance(v, bytes) else [i.hex() for i in v] if isinstance(v, tuple) else v)
                       for k, v in (("src", message.src), ("dst", message.dst), ("grp", message.grp),
                                    ("ttl", message.ttl), ("exp", message.exp), ("sn", message.seen))
                       if v is not None and not (k == "sn" and message.type == 0)},
            "body": message.body.hex(),
            "encoded": message.raw.hex(),
            "signature": message.sig.hex(),
            "id": message.id.hex(),
            "envelope": encode_envelope(KIND_ROUTED, message.raw).hex(),
        })
    ad = encode_advertisement(_signer(SEEDS[2]), keys[2], (1, bytes([192, 0, 2, 1]), 3001), {7: keys[0]},
                              [keys[1]], 5, 600, 3_000_000)
    return {
        "routed": routed,
        "advertisement": {"seed": SEEDS[2].hex(), "encoded": ad.raw.hex(), "preimage": ad.preimage.hex(),
                          "signature": ad.sig.hex(),
                          "envelope": encode_envelope(KIND_ADVERTISEMENT, ad.raw).hex()},
        "minutes": [{"exp": exp, "posix": minutes_to_posix(exp)} for exp in (0, 1, 2, 1_000_000, 0xFFFF_FFFF)],
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {OUT}")
