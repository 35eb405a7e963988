"""The local message submission server: hand each message to the node, reply its verdict.

``submit`` is the node's entry point: it receives the exact bytes the client sent and
returns :data:`ACCEPTED` or a reject reason. When it raises
:class:`InvalidMessageBytes` the bytes were not a DMQ message: as in the reference, that
is a decoder failure of the protocol, raised without a reply so the connection closes.
The end of the client's stream is a normal end, whether or not MsgDone came first
(signers hang up after their one message), and so is a client gone before its verdict
could be written: the node has already acted on the message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ouroboros_mux.channel import ChannelClosed, MessageChannel

from ..framework import DecoderFailure, Driver, Role, as_driver
from .spec import LOCAL_MSG_SUBMISSION
from .types import (
    Accepted,
    InvalidMessageBytes,
    LocalSubmissionState,
    MsgAcceptMessage,
    MsgDone,
    MsgRejectMessage,
    MsgSubmitMessage,
    SubmitResult,
)

__all__ = ["serve", "Submit"]

Submit = Callable[[bytes], Awaitable[SubmitResult]]


async def serve(driver_or_channel: Driver | MessageChannel, submit: Submit) -> None:
    """Serve one client until MsgDone or the end of its stream."""
    driver = as_driver(driver_or_channel, LOCAL_MSG_SUBMISSION, Role.SERVER)
    while True:
        try:
            message = await driver.recv()
        except ChannelClosed:
            return
        if isinstance(message, MsgDone):
            return
        assert isinstance(message, MsgSubmitMessage)
        try:
            verdict = await submit(message.message)
        except InvalidMessageBytes as exc:
            raise DecoderFailure(LOCAL_MSG_SUBMISSION.name, LocalSubmissionState.IDLE,
                                 message.message, f"not a DMQ message: {exc}") from exc
        reply = MsgAcceptMessage() if isinstance(verdict, Accepted) else MsgRejectMessage(verdict)
        try:
            await driver.send(reply)
        except ChannelClosed:
            return
