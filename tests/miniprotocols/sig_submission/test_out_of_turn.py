"""Every message in every state from either side, for sig submission V1, V2 and peer sharing.

The allowed moves are written here from the reference protocol types
(``SigSubmissionV2/Type.hs``, ``TxSubmission2/Type.hs``, ``PeerSharing/Type.hs``),
independently of the specs' tables: a wrong table entry fails this test.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from miniprotocols import peer_sharing as ps
from miniprotocols import sig_submission_v1 as v1
from miniprotocols import sig_submission_v2 as v2
from miniprotocols.framework import Driver, ProtocolSpec, ProtocolViolation, Role
from ouroboros_mux.channel import ChannelClosed, memory_channel_pair

from .helpers import make_message

C, S = Role.CLIENT, Role.SERVER
ID = bytes(32)
MESSAGE = make_message(7)
PEER = ps.PeerAddress.of("127.0.0.1", 3141)


@dataclass
class Case:
    spec: ProtocolSpec
    samples: list
    paths: dict  # state -> [(sender, message), ...] from the initial state
    allowed: dict  # (state, sender) -> set of message classes


S2 = v2.SigSubmissionV2State
S1 = v1.SigSubmissionV1State
SP = ps.PeerSharingState

CASES = {
    # V2: the client is the pulling peer (pulling) side.
    "v2": Case(
        v2.SIG_SUBMISSION_V2,
        [v2.MsgRequestSigIds(True, 0, 3), v2.MsgRequestSigIds(False, 1, 3), v2.MsgReplySigIds(((ID, 700),)),
         v2.MsgReplyNoSigIds(), v2.MsgRequestSigs((ID,)), v2.MsgReplySigs((MESSAGE,)), v2.MsgDone()],
        {
            S2.IDLE: [],
            S2.SIG_IDS_BLOCKING: [(C, v2.MsgRequestSigIds(True, 0, 3))],
            S2.SIG_IDS_NON_BLOCKING: [(C, v2.MsgRequestSigIds(False, 1, 3))],
            S2.SIGS: [(C, v2.MsgRequestSigs((ID,)))],
            S2.DONE: [(C, v2.MsgDone())],
        },
        {
            (S2.IDLE, C): {v2.MsgRequestSigIds, v2.MsgRequestSigs, v2.MsgDone},
            (S2.SIG_IDS_BLOCKING, S): {v2.MsgReplySigIds, v2.MsgReplyNoSigIds},
            (S2.SIG_IDS_NON_BLOCKING, S): {v2.MsgReplySigIds},
            (S2.SIGS, S): {v2.MsgReplySigs},
        },
    ),
    # V1: the client is the serving peer (serving) side, which opens with MsgInit.
    "v1": Case(
        v1.SIG_SUBMISSION_V1,
        [v1.MsgInit(), v1.MsgRequestTxIds(True, 0, 3), v1.MsgRequestTxIds(False, 1, 3),
         v1.MsgReplyTxIds(((ID, 700),)), v1.MsgRequestTxs((ID,)), v1.MsgReplyTxs((MESSAGE,)), v1.MsgDone()],
        {
            S1.INIT: [],
            S1.IDLE: [(C, v1.MsgInit())],
            S1.TX_IDS_BLOCKING: [(C, v1.MsgInit()), (S, v1.MsgRequestTxIds(True, 0, 3))],
            S1.TX_IDS_NON_BLOCKING: [(C, v1.MsgInit()), (S, v1.MsgRequestTxIds(False, 1, 3))],
            S1.TXS: [(C, v1.MsgInit()), (S, v1.MsgRequestTxs((ID,)))],
            S1.DONE: [(C, v1.MsgInit()), (S, v1.MsgRequestTxIds(True, 0, 3)), (C, v1.MsgDone())],
        },
        {
            (S1.INIT, C): {v1.MsgInit},
            (S1.IDLE, S): {v1.MsgRequestTxIds, v1.MsgRequestTxs},
            (S1.TX_IDS_BLOCKING, C): {v1.MsgReplyTxIds, v1.MsgDone},
            (S1.TX_IDS_NON_BLOCKING, C): {v1.MsgReplyTxIds},
            (S1.TXS, C): {v1.MsgReplyTxs},
        },
    ),
    "peer-sharing": Case(
        ps.PEER_SHARING,
        [ps.MsgShareRequest(5), ps.MsgSharePeers((PEER,)), ps.MsgSharePeers(()), ps.MsgDone()],
        {
            SP.IDLE: [],
            SP.BUSY: [(C, ps.MsgShareRequest(5))],
            SP.DONE: [(C, ps.MsgDone())],
        },
        {
            (SP.IDLE, C): {ps.MsgShareRequest, ps.MsgDone},
            (SP.BUSY, S): {ps.MsgSharePeers},
        },
    ),
}


def combinations():
    for name, case in CASES.items():
        assert set(case.paths) == set(case.spec.states), f"{name}: every state needs a path"
        for state in case.paths:
            for message in case.samples:
                for role in (C, S):
                    yield pytest.param(name, state, message, role, id=f"{name}-{state.name}-{message!r}-{role.value}"[:160])


async def reach(case: Case, state):
    a, b = memory_channel_pair()
    ends = {C: (Driver(a, case.spec, C), a), S: (Driver(b, case.spec, S), b)}
    for sender, message in case.paths[state]:
        await ends[sender][0].send(message)
        assert await ends[sender.peer][0].recv() == message
    assert ends[C][0].state is state and ends[S][0].state is state
    return ends


def test_the_agency_of_each_state():
    assert {s: st.agency.value for s, st in v2.SIG_SUBMISSION_V2.states.items()} == {
        S2.IDLE: "client", S2.SIG_IDS_BLOCKING: "server", S2.SIG_IDS_NON_BLOCKING: "server",
        S2.SIGS: "server", S2.DONE: "nobody"}
    assert {s: st.agency.value for s, st in v1.SIG_SUBMISSION_V1.states.items()} == {
        S1.INIT: "client", S1.IDLE: "server", S1.TX_IDS_BLOCKING: "client", S1.TX_IDS_NON_BLOCKING: "client",
        S1.TXS: "client", S1.DONE: "nobody"}


@pytest.mark.parametrize("name, state, message, role", list(combinations()))
async def test_send(name, state, message, role):
    case = CASES[name]
    ends = await reach(case, state)
    driver, channel = ends[role]
    if type(message) in case.allowed.get((state, role), set()):
        await driver.send(message)
        assert await ends[role.peer][0].recv() == message
        assert driver.state is ends[role.peer][0].state is case.spec.next_state(state, message)
    else:
        with pytest.raises(ProtocolViolation) as info:
            await driver.send(message)
        assert info.value.state is state and driver.state is state
        await channel.aclose()
        with pytest.raises(ChannelClosed):
            await ends[role.peer][1].recv_message()  # the refused message was not written


@pytest.mark.parametrize("name, state, message, role", list(combinations()))
async def test_receive(name, state, message, role):
    """``role`` receives ``message`` as sent, raw, by the other side."""
    case = CASES[name]
    ends = await reach(case, state)
    driver, _ = ends[role]
    await ends[role.peer][1].send(case.spec.codec.encode(message))
    if type(message) in case.allowed.get((state, role.peer), set()):
        assert await driver.recv() == message
    else:
        with pytest.raises(ProtocolViolation) as info:
            await driver.recv()
        assert info.value.state is state and driver.state is state
