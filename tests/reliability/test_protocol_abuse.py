"""Protocol abuse at a running node: only the abusive connection ends, in time, and honest
clients are served during and after.

Each violation is sent in raw bytes on its own connection while a Mithril-style signer
publishes every 100 ms, an aggregator keeps a blocking request and peer B keeps its link
(``abuse.py``). The per-message sig-submission violations of both versions (unrequested or
excess ids, oversized replies, bodies never announced, ...) are in
``tests/dmq/diffusion/test_sig_submission_at_the_node.py``; the mux's own reaction to each
fatal error in ``tests/ouroboros_mux/test_mux_fatal.py`` and to random bytes in
``tests/ouroboros_mux/test_mux_robustness.py``; handshake time limits on a virtual clock in
``tests/handshake/test_driver.py``. Here they meet the whole node, in real time.
"""

from __future__ import annotations

import pytest

from .abuse import IMMEDIATE, TIMED, abuse_while_serving
from .world import start_world


async def abuse_and_check(nursery, tmp_path, abuses, *, concurrently: bool):
    world = await start_world(nursery, tmp_path, MinSigDelay="0")
    results, traffic = await abuse_while_serving(world, abuses, concurrently=concurrently)
    late = [r for r in results if not r.in_time]
    assert not late, [(r.abuse.name, r.closed_after, r.error) for r in late]
    assert not traffic.failures, traffic.failures
    assert len(traffic.latencies) >= 3 and max(traffic.latencies) < 10.0, traffic.latencies  # served, not timed
    await world.assert_only_honest_messages_everywhere()
    return results


async def test_each_violation_ends_only_its_connection_at_once(nursery, tmp_path):
    results = await abuse_and_check(nursery, tmp_path, IMMEDIATE, concurrently=False)
    assert len(results) == len(IMMEDIATE)


@pytest.mark.slow
async def test_stalls_and_slow_readers_are_cut_at_the_reference_time_limits(nursery, tmp_path):
    results = await abuse_and_check(nursery, tmp_path, TIMED, concurrently=True)
    assert len(results) == len(TIMED)
