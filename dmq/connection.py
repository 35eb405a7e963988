"""Running the mini-protocols of one connection, and ending it the way the reference does.

One trio nursery per connection: the mux's reader runs in the connection's own task, its
writer and one task per mini-protocol instance in the nursery. An instance marked
``on_demand`` gets its task only when the peer's first bytes for it arrive, as the
reference's ``StartOnDemand`` responders: a Mithril signer's connection (one submission,
then MsgDone) never pays for the notification server it does not use.

This module plays the reference's inbound governor towards those responders (docs/protocol/mux.md 2.3):
one that finishes cleanly is started again on demand, on the same connection, when the
peer's next bytes for it arrive (a peer that demotes us hot -> warm -> hot starts sig
submission again; a local client may submit again after MsgDone). The mux only marks the
instance finished; it never restarts anything itself. When no instance runs any more, the
connection is idle: with nothing left that could start (no on-demand instance) it closes at
once; otherwise it closes after ``idle_timeout`` seconds unless the peer starts one again
(the reference's ``protocolIdleTimeout``), or stays open until the peer closes it when there
is no such timeout. With ``idle_from_start`` the idle time also runs from the start, until
the peer first speaks: the reference's inbound governor begins every connection in
``RemoteIdle`` with that timeout, so a peer that completes the handshake and never speaks is
released too. Local links use both (docs/protocol/local-protocols.md 7.4): a client that
leaves a finished connection open, as Mithril's publisher does, or never uses it, gives its
descriptor back after ``LocalIdleTimeout``.

A protocol error, a validation error that calls for a disconnect, or a fatal mux error ends
the whole connection (docs/protocol/mux.md 2.6) and nothing else, with no restart: the error is returned
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

__all__ = ["ProtocolTask", "run_connection", "ConnectionEnd", "IdleReaper"]


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


class _Instances:
    """Starts, restarts and watches the mini-protocol instances of one running connection.

    A plain object rather than closures calling each other: functions that refer to each
    other through their closures form a reference cycle holding the mux, which only the
    cyclic collector frees, once per connection. The starters left on channels refer to it,
    and the mux drops them when the connection ends.
    """

    __slots__ = ("mux", "nursery", "restartable", "idle_timeout", "reaper", "running", "idle", "error")

    def __init__(self, mux: Mux, nursery: trio.Nursery, restartable: bool, idle_timeout: float | None,
                 reaper: IdleReaper | None = None) -> None:
        self.mux = mux
        self.nursery = nursery
        self.restartable = restartable
        self.idle_timeout = idle_timeout
        self.reaper = reaper
        self.running = 0
        #: Calls off the close of an idle connection (set while one is pending).
        self.idle: trio.CancelScope | None = None
        #: The first error, which ended the connection.
        self.error: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        """End the connection; the first error is the one it ended with."""
        _drop_tracebacks(error)  # its frames would refer back to this object
        if self.error is None:
            self.error = error
        self.nursery.cancel_scope.cancel()

    def start(self, task: ProtocolTask) -> None:
        self.running += 1
        if self.reaper is not None:
            self.reaper.busy(self.mux)
        elif self.idle is not None:
            self.idle.cancel()
            self.idle = None
        self.nursery.start_soon(self._speak, task)

    async def _speak(self, task: ProtocolTask) -> None:
        try:
            await task.run()
        except ChannelClosed:
            return  # the connection is ending; the mux knows why
        except Exception as exc:  # a protocol or validation error ends this connection only
            self.fail(exc)
            return
        task.channel.finish()
        self.running -= 1
        if task.on_demand:
            task.channel.on_data(partial(self.start, task))
        if self.running == 0 and self.mux.running:
            self.became_idle()

    def became_idle(self) -> None:
        """No instance runs: close now if none can start again, else after the idle timeout
        unless one starts first."""
        if not self.restartable:
            self.mux.stop()  # every instance is done and none can start again
        elif self.reaper is not None:
            self.reaper.idle(self.mux, self.mux.stop)
        elif self.idle_timeout is not None:
            # Made here, not in the new task: a start before that task runs must cancel it.
            self.idle = trio.CancelScope()
            self.nursery.start_soon(self._close_when_idle, self.idle)

    async def _close_when_idle(self, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(self.idle_timeout)
            self.mux.stop()


class IdleReaper:
    """Stops the muxes of connections idle for ``timeout`` seconds, with one task for them all.

    For links with many short connections (a local connection per Mithril message): a timer
    task per connection, started whenever it falls idle and cancelled when it ends, cost a
    quarter more event-loop CPU per message (0.46 against 0.37 ms, ``bench/local_service.py``).
    Here falling idle and becoming busy again are a dict insertion and removal. Entries are kept in the order they fell idle, so they expire in
    that order too: the task sleeps until the oldest one's deadline and stops only what has
    expired. ``check`` closes what the caller registered the same way, before a mux exists
    (a handshake that does not complete).
    """

    __slots__ = ("timeout", "_since", "_wake")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        #: Key -> (when it fell idle, what stops it), oldest first.
        self._since: dict[object, tuple[float, Callable[[], object]]] = {}
        self._wake = trio.Event()

    def idle(self, key: object, stop: Callable[[], object]) -> None:
        """``key`` has nothing running from now on: ``stop()`` it unless ``busy`` comes first."""
        self._since.pop(key, None)
        self._since[key] = (trio.current_time(), stop)
        if len(self._since) == 1:
            self._wake.set()

    def busy(self, key: object) -> None:
        """``key`` runs something again, or has ended: no longer watched."""
        self._since.pop(key, None)

    def __len__(self) -> int:
        return len(self._since)

    async def run(self) -> None:
        """Stop what expires, until cancelled."""
        while True:
            if not self._since:
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            key, (since, stop) = next(iter(self._since.items()))
            deadline = since + self.timeout
            if trio.current_time() < deadline:
                await trio.sleep_until(deadline)
                continue
            del self._since[key]
            stop()


async def run_connection(
    mux: Mux,
    tasks: Sequence[ProtocolTask],
    *,
    peer_close_is_clean: bool = False,
    idle_timeout: float | None = None,
    idle_from_start: bool = False,
    reaper: IdleReaper | None = None,
) -> ConnectionEnd:
    """Run ``tasks`` over ``mux`` until the connection ends; return how it ended.

    ``peer_close_is_clean``: on local links a client may hang up whenever it is idle (a
    Mithril signer closes right after MsgDone without ever starting notification), so the
    peer closing the socket is not an error there.

    ``idle_timeout``: how long the connection may stay idle (no instance running) after an
    instance finished before it is closed; None keeps it open until the peer closes it.
    ``idle_from_start``: count that time from the start too when no instance starts with the
    connection (every one waits for the peer), so a peer that never speaks is released.
    ``reaper``: a shared :class:`IdleReaper` closes the idle connection (after its own
    timeout) instead of a timer task of this connection's; then ``idle_timeout`` is not given.
    """
    if reaper is not None and idle_timeout is not None:
        raise ValueError("an idle connection is closed by the reaper or after idle_timeout, not both")
    idle_timeout = reaper.timeout if reaper is not None else idle_timeout
    try:
        async with trio.open_nursery() as nursery:
            instances = _Instances(mux, nursery, any(task.on_demand for task in tasks), idle_timeout, reaper)
            for task in tasks:
                if task.on_demand:
                    task.channel.on_data(partial(instances.start, task))
                else:
                    instances.start(task)
            if idle_from_start and instances.running == 0 and idle_timeout is not None:
                instances.became_idle()
            try:
                await mux.run(nursery=nursery)
            except BearerClosed as exc:
                if not peer_close_is_clean:
                    instances.fail(exc)
                else:
                    _drop_tracebacks(exc)
            except MuxError as exc:
                instances.fail(exc)
            nursery.cancel_scope.cancel()
    finally:
        if reaper is not None:
            reaper.busy(mux)  # ended: nothing left to stop
    if not mux.bearer.close_now():
        with trio.CancelScope(shield=True):
            await mux.bearer.aclose()
    return ConnectionEnd(instances.error)
