"""The simulation's shared verdicts and decodes: each distinct input checked or decoded once, the same
answer for every node."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dmq.codec import MessageDecodeError, decode_message
from dmq.ingress import Ingress
from dmq.mempool import Mempool
from dmq.opcert import verify_opcert
from dmq.trace import Tracer
from lab.simnet.checks import SharedDecodes, SharedOpcertChecks, SharedStakeFiles
from lab.simnet.workload import make_pools, write_stake_file
from tests.dmq.validation.support import pool, validator_for


def test_an_opcert_verdict_is_computed_once_per_certificate_and_cold_key_and_a_forgery_stays_refused():
    first, second = (pool.credentials for pool in make_pools(2, 0))
    signature = bytearray(first.opcert.cold_signature)
    signature[0] ^= 1
    forged = replace(first.opcert, cold_signature=bytes(signature))
    shared = SharedOpcertChecks()
    for _ in range(3):  # three nodes see the first pool's certificate
        assert shared(first.opcert, first.cold_vk) is True
    assert shared(second.opcert, second.cold_vk) is True
    for _ in range(2):
        assert shared(forged, first.cold_vk) is False
    # the first pool's certificate under another pool's cold key is another input, and refused
    assert shared(first.opcert, second.cold_vk) is False
    assert verify_opcert(forged, first.cold_vk) is False
    assert shared.stats() == {"verified": 4, "remembered": 3}


def test_equal_received_bytes_are_decoded_once_and_different_bytes_apart():
    shared = SharedDecodes()
    first, second = (message.raw for message in (pool(1).message(), pool(2).message()))
    again = bytes(bytearray(first))  # the same content, received by another node: another object
    assert again is not first
    decoded = shared(first, decode_message)
    assert shared(again, decode_message) is decoded
    assert decoded.raw is first and decoded == decode_message(again)
    assert shared(second, decode_message).raw is second
    assert shared.stats() == {"distinct": 2, "decoded": 3}


def test_bytes_that_do_not_decode_raise_at_every_node_and_are_not_kept():
    shared = SharedDecodes()
    for _ in range(2):
        with pytest.raises(MessageDecodeError):
            shared(b"\x85not a message", decode_message)
    assert shared.stats() == {"distinct": 0, "decoded": 2}


def test_a_stake_file_is_read_once_for_every_node_and_again_when_it_changes(tmp_path):
    shared = SharedStakeFiles()
    path = write_stake_file(tmp_path / "stake.json", make_pools(3, 0), 0)
    first = shared(path)
    assert shared(str(path)) is first and shared.reads == 1
    assert len(first.pools) == 3
    write_stake_file(path, make_pools(5, 0), 0)   # rewritten: another size
    again = shared(path)
    assert again is not first and len(again.pools) == 5 and shared.reads == 2


def _node(**hook) -> Ingress:
    validator, clock = validator_for(pool(1), min_sig_delay=0)
    return Ingress(Mempool(clock), validator, Tracer(), **hook)


async def test_nodes_given_equal_bytes_hold_one_decoded_message_and_a_node_without_the_hook_its_own():
    shared = SharedDecodes()
    sharing = [_node(decode_received=shared), _node(decode_received=shared)]
    alone = _node()
    sent = pool(1).message()
    held = []
    for node in [*sharing, alone]:
        received = bytes(bytearray(sent.raw))  # each node's own copy off its links
        verdict = await node.submit_from_peer([received], peer="10.0.0.9:3001")
        assert verdict.accepted == 1 and verdict.disconnect is None
        held.append((verdict.outcomes[0].message, node.mempool.get(sent.message_id)))
    (first, first_entry), (second, second_entry), (own, own_entry) = held
    assert second is first                      # one decode for the two nodes that share
    assert second_entry is not first_entry      # each node's own entry in its own log...
    assert second_entry.raw is first_entry.raw is first.raw            # ...of the same bytes
    assert second_entry.message_id is first_entry.message_id is first.message_id
    assert own is not first and own == first    # the node on its own decoded its own copy
    assert own_entry.raw is not first.raw and own_entry.raw == first.raw
    assert shared.stats() == {"distinct": 1, "decoded": 2}
