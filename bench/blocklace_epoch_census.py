"""What each Blocklace epoch of a topic cost, read from one node's database.

For every topic the node holds and every final epoch F, in that node's view: when F became
final, the blocks whose ``epoch`` field is F - 1 by payload (Event, Ack, Epoch proposal and
acknowledgement, advertisement), how many Acks arrived while F was the latest final epoch
(the Acks that gather F's certificate, docs/topics-design.md 5.7, when no client makes Ack
blocks) and from how many pools, and the time from F's finality to the first block of
epoch F held (when the topic could change epoch again). Blocks pruned already are not
counted (the node keeps the current and previous epoch, 5.8).

Usage: ``.venv/bin/python bench/blocklace_epoch_census.py NODE_DATABASE_DIRECTORY``; the
directory of a node that is stopped, or a copy (``lmdb`` ``Environment.copy``) of a live one.
"""

from __future__ import annotations

import struct
import sys
from collections import Counter, defaultdict
from pathlib import Path

import lmdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dmq.codec import decode_message  # noqa: E402
from topics import cbor  # noqa: E402
from topics.blocklace.codec import ACK, AD, EPOCH, EVENT, decode_body  # noqa: E402

_NAMES = {EVENT: "event", ACK: "ack", AD: "ad"}


def census(directory: Path) -> list[str]:
    """The report's lines."""
    env = lmdb.open(str(directory), readonly=True, lock=False, max_dbs=64, subdir=True)
    try:
        with env.begin() as txn:
            rows = [cbor.decode(v) for _, v in txn.cursor(db=env.open_db(b"blocklace/block", txn=txn))]
            finals = [(k[:32], struct.unpack(">Q", k[32:])[0], cbor.decode(v))
                      for k, v in txn.cursor(db=env.open_db(b"blocklace/epoch", txn=txn))]
    finally:
        env.close()
    blocks = defaultdict(list)               # topic -> (arrival, epoch field, kind, creator)
    for _order, raw, arrival, _solicited in rows:
        message = decode_message(raw)
        _, block = decode_body(message.body)
        kind = _NAMES.get(block.payload.type)
        if block.payload.type == EPOCH:
            kind = "proposal" if block.payload.epoch.is_proposal else "acknowledgement"
        blocks[block.topic].append((arrival, block.epoch, kind, message.pool_id))
    lines = []
    for topic in sorted(blocks):
        held = blocks[topic]
        final_at = {epoch: final_time for t, epoch, (_, final_time) in finals if t == topic}
        lines.append(f"topic {topic.hex()[:16]}: {len(held)} blocks held, final epoch {max(final_at, default=0)}")
        lines.append("  F  final(s)  next-epoch block after  blocks of epoch F-1 by kind  acks while F is final (pools)")
        for epoch in sorted(final_at):
            at = final_at[epoch]
            kinds = Counter(kind for _, e, kind, _ in held if e == epoch - 1)
            until = min((t for e, t in final_at.items() if e > epoch), default=None)
            gathering = [creator for arrival, e, kind, creator in held
                         if kind == "ack" and arrival >= at and (until is None or arrival < until)]
            firsts = [arrival for arrival, e, _, _ in held if e >= epoch]
            after = f"{min(firsts) - at} s" if firsts else "none"
            by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            pools = len(set(gathering))
            lines.append(f"  {epoch:<2} {at:>9}  {after:>22}  {by_kind:<28}  {len(gathering)} ({pools})")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: blocklace_epoch_census.py NODE_DATABASE_DIRECTORY", file=sys.stderr)
        return 2
    print("\n".join(census(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
