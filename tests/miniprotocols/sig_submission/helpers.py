"""Test doubles of the node's side of sig submission, and DMQ-shaped messages.

The source and the sink stand in for the node's mempool and validation pipeline (the
components under test are the protocol peers): a list-backed mempool with expiry
switches, and a sink that records every batch and checks the claim/release contract.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import cbor2
import trio
import trio.testing

from dmq.diffusion.sig_submission import DisconnectPeer
from miniprotocols.sig_submission import INGRESS_LIMIT, PROTOCOL_NUM, Side
from ouroboros_mux import Bearer, Mode, Mux, MuxChannel, Provenance


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def make_message(n: int, body_size: int = 100, *, kes_period: int = 5, expires_at: int = 1_800_000_000) -> bytes:
    """A message with the DMQ shape and a correct id: ``[id, [body, kes, exp], sig, opcert, vk]``."""
    body = n.to_bytes(4, "big") * (body_size // 4) + bytes(body_size % 4)
    payload = cbor2.dumps([body, kes_period, expires_at])
    message_id = hashlib.blake2b(payload, digest_size=32).digest()
    opcert = cbor2.dumps([bytes(32), n, 0, bytes(64)])
    return b"\x85" + cbor2.dumps(message_id) + payload + cbor2.dumps(bytes(448)) + opcert + cbor2.dumps(bytes(32))


def message_id(raw: bytes) -> bytes:
    return raw[3:35]


class ListSigSource:
    """An append-only mempool over a list; messages can be expired by id at any moment.

    ``expire_when_announced`` ids expire right after ``ids_after`` hands them out, so the
    serving announces them but no longer has them when their bodies are requested.
    """

    def __init__(self, messages: list[bytes] | None = None, *, first_index: int = 0) -> None:
        self.entries: list[tuple[int, bytes, bytes]] = []
        self.expired: set[bytes] = set()
        self.expire_when_announced: set[bytes] = set()
        self._next_index = first_index
        self._grown = trio.Event()
        self._on_publish: list = []
        self.lookups: list[bytes] = []
        for raw in messages or []:
            self.append(raw)

    def append(self, raw: bytes) -> None:
        self.entries.append((self._next_index, message_id(raw), raw))
        self._next_index += 1
        self._grown.set()
        self._grown = trio.Event()
        callbacks, self._on_publish = self._on_publish, []
        for callback in callbacks:
            callback()

    def call_on_publish(self, callback) -> None:
        """As the node's mempool: ``callback`` once, at the next append."""
        self._on_publish.append(callback)

    def expire(self, *ids: bytes) -> None:
        self.expired.update(ids)

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        out = []
        for index, mid, raw in self.entries:
            if index > position and mid not in self.expired:
                out.append((index, mid, len(raw)))
                if len(out) == limit:
                    break
        self.expired.update(mid for _, mid, _ in out if mid in self.expire_when_announced)
        return out

    async def wait_for_ids_after(self, position: int) -> None:
        while not any(index > position and mid not in self.expired for index, mid, _ in self.entries):
            await self._grown.wait()

    def lookup(self, mid: bytes) -> bytes | None:
        self.lookups.append(mid)
        if mid in self.expired:
            return None
        for _, known, raw in self.entries:
            if known == mid:
                return raw
        return None


class RecordingSink:
    """Accepts everything it has not seen; checks that every claim is released exactly once.

    ``now``: it also takes batches without waiting (``SigSink.accept_now``), as the node's
    ingress does; ``awaited`` and ``taken_now`` count the batches taken each way.
    """

    def __init__(self, *, holds: set[bytes] | None = None, disconnect_on: set[bytes] | None = None,
                 now: bool = False) -> None:
        self.now = now
        self.awaited = 0
        self.taken_now = 0
        self.batches: list[list[bytes]] = []
        self.holds = set(holds or ())
        self.disconnect_on = set(disconnect_on or ())
        self.claims: Counter[bytes] = Counter()
        self.released: list[bytes] = []
        self.announced: list[tuple[bytes, int]] = []
        self.changed = trio.Event()

    @property
    def accepted(self) -> list[bytes]:
        return [raw for batch in self.batches for raw in batch]

    def wanted(self, announced):
        self.announced.extend(announced)
        chosen = [i for i, _ in announced if i not in self.holds and not self.claims[i]]
        for i in chosen:
            self.claims[i] += 1
        return chosen

    async def accept(self, raw_messages: list[bytes]) -> None:
        self.awaited += 1
        self._take(raw_messages)

    def accept_now(self, raw_messages: list[bytes]) -> bool:
        if not self.now:
            return False
        self.taken_now += 1
        self._take(raw_messages)
        return True

    def _take(self, raw_messages: list[bytes]) -> None:
        for raw in raw_messages:
            assert self.claims[message_id(raw)] == 1, "accepted a message that was not claimed"
        self.batches.append(list(raw_messages))
        self.holds.update(message_id(raw) for raw in raw_messages)
        self.changed.set()
        self.changed = trio.Event()
        bad = [raw for raw in raw_messages if message_id(raw) in self.disconnect_on]
        if bad:
            raise DisconnectPeer(f"InvalidSigId for {message_id(bad[0]).hex()}")

    def release(self, ids) -> None:
        for i in ids:
            assert self.claims[i] == 1, f"released {i.hex()} without a claim"
            del self.claims[i]
            self.released.append(i)

    async def wait_for(self, count: int) -> None:
        while len(self.accepted) < count:
            await self.changed.wait()

    @property
    def outstanding_claims(self) -> list[bytes]:
        return [i for i, n in self.claims.items() if n]


def mux_channel_pair(dialect, nursery: trio.Nursery) -> tuple[MuxChannel, MuxChannel]:
    """The pulling and the serving peer's channels through two real muxes over an in-memory byte stream.

    The muxes run in ``nursery``; each peer's instance is the one the version gives its job
    (docs/protocol/node-to-node.md 9.1), so over these channels both peers run from their mux readers.
    """
    pulling_stream, serving_stream = trio.testing.memory_stream_pair()
    pulling_mux = Mux(Bearer(pulling_stream), Provenance.OUTBOUND)
    serving_mux = Mux(Bearer(serving_stream), Provenance.INBOUND)
    initiates = dialect.initiator_side is Side.PULLING
    pulling = pulling_mux.register(PROTOCOL_NUM, Mode.INITIATOR if initiates else Mode.RESPONDER, INGRESS_LIMIT)
    serving = serving_mux.register(PROTOCOL_NUM, Mode.RESPONDER if initiates else Mode.INITIATOR, INGRESS_LIMIT)
    nursery.start_soon(pulling_mux.run)
    nursery.start_soon(serving_mux.run)
    return pulling, serving


def _leaves(error: BaseException):
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


async def run_together(*tasks) -> None:
    """Run the tasks in one nursery; a single failure surfaces as itself, not as a group."""
    try:
        async with trio.open_nursery() as nursery:
            for task in tasks:
                nursery.start_soon(task)
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1:
            raise leaves[0] from None
        raise
