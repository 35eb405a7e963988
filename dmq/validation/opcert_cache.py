"""A bounded LRU of operational certificates whose cold signature has been verified.

Every message of a pool carries the same opcert until the operator rotates KES keys, and a
full validation costs two Ed25519 verifications (cold signature of the opcert, then the
innermost KES signature). Remembering the opcerts that verified makes a pool's later
messages pay for the KES verification only. The key is the cold key together with every
opcert field, so any change to the certificate or to the key misses the cache and is
verified afresh. Failures are never remembered: a forged opcert costs its sender a full
verification each time, and cannot evict anything on its own.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from dmq.message import OperationalCertificate

__all__ = ["OpcertCache", "OpcertVerifier", "DEFAULT_OPCERT_CACHE_SIZE"]

#: Mainnet has about 3 000 registered pools; one entry each, with room for a rotation.
DEFAULT_OPCERT_CACHE_SIZE = 8192

OpcertVerifier = Callable[[OperationalCertificate, bytes], bool]


class OpcertCache:
    """``verify(opcert, cold_vk)`` with memory of past successes."""

    __slots__ = ("_verify", "_capacity", "_entries", "hits", "misses")

    def __init__(self, verify: OpcertVerifier, capacity: int = DEFAULT_OPCERT_CACHE_SIZE) -> None:
        if capacity < 0:
            raise ValueError(f"opcert cache capacity must be >= 0, got {capacity}")
        self._verify = verify
        self._capacity = capacity
        self._entries: OrderedDict[tuple, None] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(opcert: OperationalCertificate, cold_vk: bytes) -> tuple:
        return (cold_vk, opcert.hot_vk, opcert.issue_number, opcert.start_kes_period, opcert.cold_signature)

    def __contains__(self, item: tuple[OperationalCertificate, bytes]) -> bool:
        opcert, cold_vk = item
        return self.key(opcert, cold_vk) in self._entries

    def verify(self, opcert: OperationalCertificate, cold_vk: bytes) -> bool:
        key = (cold_vk, opcert.hot_vk, opcert.issue_number, opcert.start_kes_period, opcert.cold_signature)
        entries = self._entries
        if key in entries:
            entries.move_to_end(key)
            self.hits += 1
            return True
        self.misses += 1
        if not self._verify(opcert, cold_vk):
            return False
        if self._capacity:
            entries[key] = None
            if len(entries) > self._capacity:
                entries.popitem(last=False)
        return True

    def clear(self) -> None:
        self._entries.clear()
