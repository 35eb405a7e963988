"""Running the mini-protocols of one connection, and ending it the way the reference does.

One trio nursery per connection: the mux's reader runs in the connection's own task, its
writer and one task per mini-protocol instance in the nursery. An instance marked
``on_demand`` gets its task only when the peer's first bytes for it arrive, as the
reference's ``StartOnDemand`` responders: a Mithril signer's connection (one submission,
then close) never pays for the notification server it does not use. A protocol that finishes marks its channel finished; when every one has, the
connection closes cleanly. A protocol error, a validation error that calls for a disconnect,
or a fatal mux error ends the whole connection (docs/protocol/mux.md 2.6) and nothing else: the error is
returned to the caller for tracing, never raised into the listener that accepted it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial

import trio

from ouroboros_mux.channel import ChannelClosed
from ouroboros_mux.errors import BearerClosed, MuxError
from ouroboros_mux.mux import Mux, MuxChannel

__all__ = ["ProtocolTask", "run_connection", "ConnectionEnd"]


@dataclass(frozen=True, slots=True)
class ProtocolTask:
    """One mini-protocol instance: its channel and the coroutine that speaks it."""

    channel: MuxChannel
    run: Callable[[], Awaitable[None]]
    name: str
    #: Start only when the peer's first bytes for this channel arrive (a responder whose
    #: peer speaks first); until then it is idle and, like a finished one, costs nothing.
    on_demand: bool = False


@dataclass(frozen=True, slots=True)
class ConnectionEnd:
    """How a connection ended: ``error`` is None for a clean end."""

    error: BaseException | None

    @property
    def clean(self) -> bool:
        return self.error is None

    def describe(self) -> str | None:
        if self.error is None:
            return None
        return f"{type(self.error).__name__}: {self.error}"


def _drop_tracebacks(error: BaseException) -> None:
    """Forget where ``error`` and its causes were raised.

    The error stays on the mux (``mux.error``) while its tracebacks hold the frames of the
    mux's loops, which hold the mux: a reference cycle per ended connection, which only
    the cyclic collector could free (a tenth of the node's CPU with a connection per
    Mithril message). Connection ends are reported by type and text, never by traceback.
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        error.__traceback__ = None
        error = error.__cause__ or error.__context__


async def run_connection(
    mux: Mux,
    tasks: Sequence[ProtocolTask],
    *,
    peer_close_is_clean: bool = False,
) -> ConnectionEnd:
    """Run ``tasks`` over ``mux`` until the connection ends; return how it ended.

    ``peer_close_is_clean``: on local links a client may hang up whenever it is idle (a
    Mithril signer closes right after MsgDone without ever starting notification), so the
    peer closing the socket is not an error there.
    """
    first_error: list[BaseException] = []
    remaining = len(tasks)

    async def speak(task: ProtocolTask, cancel_scope: trio.CancelScope) -> None:
        nonlocal remaining
        try:
            await task.run()
        except ChannelClosed:
            return  # the connection is ending; the mux knows why
        except Exception as exc:  # a protocol or validation error ends this connection only
            if not first_error:
                first_error.append(exc)
            cancel_scope.cancel()
            return
        task.channel.finish()
        remaining -= 1
        if remaining == 0:
            mux.stop()

    async with trio.open_nursery() as nursery:
        for task in tasks:
            if task.on_demand:
                task.channel.on_first_data(partial(nursery.start_soon, speak, task, nursery.cancel_scope))
            else:
                nursery.start_soon(speak, task, nursery.cancel_scope)
        try:
            await mux.run(nursery=nursery)
        except BearerClosed as exc:
            _drop_tracebacks(exc)
            if not peer_close_is_clean and not first_error:
                first_error.append(exc)
        except MuxError as exc:
            _drop_tracebacks(exc)
            if not first_error:
                first_error.append(exc)
        nursery.cancel_scope.cancel()
    if not mux.bearer.close_now():
        with trio.CancelScope(shield=True):
            await mux.bearer.aclose()
    return ConnectionEnd(first_error[0] if first_error else None)
