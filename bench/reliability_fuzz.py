"""Fuzz every codec with at least 100 000 inputs each and print inputs and crashes per codec.

Inputs come from the hypothesis strategies of ``tests/reliability/fuzz_targets.py`` (random
bytes, message-shaped CBOR, mutated valid messages, deep nesting): a corpus is drawn with
hypothesis, then each decoder gets the corpus plus cheap mutations of it until it has seen
``--inputs`` inputs. A crash is anything other than a value or the decoder's typed error;
the script exits 1 if there was one, printing the first input of each.

    .venv/bin/python bench/reliability_fuzz.py [--inputs 100000] [--corpus 4000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from tests.reliability.fuzz_targets import Crash, fuzz_input, mutate, run_target, seed_corpus, targets  # noqa: E402


def draw_corpus(size: int) -> list[bytes]:
    corpus: list[bytes] = []

    @settings(max_examples=size, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(raw=fuzz_input)
    def collect(raw: bytes) -> None:
        corpus.append(raw)

    collect()
    return corpus + list(seed_corpus())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs per codec (default 100000)")
    parser.add_argument("--corpus", type=int, default=4000, help="inputs drawn with hypothesis (default 4000)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    corpus = draw_corpus(args.corpus)
    print(f"corpus: {len(corpus)} inputs drawn with hypothesis in {time.perf_counter() - started:.1f} s")
    print(f"{'codec':<26}{'inputs':>10}{'values':>10}{'refused':>10}{'crashes':>9}{'s':>8}")
    total_crashes = 0
    for target in targets():
        rng = random.Random(args.seed)
        values = refused = 0
        crashes: list[str] = []
        t0 = time.perf_counter()
        for i in range(args.inputs):
            raw = corpus[i] if i < len(corpus) else mutate(rng, corpus[rng.randrange(len(corpus))], corpus)
            try:
                if run_target(target, raw):
                    values += 1
                else:
                    refused += 1
            except Crash as crash:
                crashes.append(str(crash))
        total_crashes += len(crashes)
        print(f"{target.name:<26}{args.inputs:>10}{values:>10}{refused:>10}{len(crashes):>9}"
              f"{time.perf_counter() - t0:>8.1f}", flush=True)
        for crash in crashes[:1]:
            print(f"  first crash: {crash}")
    print(f"codecs: {len(targets())}  inputs per codec: {args.inputs}  crashes: {total_crashes}  "
          f"total {time.perf_counter() - started:.0f} s (shared 2-core machine)")
    return 1 if total_crashes else 0


if __name__ == "__main__":
    sys.exit(main())
