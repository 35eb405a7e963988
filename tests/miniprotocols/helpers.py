"""Shared pieces of the mini-protocol tests: raw CBOR strategies and a message source."""

from __future__ import annotations

import cbor2
import trio
from hypothesis import strategies as st

from miniprotocols.local_msg_notification import MAX_MESSAGES_PER_REPLY

#: Arbitrary CBOR values, standing in for DMQ messages (the protocols treat them as opaque).
cbor_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64 - 1) | st.binary(max_size=40) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
#: Their encodings: each one complete CBOR item.
raw_messages = cbor_values.map(cbor2.dumps)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


class ListSource:
    """A per-client cursor over an append-only log, as the node's mempool provides one.

    ``next_batch`` hands out up to ``limit`` messages after the cursor and moves the cursor
    to the last one handed out; a blocking call waits for at least one.
    """

    def __init__(self, messages: list[bytes] | None = None) -> None:
        self.log: list[bytes] = list(messages or [])
        self.cursor = 0
        self._grown = trio.Event()
        self.calls: list[tuple[bool, int]] = []

    def append(self, raw: bytes) -> None:
        self.log.append(raw)
        self._grown.set()
        self._grown = trio.Event()

    async def next_batch(self, blocking: bool, limit: int) -> tuple[list[bytes], bool]:
        self.calls.append((blocking, limit))
        while blocking and self.cursor >= len(self.log):
            await self._grown.wait()
        batch = self.log[self.cursor:self.cursor + min(limit, MAX_MESSAGES_PER_REPLY)]
        self.cursor += len(batch)
        return batch, self.cursor < len(self.log)
