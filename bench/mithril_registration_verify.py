"""What checking one Mithril signer registration costs, check by check (docs/mithril-registration.md 4).

For ``--pools`` real registrations (BLS key with proof of possession, KES signature over it,
operational certificate, JSON-hex as mithril-signer writes them), times per registration:

* decode: the three JSON-hex key fields to bytes (:mod:`apps.mithril_registration.encoding`);
* opcert: the cold key's Ed25519 signature over the certificate (``dmq.opcert.verify_opcert``);
* KES: the Sum6 KES signature over the key's 192 bytes (``dmq.kes.kes_verify``);
* PoP: the BLS12-381 proof of possession, two pairing checks (py-arkworks-bls12381);
* full: ``verify_registration`` end to end.

Cases are interleaved, best of ``--repeat`` passes over all registrations; one core.

    .venv/bin/python bench/mithril_registration_verify.py [--pools 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dmq.kes import kes_verify  # noqa: E402
from dmq.opcert import verify_opcert  # noqa: E402
from apps.mithril_registration import verify_registration  # noqa: E402
from apps.mithril_registration.build import GROUP_ORDER, BlsKey, Pool, build_registration  # noqa: E402
from apps.mithril_registration.encoding import decode_kes_signature, decode_opcert, decode_verification_key  # noqa: E402
from apps.mithril_registration.pop import verify_proof_of_possession  # noqa: E402

START_KES_PERIOD = 400
CURRENT_KES_PERIOD = 431


def corpus(pools: int):
    registrations, stakes = [], {}
    for i in range(pools):
        seed = i.to_bytes(4, "big")
        pool = Pool.create(hashlib.blake2b(b"cold" + seed, digest_size=32).digest(),
                           hashlib.blake2b(b"kes" + seed, digest_size=32).digest(), start_kes_period=START_KES_PERIOD)
        key = BlsKey.generate(int.from_bytes(hashlib.blake2b(b"bls" + seed).digest(), "big") % GROUP_ORDER)
        registrations.append(build_registration(pool, key, epoch=500, current_kes_period=CURRENT_KES_PERIOD))
        stakes[pool.pool_id] = 1_000_000 + i
    return registrations, stakes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    registrations, stakes = corpus(args.pools)
    decoded = [(decode_verification_key(r.verification_key), decode_kes_signature(r.verification_key_signature),
                *decode_opcert(r.operational_certificate)) for r in registrations]
    evolution = CURRENT_KES_PERIOD - START_KES_PERIOD

    def decode() -> None:
        for r in registrations:
            decode_verification_key(r.verification_key)
            decode_kes_signature(r.verification_key_signature)
            decode_opcert(r.operational_certificate)

    def opcert() -> None:
        for _, _, cert, cold_vk in decoded:
            assert verify_opcert(cert, cold_vk)

    def kes() -> None:
        for key, signature, cert, _ in decoded:
            assert kes_verify(cert.hot_vk, evolution, key, signature)

    def pop() -> None:
        for key, _, _, _ in decoded:
            verify_proof_of_possession(key)

    def full() -> None:
        for r in registrations:
            verify_registration(r, stake_distribution=stakes, current_kes_period=CURRENT_KES_PERIOD)

    cases: dict[str, Callable[[], None]] = {"decode (3 JSON-hex fields)": decode, "opcert (Ed25519)": opcert,
                                            "KES (Sum6)": kes, "proof of possession (BLS12-381)": pop,
                                            "full verify_registration": full}
    best = {name: float("inf") for name in cases}
    for _ in range(args.repeat):
        for name, case in cases.items():
            started = time.perf_counter()
            case()
            best[name] = min(best[name], (time.perf_counter() - started) / args.pools)

    load = os.getloadavg()
    print(f"{args.pools} registrations, best of {args.repeat}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'case':<34} {'µs/registration':>16} {'registrations/s':>16}")
    for name, seconds in best.items():
        print(f"{name:<34} {seconds * 1e6:>16.1f} {1 / seconds:>16,.0f}")
    kes_and_opcert = best["opcert (Ed25519)"] + best["KES (Sum6)"]
    print(f"KES + opcert together: {kes_and_opcert * 1e6:.1f} µs; the proof of possession is "
          f"{best['proof of possession (BLS12-381)'] / kes_and_opcert:.0f} times that")


if __name__ == "__main__":
    main()
