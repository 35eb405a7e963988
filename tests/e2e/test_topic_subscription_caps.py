"""What a local client can make a ``dmq-node`` process hold (``TopicSubscriptionLimits``).

A client that tries to create 6,000 durable subscriptions (each taking a queue of every
event) gets as many as the caps allow, and every other attempt is refused with one line naming
the cap; then 11 events of 1 KB are published, and the database stays within its bound:
the share of the disk configured, and far below the 24 MiB per event that a copy per queue
cost.
"""

from __future__ import annotations

import os
import time

import pytest
import trio

from dmq.cli import tool
from clients.topics import Durable, TopicRequestRefused, open_topic_connection

from .topic_node import OPEN_BUDGETS, TOPIC_MAGIC, topic_nodes  # noqa: F401 (a fixture)

pytestmark = pytest.mark.trio

RAW = 0
ATTEMPTS = 6000
DURABLE = 1024
PER_CONNECTION = 16
#: The database's bound in this test (the node gets it as a share of its filesystem).
BOUND = 64 << 20


def _share(directory) -> float:
    st = os.statvfs(directory)
    return BOUND / (st.f_blocks * st.f_frsize)


def _raw_body(n: int) -> bytes:
    """A raw body of about 1 KB (raw bodies never start with the adapter tags' ``d9``)."""
    return b"\x03\xe8" + b"%08d" % n + b"r" * 990


async def test_6000_durable_subscriptions_attempted_and_the_database_stays_within_its_bound(
        topic_nodes, tmp_path, capsys):
    # The events come from one pool within seconds: the caps are the subject, not its budget.
    node = topic_nodes(carried=["raw", "blocklace"], TopicSubscriptionLimits={
        "Durable": DURABLE, "DurablePerConnection": PER_CONNECTION, "DiskShare": _share(tmp_path)}, **OPEN_BUDGETS)
    made, refusals = 0, set()
    started = time.monotonic()
    attempt = 0
    while attempt < ATTEMPTS:
        async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
            for _ in range(PER_CONNECTION + 1):
                try:
                    await conn.ask(conn.topics.subscribe([{0: RAW}], 0, Durable(b"client-%d" % attempt)))
                    made += 1
                except TopicRequestRefused as refused:
                    refusals.add(str(refused))
                attempt += 1
    elapsed = time.monotonic() - started
    assert made == DURABLE
    assert refusals == {"refused: limit_reached: durable subscriptions per connection (16) (code 21)",
                        "refused: limit_reached: durable subscriptions in total (1024) (code 21)"}
    assert {e["limit"] for e in node.trace_events("TopicSubscriptionRefused")} == {
        "durable subscriptions per connection", "durable subscriptions in total"}
    # The operator's command says the same in one line.
    command = ["topic", "subscribe", "--socket", str(node.socket_path), "--magic", str(TOPIC_MAGIC),
               "--adapter", "raw", "--durable", "one-more", "--non-blocking"]
    assert await trio.to_thread.run_sync(tool.run, command) == 1
    err = capsys.readouterr().err.strip()
    assert err == "dmq topic: refused: limit_reached: durable subscriptions in total (1024) (code 21)", err

    data = node.workdir / "db" / "data.mdb"
    before = data.stat().st_size
    async with open_topic_connection(node.socket_path, TOPIC_MAGIC) as conn:
        for n in range(11):
            await conn.ask(conn.topics.publish(_raw_body(n)))
    after = data.stat().st_size
    per_event = (after - before) / 11
    print(f"{made} durable subscriptions of {ATTEMPTS} attempts in {elapsed:.1f} s; "
          f"database {before / 2**20:.1f} MiB, then {after / 2**20:.1f} MiB after 11 events of 1 KB "
          f"({per_event / 1024:.0f} KiB per event)")
    assert after <= BOUND
    # One copy of the event and a few hundred bytes per queue (its record, the subscription's
    # record rewritten, LMDB's page slack), not a copy and a page (4 KiB) per queue: 414 KiB per
    # event when first run, 4.5 MiB with a copy per queue.
    assert per_event < DURABLE * 1024, per_event
    node.check_running()
