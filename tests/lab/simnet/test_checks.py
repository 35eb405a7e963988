"""The simulation's shared verdicts: each distinct input checked once, the same answer for every node."""

from __future__ import annotations

from dataclasses import replace

from dmq.opcert import verify_opcert
from lab.simnet.checks import SharedBytes, SharedOpcertChecks
from lab.simnet.workload import make_pools


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


def test_equal_received_bytes_are_kept_as_the_first_copy_and_different_bytes_apart():
    shared = SharedBytes()
    first = bytes(range(200))
    again = bytes(bytearray(first))  # the same content, received by another node: another object
    other = bytes(reversed(first))
    assert again is not first
    assert shared(first) is first
    assert shared(again) is first
    assert shared(other) is other
    assert shared.stats() == {"distinct": 2, "interned": 3}
