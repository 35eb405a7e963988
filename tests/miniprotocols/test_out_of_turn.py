"""Every message, in every state, from either side: the driver allows exactly what the
reference allows and raises ProtocolViolation for everything else, on send and on receive.

The allowed moves are written out here independently of the specs' tables, from the
reference protocol types, so a wrong table entry fails this test.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from miniprotocols import keep_alive as ka
from miniprotocols import local_msg_notification as ln
from miniprotocols import local_msg_submission as ls
from miniprotocols.framework import Driver, ProtocolSpec, ProtocolViolation, Role
from ouroboros_mux.channel import ChannelClosed, memory_channel_pair

C, S = Role.CLIENT, Role.SERVER
MESSAGE = bytes.fromhex("8301f6f5")


@dataclass
class Case:
    spec: ProtocolSpec
    samples: list
    paths: dict  # state -> [(sender, message), ...] from the initial state
    allowed: dict  # (state, sender) -> set of message classes


CASES = {
    "keep-alive": Case(
        ka.KEEP_ALIVE,
        [ka.MsgKeepAlive(7), ka.MsgKeepAliveResponse(7), ka.MsgDone()],
        {
            ka.KeepAliveState.CLIENT: [],
            ka.KeepAliveState.SERVER: [(C, ka.MsgKeepAlive(7))],
            ka.KeepAliveState.DONE: [(C, ka.MsgDone())],
        },
        {
            (ka.KeepAliveState.CLIENT, C): {ka.MsgKeepAlive, ka.MsgDone},
            (ka.KeepAliveState.SERVER, S): {ka.MsgKeepAliveResponse},
        },
    ),
    "local-msg-submission": Case(
        ls.LOCAL_MSG_SUBMISSION,
        [ls.MsgSubmitMessage(MESSAGE), ls.MsgAcceptMessage(), ls.MsgRejectMessage(ls.RejectExpired()),
         ls.MsgDone()],
        {
            ls.LocalSubmissionState.IDLE: [],
            ls.LocalSubmissionState.BUSY: [(C, ls.MsgSubmitMessage(MESSAGE))],
            ls.LocalSubmissionState.DONE: [(C, ls.MsgDone())],
        },
        {
            (ls.LocalSubmissionState.IDLE, C): {ls.MsgSubmitMessage, ls.MsgDone},
            (ls.LocalSubmissionState.BUSY, S): {ls.MsgAcceptMessage, ls.MsgRejectMessage},
        },
    ),
    "local-msg-notification": Case(
        ln.LOCAL_MSG_NOTIFICATION,
        [ln.MsgRequestMessages(True), ln.MsgRequestMessages(False),
         ln.MsgReplyMessagesNonBlocking((MESSAGE,), True), ln.MsgReplyMessagesBlocking((MESSAGE,)),
         ln.MsgClientDone()],
        {
            ln.LocalNotificationState.IDLE: [],
            ln.LocalNotificationState.BUSY_BLOCKING: [(C, ln.MsgRequestMessages(True))],
            ln.LocalNotificationState.BUSY_NON_BLOCKING: [(C, ln.MsgRequestMessages(False))],
            ln.LocalNotificationState.DONE: [(C, ln.MsgClientDone())],
        },
        {
            (ln.LocalNotificationState.IDLE, C): {ln.MsgRequestMessages, ln.MsgClientDone},
            (ln.LocalNotificationState.BUSY_BLOCKING, S): {ln.MsgReplyMessagesBlocking},
            (ln.LocalNotificationState.BUSY_NON_BLOCKING, S): {ln.MsgReplyMessagesNonBlocking},
        },
    ),
}


def combinations():
    for name, case in CASES.items():
        assert set(case.paths) == set(case.spec.states), f"{name}: every state needs a path"
        for state in case.paths:
            for message in case.samples:
                for role in (C, S):
                    yield pytest.param(name, state, message, role, id=f"{name}-{state.name}-{message!r}-{role.value}")


async def reach(case: Case, state):
    a, b = memory_channel_pair()
    ends = {C: (Driver(a, case.spec, C), a), S: (Driver(b, case.spec, S), b)}
    for sender, message in case.paths[state]:
        await ends[sender][0].send(message)
        assert await ends[sender.peer][0].recv() == message
    assert ends[C][0].state is state and ends[S][0].state is state
    return ends


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
    raw = case.spec.codec.encode(message)
    await ends[role.peer][1].send(raw)
    if type(message) in case.allowed.get((state, role.peer), set()):
        assert await driver.recv() == message
    else:
        with pytest.raises(ProtocolViolation) as info:
            await driver.recv()
        assert info.value.state is state and driver.state is state
