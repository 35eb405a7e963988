"""A peer's batch admitted without awaiting (``Ingress.submit_from_peer_now``) against the general path.

The pulling peer hands batches to the ingress from the mux reader when the ingress can take
them without waiting (relayed messages wait for no disk commit: docs/architecture.md
principle 5). That path must decide, store, trace and persist exactly what the awaited path
(``Ingress.submit_from_peer``, through ``admit``) does, on a real validator, real signed
messages and a real LMDB mempool; and stages that must await are never taken that way.
"""

from __future__ import annotations

import dataclasses

import pytest
import trio

from dmq.codec import encode_message
from dmq.ingress import Ingress, IngressStages
from dmq.mempool import DurableMempool, open_durable_mempool
from dmq.trace import MessageAccepted, MessageRejected, Tracer

from tests.dmq.validation.support import NOW, flip_bit, pool, validator_for, with_message_id

P, Q, R, S, T, U = (pool(i) for i in range(1, 7))


def _batches() -> list[list[bytes]]:
    """Accepted, duplicate (of an earlier batch and within one), too frequent, expired, bad id, bad KES signature."""
    p1, r1, t1 = P.message(nonce=1), R.message(nonce=1), T.message(nonce=1)
    bad_signature = encode_message(t1.signed_bytes, flip_bit(t1.kes_signature, 5), t1.opcert, t1.cold_vk,
                                   message_id=t1.message_id)
    return [
        [p1.raw, Q.message(nonce=1).raw],
        [p1.raw, P.message(nonce=2).raw, Q.message(nonce=3, expires_at=int(NOW) - 1).raw],
        [r1.raw, r1.raw, with_message_id(S.message(nonce=1), bytes(32)).raw],
        [bad_signature, U.message(nonce=1).raw],
    ]


def _seen(event) -> tuple:
    """A trace event without its clock and timing fields."""
    fields = dataclasses.asdict(event)
    fields.pop("at", None)
    fields.pop("verify_ns", None)
    return type(event).__name__, tuple(sorted(fields.items()))


async def _run(tmp_path, now: bool):
    validator, clock = validator_for(P, Q, R, S, T, U)
    events: list = []
    tracer = Tracer(clock.now)
    tracer.add_sink(events.append)
    verdicts = []
    async with open_durable_mempool(tmp_path, clock) as mempool:
        ingress = Ingress(mempool, validator, tracer)
        assert ingress.relays_now
        for batch in _batches():
            if now:
                verdict = ingress.submit_from_peer_now(batch, "peer-1")
            else:
                verdict = await ingress.submit_from_peer(batch, "peer-1")
            verdicts.append(([None if o.error is None else o.error.show() for o in verdict.outcomes],
                             None if verdict.disconnect is None else verdict.disconnect.show()))
        held = [(e.index, e.message_id, bytes(e.raw)) for e in mempool]
        state = validator.state.updates(p.pool_id for p in (P, Q, R, S, T, U))
    reopened = DurableMempool(tmp_path, clock)
    try:
        stored = [(e.index, e.message_id, bytes(e.raw)) for e in reopened]
        stored_state = reopened.load_pool_state()
    finally:
        reopened.close()
    return verdicts, held, [_seen(e) for e in events], state, stored, stored_state


async def test_the_reader_path_decides_stores_traces_and_persists_as_the_awaited_path(tmp_path):
    awaited = await _run(tmp_path / "awaited", now=False)
    at_once = await _run(tmp_path / "now", now=True)
    assert at_once == awaited
    verdicts, held, events, _, stored, _ = at_once
    # The batches exercise what they claim: accepted messages, refusals of several kinds, disconnects.
    shown = [[None if error is None else error.split(" ")[0] for error in errors] for errors, _ in verdicts]
    assert shown == [[None, None], ["SigDuplicate", "SigTooFrequent", "SigExpired"],
                     [None, "SigDuplicate", "InvalidSigId"], ["InvalidKESSignature", None]]
    assert verdicts[0][1] is None and all(disconnect is not None for _, disconnect in verdicts[1:])
    assert {name for name, _ in events} == {MessageAccepted.__name__, MessageRejected.__name__}
    assert stored == held and len(held) == 4


async def test_the_reader_path_keeps_the_received_bytes_object(tmp_path):
    validator, clock = validator_for(P)
    raw = P.message(nonce=1).raw
    async with open_durable_mempool(tmp_path, clock) as mempool:
        ingress = Ingress(mempool, validator, Tracer(clock.now))
        verdict = ingress.submit_from_peer_now([raw], "peer-1")
        assert verdict.accepted == 1 and verdict.disconnect is None
        (entry,) = list(mempool)
        assert entry.raw is raw  # visible at once, the group commit still to come
        assert mempool.ids_after(-1, 10) == [(entry.index, entry.message_id, len(raw))]


async def test_the_reader_path_does_not_yield(tmp_path):
    """Nothing else runs while a batch is admitted at once: it is one step of the reader, and
    its messages are held and visible when it returns."""
    validator, clock = validator_for(P, Q)
    ran = []
    async with open_durable_mempool(tmp_path, clock) as mempool:
        ingress = Ingress(mempool, validator, Tracer(clock.now))
        messages = [P.message(nonce=1).raw, Q.message(nonce=1).raw]

        async def other() -> None:
            ran.append("other")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)  # scheduled: it runs at this task's next checkpoint
            verdict = ingress.submit_from_peer_now(messages, "peer-1")
            assert ran == [] and verdict.accepted == 2 and len(mempool) == 2
        assert ran == ["other"]


class _OwnCommit(IngressStages):
    async def commit(self, outcomes, origin):
        await trio.lowlevel.checkpoint()
        return await super().commit(outcomes, origin)


class _Rounds(IngressStages):
    round_size = 1


class _Locked(IngressStages):
    def __init__(self, mempool, validator) -> None:
        super().__init__(mempool, validator)
        self.lock = trio.Lock()


@pytest.mark.parametrize("stages", [_OwnCommit, _Rounds, _Locked])
async def test_stages_that_must_await_are_never_admitted_at_once(tmp_path, stages):
    validator, clock = validator_for(P)
    events: list = []
    tracer = Tracer(clock.now)
    tracer.add_sink(events.append)
    async with open_durable_mempool(tmp_path, clock) as mempool:
        ingress = Ingress(mempool, validator, tracer, stages=stages(mempool, validator))
        assert not ingress.relays_now
        assert ingress.submit_from_peer_now([P.message(nonce=1).raw], "peer-1") is None
        assert len(mempool) == 0 and events == [] and len(validator.state) == 0
        verdict = await ingress.submit_from_peer([P.message(nonce=1).raw], "peer-1")
        assert verdict.accepted == 1 and len(mempool) == 1
