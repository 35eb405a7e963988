"""The id windows without I/O: the rules of both sides, and a randomised conversation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniprotocols.sig_submission import (
    BODIES_BYTE_LIMIT,
    BYTES_IN_FLIGHT_PER_PEER,
    INGRESS_LIMIT,
    MAX_IDS_PER_REQUEST,
    MAX_UNACKNOWLEDGED_IDS,
    PROTOCOL_NUM,
    AckedTooManyIds,
    RequestBlocking,
    RequestedNothing,
    RequestedTooManyIds,
    RequestNonBlocking,
    SigSubmissionProtocolError,
)
from dmq.diffusion.sig_submission import MAX_BATCHES_IN_FLIGHT, SIZE_TOLERANCE, PullWindow, ServeWindow
from miniprotocols.sig_submission_v1 import SIG_SUBMISSION_V1, SigSubmissionV1State
from miniprotocols.sig_submission_v2 import SIG_SUBMISSION_V2, SigSubmissionV2State

from tests.miniprotocols.sig_submission.helpers import make_message, message_id


def test_policy_numbers_are_the_reference_ones():
    assert PROTOCOL_NUM == 11
    assert (MAX_IDS_PER_REQUEST, MAX_UNACKNOWLEDGED_IDS) == (33, 132)
    assert (BYTES_IN_FLIGHT_PER_PEER, MAX_BATCHES_IN_FLIGHT, SIZE_TOLERANCE) == (92400, 4, 32)
    assert (BODIES_BYTE_LIMIT, INGRESS_LIMIT) == (98000, 101640)


def test_state_limits_of_both_versions():
    def limits(spec):
        return {state: (s.byte_limit, s.time_limit) for state, s in spec.states.items() if s.byte_limit}

    assert limits(SIG_SUBMISSION_V2) == {
        SigSubmissionV2State.IDLE: (65535, None),
        SigSubmissionV2State.SIG_IDS_BLOCKING: (65535, 20.0),
        SigSubmissionV2State.SIG_IDS_NON_BLOCKING: (65535, 10.0),
        SigSubmissionV2State.SIGS: (98000, 10.0),
    }
    assert limits(SIG_SUBMISSION_V1) == {
        SigSubmissionV1State.INIT: (65535, None),
        SigSubmissionV1State.IDLE: (65535, None),
        SigSubmissionV1State.TX_IDS_BLOCKING: (65535, None),
        SigSubmissionV1State.TX_IDS_NON_BLOCKING: (65535, 10.0),
        SigSubmissionV1State.TXS: (98000, 10.0),
    }


# -- serve window ----------------------------------------------------------------

def entries(first, count, size=700):
    return [(i, bytes([i % 256]) * 32, size) for i in range(first, first + count)]


def test_serve_window_acknowledges_oldest_first_and_tracks_the_position():
    window = ServeWindow(2)
    window.on_request_ids(True, 0, 5)
    assert window.announce(entries(0, 5)) == tuple((bytes([i]) * 32, 700) for i in range(5))
    assert window.position == 4
    window.on_request_ids(False, 2, 3)
    assert window.unacknowledged == tuple(bytes([i]) * 32 for i in range(2, 5))
    with pytest.raises(ValueError, match="not after position"):
        window.announce(entries(4, 1))


def test_serve_window_checks_in_the_reference_order():
    window = ServeWindow(2)
    # ack too many is checked before anything else, even a zero request
    with pytest.raises(AckedTooManyIds):
        window.on_request_ids(True, 1, 0)
    # the window before "requested nothing"
    with pytest.raises(RequestedTooManyIds):
        window.on_request_ids(False, 0, 133)
    # "requested nothing" before "non-blocking with nothing left"
    with pytest.raises(RequestedNothing):
        window.on_request_ids(False, 0, 0)
    with pytest.raises(RequestNonBlocking):
        window.on_request_ids(False, 0, 1)
    window.on_request_ids(True, 0, 2)
    window.announce(entries(0, 2))
    with pytest.raises(RequestBlocking) as info:
        window.on_request_ids(True, 1, 1)
    assert info.value.remaining == 1
    # a refused request changes nothing
    assert len(window.unacknowledged) == 2


def test_serve_window_size_is_configurable_for_deployments():
    window = ServeWindow(1, window=10)
    with pytest.raises(RequestedTooManyIds) as info:
        window.on_request_ids(True, 0, 11)
    assert info.value.reference_name == "ProtocolErrorRequestedTooManyTxids"


# -- pull window -----------------------------------------------------------------

def want_all(announced):
    return [i for i, _ in announced]


def test_pulling_requests_within_33_and_the_window():
    window = PullWindow(2)
    assert window.blocking_request() == (0, 33)
    window.on_ids_reply(33, [(bytes([i]) * 32, 700) for i in range(33)], want_all)
    with pytest.raises(RuntimeError, match="blocking request"):
        window.blocking_request()
    batch = window.next_batch()
    assert len(batch.ids) == 33 and batch.announced_bytes == 33 * 700
    assert window.non_blocking_request() == (0, 33)
    assert window.non_blocking_request() == (0, 33)
    assert window.non_blocking_request() == (0, 33)
    assert window.non_blocking_request() is None  # 33 unacked + 99 asked = 132


def test_pulling_batches_respect_bytes_and_count_in_flight():
    window = PullWindow(2)
    window.blocking_request()
    window.on_ids_reply(33, [(bytes([i]) * 32, 2800) for i in range(33)], want_all)
    assert len(window.next_batch().ids) == 33  # 33 x 2800 = 92 400: exactly the budget
    assert not window.can_request_bodies()
    small = PullWindow(2, max_ids_per_request=4)
    small.blocking_request()
    small.on_ids_reply(4, [(bytes([i]) * 32, 10) for i in range(4)], want_all)
    for _ in range(3):
        small.non_blocking_request()
    small.on_ids_reply(4, [(bytes([i]) * 32, 10) for i in range(4, 8)], want_all)
    small.on_ids_reply(4, [(bytes([i]) * 32, 10) for i in range(8, 12)], want_all)
    small.on_ids_reply(4, [(bytes([i]) * 32, 10) for i in range(12, 16)], want_all)
    for _ in range(MAX_BATCHES_IN_FLIGHT):
        small.next_batch()
    assert not small.can_request_bodies()  # four batches in flight


def test_an_oversized_announcement_still_gets_fetched_alone():
    window = PullWindow(2)
    window.blocking_request()
    window.on_ids_reply(33, [(b"a" * 32, 200_000), (b"b" * 32, 700)], want_all)
    assert window.next_batch().ids == (b"a" * 32,)
    assert not window.can_request_bodies()


def test_pulling_acknowledges_in_announcement_order_only():
    messages = [make_message(n) for n in range(6)]
    ids = [message_id(m) for m in messages]
    window = PullWindow(2, max_ids_per_request=3)
    window.blocking_request()
    # the node holds ids[1]: not wanted, but it may only be acknowledged after ids[0]
    window.on_ids_reply(3, [(i, len(m)) for i, m in zip(ids[:3], messages)], lambda a: [ids[0], ids[2]])
    assert window.to_ack == 0 and window.claimed() == [ids[0], ids[2]]
    batch = window.next_batch()
    assert batch.ids == (ids[0], ids[2])
    outcome = window.on_bodies_reply(batch, [messages[2]])  # ids[0] omitted
    assert outcome.omitted == (ids[0],)
    assert outcome.ready == (messages[2],) and outcome.ready_ids == (ids[2],)
    assert window.to_ack == 3 and window.claimed() == []
    assert window.blocking_request() == (3, 3)


def test_a_blocking_request_behind_the_last_bodies_acknowledges_every_id_once():
    messages = [make_message(n) for n in range(4)]
    ids = [message_id(m) for m in messages]
    window = PullWindow(2, max_ids_per_request=3)
    window.blocking_request()
    window.on_ids_reply(3, [(i, len(m)) for i, m in zip(ids[:3], messages)], lambda a: [ids[0], ids[2]])
    batch = window.next_batch()
    # Every announced id, the two whose bodies were just asked for included, and a full request.
    assert window.blocking_request_ahead() == (3, 3)
    assert window.blocking_request_ahead() is None  # a request for ids is outstanding
    assert window.non_blocking_request() is None  # nothing is left unacknowledged at the peer
    outcome = window.on_bodies_reply(batch, [messages[0], messages[2]])
    assert outcome.ready == (messages[0], messages[2])  # handed over in announcement order, as before
    assert window.to_ack == 0 and window.claimed() == []  # settled, and not acknowledged a second time
    window.on_ids_reply(3, [(ids[3], len(messages[3]))], want_all)
    window.next_batch()
    assert window.blocking_request_ahead() == (1, 3)


def test_no_blocking_request_goes_ahead_while_bodies_remain_to_ask_for():
    messages = [make_message(n) for n in range(3)]
    window = PullWindow(2, max_bytes_in_flight=len(messages[0]))  # one body in flight at a time
    window.blocking_request()
    window.on_ids_reply(33, [(message_id(m), len(m)) for m in messages], want_all)
    first = window.next_batch()
    assert first.ids == (message_id(messages[0]),)
    assert window.blocking_request_ahead() is None  # two wanted bodies not asked for yet
    assert window.non_blocking_request() == (0, 33)
    window.on_bodies_reply(first, [messages[0]])
    window.on_ids_reply(33, [], want_all)
    second = window.next_batch()
    assert window.blocking_request_ahead() is None
    window.on_bodies_reply(second, [messages[1]])
    third = window.next_batch()
    assert window.blocking_request_ahead() == (3, 33)  # 2 settled and the one on its way
    assert window.on_bodies_reply(third, [messages[2]]).ready == (messages[2],) and window.to_ack == 0


def test_a_duplicate_announcement_is_fetched_once():
    raw = make_message(1)
    window = PullWindow(2)
    window.blocking_request()
    window.on_ids_reply(33, [(message_id(raw), len(raw)), (message_id(raw), len(raw))], want_all)
    batch = window.next_batch()
    assert batch.ids == (message_id(raw),)
    outcome = window.on_bodies_reply(batch, [raw, raw])
    assert outcome.ready == (raw,) and window.to_ack == 2


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_random_conversation_keeps_every_rule(data):
    """Both windows driven against each other the way the peers drive them.

    Whatever the node wants, whatever expires, whatever order the steps take: the
    serving never raises, every wanted and unexpired message is delivered once, in
    mempool order, and every claim is settled.
    """
    total = data.draw(st.integers(0, 300), label="messages")
    messages = [make_message(n, body_size=data.draw(st.integers(90, 400))) for n in range(total)]
    held = {message_id(m) for m in messages if data.draw(st.booleans(), label="held")} if total < 40 else set()
    expiring = set(data.draw(st.sets(st.sampled_from([message_id(m) for m in messages]), max_size=10))) if total else set()
    by_id = {message_id(m): m for m in messages}
    serving = ServeWindow(2)
    pulling = PullWindow(2, max_ids_per_request=data.draw(st.integers(1, 33), label="ids per request"))
    delivered: list[bytes] = []
    outstanding: list[tuple[str, object]] = []
    index = 0  # messages 0..index-1 have been announced by the source

    def serve_ids(blocking, ack, req):
        nonlocal index
        serving.on_request_ids(blocking, ack, req)
        chosen = [(i, message_id(messages[i]), len(messages[i])) for i in range(index, min(total, index + req))]
        index += len(chosen)
        return serving.announce(chosen)

    ack, req = pulling.blocking_request()
    pulling.on_ids_reply(req, serve_ids(True, ack, req), lambda a: [i for i, _ in a if i not in held])
    for _ in range(2000):
        if not outstanding and not pulling.can_request_bodies():
            if index >= total:
                break
            ack, req = pulling.blocking_request()
            pulling.on_ids_reply(req, serve_ids(True, ack, req), lambda a: [i for i, _ in a if i not in held])
            continue
        if pulling.can_request_bodies() and (not outstanding or data.draw(st.booleans(), label="send first")):
            batch = pulling.next_batch()
            serving.on_request_bodies(batch.ids)
            outstanding.append(("bodies", (batch, [by_id[i] for i in batch.ids if i not in expiring])))
            ahead = pulling.blocking_request_ahead() if data.draw(st.booleans(), label="blocking ahead") else None
            if ahead is not None:  # answered at once here; an empty answer is the peer's "no ids"
                outstanding.append(("ids", (ahead[1], serve_ids(True, *ahead))))
                continue
            more = pulling.non_blocking_request()
            if more is not None:
                outstanding.append(("ids", (more[1], serve_ids(False, *more))))
            continue
        kind, detail = outstanding.pop(0)
        if kind == "ids":
            req, announced = detail
            pulling.on_ids_reply(req, announced, lambda a: [i for i, _ in a if i not in held])
        else:
            batch, bodies = detail
            delivered.extend(pulling.on_bodies_reply(batch, bodies).ready)
    expected = [m for m in messages if message_id(m) not in held | expiring]
    assert delivered == expected
    assert pulling.claimed() == [] and pulling.bytes_in_flight == 0 and pulling.batches_in_flight == 0


def test_every_error_is_a_protocol_error_with_both_names():
    for version, name in ((1, "ProtocolErrorAckedTooManyTxids"), (2, "ProtocolErrorAckedTooManySigIds")):
        error = AckedTooManyIds(version, 3, 1)
        assert isinstance(error, SigSubmissionProtocolError) and error.reference_name == name
        assert error.protocol == f"sig-submission-v{version}" and error.state == "StIdle"
    with pytest.raises(ValueError):
        AckedTooManyIds(3, 1, 0)
