"""Running the mini-protocols of one connection, and ending it the way the reference does.

One trio nursery per connection: the mux's reader runs in the connection's own task, its
writer and one task per mini-protocol instance in the nursery. An instance marked
``on_demand`` gets its task only when the peer's first bytes for it arrive, as the
reference's ``StartOnDemand`` responders: a Mithril signer's connection (one submission,
then close) never pays for the notification server it does not use.

This module plays the reference's inbound governor towards those responders (WIRE.md 2.3):
one that finishes cleanly is started again on demand, on the same connection, when the
peer's next bytes for it arrive (a peer that demotes us hot -> warm -> hot starts sig
submission again; a local client may submit again after MsgDone). The mux only marks the
instance finished; it never restarts anything itself. When no instance runs any more, the
connection is idle: with nothing left that could start (no on-demand instance) it closes at
once; otherwise it closes after ``idle_timeout`` seconds unless the peer starts one again
(the reference's ``protocolIdleTimeout`` on node-to-node links), or stays open until the
peer closes it when there is no such timeout (local links, as the reference).

A protocol error, a validation error that calls for a disconnect, or a fatal mux error ends
the whole connection (WIRE.md 2.6) and nothing else, with no restart: the error is returned
to the caller for tracing, never raised into the listener that accepted it.
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
    #: peer speaks first), and again on its next bytes after each clean finish; while it
    #: waits it costs no task.
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
    idle_timeout: float | None = None,
) -> ConnectionEnd:
    """Run ``tasks`` over ``mux`` until the connection ends; return how it ended.

    ``peer_close_is_clean``: on local links a client may hang up whenever it is idle (a
    Mithril signer closes right after MsgDone without ever starting notification), so the
    peer closing the socket is not an error there.

    ``idle_timeout``: how long the connection may stay idle (no instance running) after an
    instance finished before it is closed; None keeps it open until the peer closes it.
    """
    first_error: list[BaseException] = []
    restartable = any(task.on_demand for task in tasks)
    running = 0
    idle: trio.CancelScope | None = None

    async def speak(task: ProtocolTask, nursery: trio.Nursery) -> None:
        nonlocal running, idle
        try:
            await task.run()
        except ChannelClosed:
            return  # the connection is ending; the mux knows why
        except Exception as exc:  # a protocol or validation error ends this connection only
            if not first_error:
                first_error.append(exc)
            nursery.cancel_scope.cancel()
            return
        task.channel.finish()
        running -= 1
        if task.on_demand:
            task.channel.on_data(partial(start, task, nursery))
        if running == 0 and mux.running:
            if not restartable:
                mux.stop()  # every instance is done and none can start again
            elif idle_timeout is not None:
                # Made here, not in the new task: a start before that task runs must cancel it.
                idle = trio.CancelScope()
                nursery.start_soon(close_when_idle, idle)

    def start(task: ProtocolTask, nursery: trio.Nursery) -> None:
        nonlocal running, idle
        running += 1
        if idle is not None:
            idle.cancel()
            idle = None
        nursery.start_soon(speak, task, nursery)

    async def close_when_idle(scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(idle_timeout)
            mux.stop()

    async with trio.open_nursery() as nursery:
        for task in tasks:
            if task.on_demand:
                task.channel.on_data(partial(start, task, nursery))
            else:
                start(task, nursery)
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
