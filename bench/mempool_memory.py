"""Mempool memory per held message, and durable append throughput with group commit.

Memory: resident-set growth of a process holding N messages (default 45 000 of 2 650 bytes,
the CIP's mainnet mempool) in the mempool, divided by the wire bytes held. Messages are
built, decoded by the project's codec (as the node receives them), appended in batches of
the size a peer reply carries, and the decoded objects dropped: what remains is what the
mempool keeps. Each case runs in a fresh child process so one case's heap does not hide
another's growth. Cases: the in-memory mempool; the durable mempool while appending; the
durable mempool just reopened from disk (load time printed too). For the durable cases the
anonymous part of the growth (the Python heap) is shown beside the total, which also counts
LMDB pages mapped from the data file. A second table splits each case's growth per message:
the wire bytes, what ``sys.getsizeof`` counts of the objects the entries hold (the raw bytes'
object header, the id, the entry, its index and expiry ints, each shared object counted once),
and the rest (the id dict, the order and expiry lists, the allocators' rounding and free space).

Throughput: S concurrent submitters each awaiting ``DurableMempool.submit`` of one message
at a time (a message is acknowledged only once its group's transaction is synced), against
one submitter (one fsync per message).

    .venv/bin/python bench/mempool_memory.py [--messages N] [--size BYTES] [--submitters S]
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from dmq.clock import ManualClock  # noqa: E402
from dmq.codec import decode_message, encode_message, encode_payload  # noqa: E402
from dmq.mempool import DurableMempool, Mempool, open_durable_mempool  # noqa: E402
from dmq.message import OperationalCertificate  # noqa: E402

NOW = 1_800_000_000
BATCH = 100
PAGE = os.sysconf("SC_PAGE_SIZE")
OPCERT = OperationalCertificate(
    hot_vk=b"\x11" * 32, issue_number=2**40, start_kes_period=200, cold_signature=b"\x22" * 64
)
COLD_VK = bytes(range(32))


def wire_message(seed: int, size: int) -> bytes:
    """A structurally valid message of exactly ``size`` bytes (distinct per seed)."""
    kes_period = 2**33  # 9-byte integers, as the largest real messages carry
    overhead = len(encode_message(encode_payload(b"", kes_period, NOW + 1800), b"\x00" * 448, OPCERT, COLD_VK))
    body_size = size - overhead - 2  # a body of 256+ bytes has a 3-byte length header, not 1
    body = seed.to_bytes(8, "big") * (body_size // 8) + b"\x5a" * (body_size % 8)
    raw = encode_message(encode_payload(body, kes_period, NOW + 1800 + seed % 600), b"\x33" * 448, OPCERT, COLD_VK)
    if len(raw) != size:
        raise SystemExit(f"cannot build a {size}-byte message (got {len(raw)}); sizes 722..2657 work")
    return raw


def memory() -> tuple[int, int]:
    """(resident bytes, anonymous resident bytes) of this process."""
    with open("/proc/self/statm") as statm:
        resident = int(statm.read().split()[1]) * PAGE
    anonymous = resident
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                anonymous = int(line.split()[1]) * 1024
    return resident, anonymous


def fill(mempool: Mempool, count: int, size: int) -> None:
    for start in range(0, count, BATCH):
        batch = [decode_message(wire_message(seed, size)) for seed in range(start, min(start + BATCH, count))]
        mempool.append(batch)
    del batch


def held_objects(mempool: Mempool) -> tuple[int, int, int, int, int]:
    """Bytes ``sys.getsizeof`` counts of what the entries hold beyond the wire bytes, each object once.

    (raw bytes' headers, ids, entries, indices, expiry ints), summed over every entry.
    """
    seen: set[int] = set()
    totals = [0, 0, 0, 0, 0]
    for entry in mempool:
        for slot, obj in enumerate((entry.raw, entry.message_id, entry, entry.index, entry.expires_at)):
            if id(obj) not in seen:
                seen.add(id(obj))
                totals[slot] += sys.getsizeof(obj) - (len(obj) if slot == 0 else 0)
    return totals[0], totals[1], totals[2], totals[3], totals[4]


def memory_case(case: str, count: int, size: int, directory: str) -> None:
    """Child process: print ``resident anonymous wire_bytes seconds file_size`` and the held objects."""
    clock = ManualClock(now=NOW)
    wire_message(0, size)  # warm the codec and the allocator's first arenas
    gc.collect()
    before = memory()
    started = time.perf_counter()
    if case == "memory":
        mempool = Mempool(clock)
        fill(mempool, count, size)
    elif case == "durable":
        mempool = DurableMempool(directory, clock)
        fill(mempool, count, size)
    elif case == "reopen":
        mempool = DurableMempool(directory, clock)
        assert len(mempool) == count, (len(mempool), count)
    else:
        raise SystemExit(f"unknown case {case}")
    elapsed = time.perf_counter() - started
    gc.collect()
    after = memory()
    data_file = os.path.join(directory, "data.mdb")
    file_size = os.path.getsize(data_file) if case != "memory" else 0
    print(after[0] - before[0], after[1] - before[1], mempool.bytes_held, f"{elapsed:.3f}", file_size,
          *held_objects(mempool))


def run_case(case: str, count: int, size: int, directory: str) -> tuple[int, int, int, float, int, list[int]]:
    out = subprocess.run(
        [sys.executable, __file__, "--case", case, "--messages", str(count), "--size", str(size), "--dir", directory],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return int(out[0]), int(out[1]), int(out[2]), float(out[3]), int(out[4]), [int(n) for n in out[5:]]


async def throughput(directory: str, submitters: int, per_submitter: int, size: int) -> tuple[float, int, int]:
    clock = ManualClock(now=NOW)
    messages = [[decode_message(wire_message(s * per_submitter + i, size)) for i in range(per_submitter)]
                for s in range(submitters)]
    async with open_durable_mempool(directory, clock) as mempool:

        async def submitter(own):
            for message in own:
                await mempool.submit([message])

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for own in messages:
                nursery.start_soon(submitter, own)
        elapsed = time.perf_counter() - started
        return submitters * per_submitter / elapsed, mempool.submissions, mempool.store.append_transactions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=45_000)
    parser.add_argument("--size", type=int, default=2_650)
    parser.add_argument("--submitters", type=int, default=64)
    parser.add_argument("--per-submitter", type=int, default=100)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        memory_case(args.case, args.messages, args.size, args.dir)
        return

    print(f"Mempool memory: {args.messages:,} messages of {args.size:,} bytes")
    print(f"{'case':<34}{'RSS growth MB':>14}{'anon MB':>10}{'wire MB':>10}{'ratio':>8}{'anon ratio':>12}"
          f"{'seconds':>9}{'LMDB file MB':>14}")
    breakdown = []
    with tempfile.TemporaryDirectory(prefix="mempool-bench-") as tmp:
        store = os.path.join(tmp, "store")
        for case, label in (("memory", "in-memory Mempool"), ("durable", "DurableMempool, appending"),
                            ("reopen", "DurableMempool, reopened")):
            resident, anonymous, wire, seconds, file_size, held = run_case(case, args.messages, args.size, store)
            print(f"{label:<34}{resident / 1e6:>14.1f}{anonymous / 1e6:>10.1f}{wire / 1e6:>10.1f}"
                  f"{resident / wire:>8.3f}{anonymous / wire:>12.3f}{seconds:>9.2f}"
                  f"{(f'{file_size / 1e6:.1f}' if file_size else '-'):>14}")
            breakdown.append((label, anonymous, wire, held))

    print("\nPer message held, bytes of the anonymous growth (objects by sys.getsizeof, each counted once)")
    print(f"{'case':<34}{'wire':>7}{'raw hdr':>8}{'id':>6}{'entry':>7}{'index':>7}{'expiry':>8}{'rest':>7}{'total':>7}")
    for label, anonymous, wire, held in breakdown:
        per = [n / args.messages for n in held]
        rest = anonymous / args.messages - wire / args.messages - sum(per)
        print(f"{label:<34}{wire / args.messages:>7.0f}" + "".join(f"{n:>{w}.1f}" for n, w in zip(per, (8, 6, 7, 7, 8)))
              + f"{rest:>7.1f}{anonymous / args.messages:>7.0f}")

    print(f"\nDurable append throughput (one message per submit, {args.per_submitter} per submitter)")
    print(f"{'submitters':>10}{'messages/s':>12}{'submits':>9}{'transactions':>14}{'submits/txn':>13}")
    for submitters in (1, args.submitters):
        per = args.per_submitter if submitters > 1 else max(args.per_submitter, 200)
        with tempfile.TemporaryDirectory(prefix="mempool-bench-") as tmp:
            rate, submits, transactions = trio.run(throughput, tmp, submitters, per, args.size)
        print(f"{submitters:>10}{rate:>12,.0f}{submits:>9}{transactions:>14}{submits / transactions:>13.1f}")


if __name__ == "__main__":
    main()
