"""Full-validation throughput on one core, next to the libsodium floor measured in the same run.

Full validation = decode the received bytes (docs/protocol/message.md 5.2) and run checks 1..10 through
``Validator.process_batch`` (docs/protocol/validation.md 6.1, 6.2), for valid messages from 1 000 pools. Two
cases: the opcert cache warm (each pool's opcert already verified: one Ed25519 verification
per message, the KES leaf) and cold (cache disabled: two Ed25519 verifications per message).

The floor is what no implementation in this process can beat: per message, one Ed25519
verification (libsodium, the KES leaf signature over the payload) plus seven Blake2b-256
hashes (the id over the payload, six KES key pairs of 64 bytes), on the same messages.
The CIP budgets 2 ms of validation per message; the figures say how far below it we are.

    .venv/bin/python bench/validation_throughput.py [--pools N] [--rounds R] [--repeat K] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nacl.bindings import crypto_sign_open  # noqa: E402

from dmq.clock import ManualClock  # noqa: E402
from dmq.codec import build_message, decode_message  # noqa: E402
from dmq.kes import KesSigningKey  # noqa: E402
from dmq.opcert import cold_verification_key, issue_opcert  # noqa: E402
from dmq.stake import PoolStake, StakeView  # noqa: E402
from dmq.validation import Validator  # noqa: E402

CIP_BUDGET_SECONDS = 0.002
NOW = 1_800_000_000.0
BODY_SIZE = 451          # a Mithril signature body (vectors.json mithril_body)
TARGET_RATIO = 0.8


def build_corpus(pools: int) -> list[bytes]:
    """One valid message per pool, as received bytes; pool i signs at evolution i mod 62."""
    corpus = []
    for i in range(pools):
        seed = i.to_bytes(4, "big") * 8
        cold_seed = hashlib.blake2b(b"cold" + seed, digest_size=32).digest()
        kes_key = KesSigningKey.generate(hashlib.blake2b(b"kes" + seed, digest_size=32).digest())
        start = 100 + i % 7
        opcert = issue_opcert(cold_seed, kes_key.verification_key(), i % 5, start)
        body = (seed * ((BODY_SIZE // len(seed)) + 1))[:BODY_SIZE]
        msg = build_message(body, start + i % 62, int(NOW) + 1799, kes_key, opcert, cold_verification_key(cold_seed))
        corpus.append(msg.raw)
    return corpus


def stake_view_for(corpus: list[bytes], clock: ManualClock) -> StakeView:
    view = StakeView(clock, max_kes_evolutions=62)
    view.update({decode_message(raw).pool_id: PoolStake(1, 1, 1) for raw in corpus}, 500)
    return view


def never_known(_message_id: bytes) -> bool:
    return False


def run_validation(corpus: list[bytes], rounds: int, *, warm: bool) -> float:
    """Seconds per message of decode + process_batch over ``rounds`` batches of the whole corpus.

    The clock moves on by the rate-limit delay between rounds, so every message is accepted
    every round (the mempool is not part of this measurement).
    """
    clock = ManualClock(now=NOW, monotonic=10_000.0)
    validator = Validator(stake_view_for(corpus, clock), clock, opcert_cache_size=8192 if warm else 0)
    if warm:
        validator.process_batch([decode_message(raw) for raw in corpus], never_known)
        clock.advance(60)
    elapsed = 0.0
    for _ in range(rounds):
        gc_was_enabled = gc.isenabled()
        gc.disable()
        started = time.perf_counter()
        outcomes = validator.process_batch([decode_message(raw) for raw in corpus], never_known)
        elapsed += time.perf_counter() - started
        if gc_was_enabled:
            gc.enable()
        if not all(o.error is None for o in outcomes):
            raise SystemExit(f"benchmark corpus did not validate: {next(o.error for o in outcomes if o.error)}")
        clock.advance(60)
    return elapsed / (rounds * len(corpus))


def floor_inputs(corpus: list[bytes]) -> list[tuple[bytes, bytes, list[bytes], bytes]]:
    """Per message: payload, leaf signature + payload, the six key pairs, the leaf key."""
    inputs = []
    for raw in corpus:
        msg = decode_message(raw)
        sig = msg.kes_signature
        pairs = [sig[64 + 64 * k: 128 + 64 * k] for k in range(6)]
        t = msg.kes_period - msg.opcert.start_kes_period
        leaf_vk = None
        half = 64
        for pair in reversed(pairs):
            half //= 2
            leaf_vk, t = (pair[:32], t) if t < half else (pair[32:], t - half)
        inputs.append((msg.signed_bytes, sig[:64] + msg.signed_bytes, pairs, leaf_vk))
    return inputs


def run_floor(inputs, rounds: int) -> float:
    blake2b = hashlib.blake2b
    elapsed = 0.0
    for _ in range(rounds):
        gc.disable()
        started = time.perf_counter()
        for payload, signed, pairs, leaf_vk in inputs:
            blake2b(payload, digest_size=32).digest()
            for pair in pairs:
                blake2b(pair, digest_size=32).digest()
            crypto_sign_open(signed, leaf_vk)
        elapsed += time.perf_counter() - started
        gc.enable()
    return elapsed / (rounds * len(inputs))


def report(name: str, seconds: float, floor: float | None) -> None:
    line = (f"  {name:<26} {1 / seconds:>9,.0f} msg/s  {seconds * 1e6:>7.1f} µs/msg  "
            f"{CIP_BUDGET_SECONDS / seconds:>5.1f}x under the CIP 2 ms budget")
    if floor is not None:
        line += f"  ratio to floor {floor / seconds:.2f}"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="batches of the whole corpus per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="measurements per case; the best is kept")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the warm case")
    args = parser.parse_args()

    started = time.perf_counter()
    corpus = build_corpus(args.pools)
    print(f"validation throughput: {args.pools} pools, {BODY_SIZE}-byte bodies, "
          f"{len(corpus[0])}-byte messages, one core (corpus built in {time.perf_counter() - started:.1f} s)")

    # The three cases are interleaved and the best of each kept, so that load from other
    # processes on a shared machine hits them alike rather than one case alone.
    inputs = floor_inputs(corpus)
    floor = warm = cold = float("inf")
    for _ in range(args.repeat):
        floor = min(floor, run_floor(inputs, args.rounds))
        warm = min(warm, run_validation(corpus, args.rounds, warm=True))
        cold = min(cold, run_validation(corpus, args.rounds, warm=False))

    report("floor (1 Ed25519 + 7 B2b)", floor, None)
    report("full validation, warm", warm, floor)
    report("full validation, cold", cold, floor)
    verdict = "meets" if floor / warm >= TARGET_RATIO else "misses"
    print(f"  warm / floor = {floor / warm:.2f} ({verdict} the {TARGET_RATIO} target)")

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        run_validation(corpus, args.rounds, warm=True)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
