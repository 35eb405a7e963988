"""The traffic recorder: one more trace sink, plus samplers of connections and of the node.

Off by default; ``--record-traffic DIR`` (or ``RecordTraffic``) turns it on. It writes what
the capacity pipeline needs and nothing it could recompute:

* every message event the node traces (accepted with its validation time, rejected with the
  reason, expired, offered and sent to peers, notified to local clients), mapped by the
  event's class name so that a new event kind is recorded by adding one table entry;
* every second, the cumulative byte and SDU counters of each watched connection per
  mini-protocol, SDU headers included (the mux counts them), plus one last sample when the
  connection ends, so that a Mithril signer's one-message connection is never missed;
* every second, the mempool's size in messages and bytes and the process's resident memory
  (all of it, and its anonymous part) and CPU time.

Everything runs on the node's trio thread: appending a record is a dictionary, a
``json.dumps`` and a buffered write, and the buffers go to the page cache once per sample.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import trio

from dmq.recorder.files import DEFAULT_ROTATE_BYTES, DEFAULT_ROTATE_SECONDS, RotatingLineWriter
from dmq.recorder.probes import process_label, sample_process
from dmq.recorder.schema import (
    CONNECTION_SAMPLES,
    MESSAGE_EVENTS,
    NODE_SAMPLES,
    MessageEventKind,
    RecordType,
    encode_manifest,
    encode_record,
    manifest_file_name,
)

__all__ = [
    "TrafficRecorder",
    "NullRecorder",
    "NO_RECORDER",
    "ConnectionWatch",
    "RecorderError",
    "EVENT_KINDS",
    "DEFAULT_SAMPLE_INTERVAL",
]

DEFAULT_SAMPLE_INTERVAL = 1.0

#: Trace event class name -> recorded event. Events of other classes are not message events.
EVENT_KINDS: dict[str, MessageEventKind] = {
    "MessageAccepted": MessageEventKind.ACCEPTED,
    "MessageRejected": MessageEventKind.REJECTED,
    "MessageExpired": MessageEventKind.EXPIRED,
    "MessageOffered": MessageEventKind.OFFERED,
    "MessageSent": MessageEventKind.SENT,
    "MessageNotified": MessageEventKind.NOTIFIED,
}


class RecorderError(OSError):
    """The recording directory cannot be written."""


class CountedMux(Protocol):
    """What the recorder needs of a mux: ``{(protocol, mode): counters}``."""

    def counters(self) -> dict[tuple[int, Any], Any]: ...


@dataclass(frozen=True, slots=True)
class ConnectionWatch:
    """A watched connection; hand it back to :meth:`TrafficRecorder.unwatch` when it ends."""

    conn: int
    peer: str
    link: str
    mux: CountedMux


def _hex(value: Any) -> str | None:
    if value is None:
        return None
    return value.hex() if isinstance(value, (bytes, bytearray, memoryview)) else str(value)


class TrafficRecorder:
    """Appends the node's traffic to a recording directory (see :mod:`dmq.recorder.schema`)."""

    def __init__(
        self,
        directory: str | Path,
        node: str,
        *,
        now: Callable[[], float] = time.time,
        sample_interval: float = DEFAULT_SAMPLE_INTERVAL,
        rotate_bytes: int = DEFAULT_ROTATE_BYTES,
        rotate_seconds: float = DEFAULT_ROTATE_SECONDS,
        session: str | None = None,
    ) -> None:
        if sample_interval <= 0:
            raise ValueError("sample_interval must be positive")
        self.directory = Path(directory)
        self.node = node
        self.now = now
        self.sample_interval = sample_interval
        started = now()
        self.session = session or f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(started))}-{secrets.token_hex(3)}"
        self.process = process_label()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            manifest = self.directory / manifest_file_name(node, self.session)
            with open(manifest, "x", encoding="utf-8") as out:
                out.write(encode_manifest(node=node, session=self.session, process=self.process,
                                          started_at=started, sample_interval=sample_interval))
        except OSError as exc:
            raise RecorderError(f"cannot record traffic into {self.directory}: {exc.strerror or exc}") from None
        self._writers = {
            rt.name: RotatingLineWriter(self.directory / rt.name, node, self.session,
                                        rotate_bytes=rotate_bytes, rotate_seconds=rotate_seconds)
            for rt in (MESSAGE_EVENTS, CONNECTION_SAMPLES, NODE_SAMPLES)
        }
        self._events = self._writers[MESSAGE_EVENTS.name]
        self._conn_numbers = itertools.count(1)
        self._watched: dict[int, ConnectionWatch] = {}
        self._held_messages: Callable[[], int] | None = None
        self._held_bytes: Callable[[], int] | None = None
        self._closed = False

    # -- inputs --------------------------------------------------------------------------

    def bind_holdings(self, messages: Callable[[], int], size: Callable[[], int]) -> None:
        """Where the node samples read the mempool's message count and bytes held."""
        self._held_messages, self._held_bytes = messages, size

    def handler_for(self, cls: type) -> Callable[[Any], None] | None:
        """Trace sink: only message events are recorded (``Tracer``)."""
        return self.__call__ if cls.__name__ in EVENT_KINDS else None

    def __call__(self, event: Any) -> None:
        """Trace sink: record the event if it is a message event."""
        kind = EVENT_KINDS.get(type(event).__name__)
        if kind is None or self._closed:
            return
        g = getattr
        peer = g(event, "origin", None) or g(event, "peer", None) or g(event, "client", None)
        self._events.write(encode_record(MESSAGE_EVENTS, (
            event.at, self.node, self.session, kind.value,
            _hex(g(event, "message_id", None)), _hex(g(event, "pool_id", None)),
            g(event, "size", None), g(event, "count", 1), peer,
            g(event, "reason", None), g(event, "reaction", None), g(event, "verify_ns", None),
        )))

    def watch_connection(self, peer: str, mux: CountedMux, link: str) -> ConnectionWatch:
        """Sample ``mux``'s counters every interval until :meth:`unwatch`."""
        watch = ConnectionWatch(next(self._conn_numbers), peer, link, mux)
        self._watched[watch.conn] = watch
        return watch

    def unwatch(self, watch: ConnectionWatch) -> None:
        """Stop sampling a connection, recording its final counters."""
        if self._watched.pop(watch.conn, None) is not None and not self._closed:
            self._sample_connection(watch, self.now(), final=True)

    @contextlib.contextmanager
    def watching(self, peer: str, mux: CountedMux, link: str) -> Iterator[ConnectionWatch]:
        """``with recorder.watching(peer, mux, link): await run_connection(...)``."""
        watch = self.watch_connection(peer, mux, link)
        try:
            yield watch
        finally:
            self.unwatch(watch)

    # -- sampling ------------------------------------------------------------------------

    def _write(self, record_type: RecordType, values: tuple) -> None:
        self._writers[record_type.name].write(encode_record(record_type, values))

    def _sample_connection(self, watch: ConnectionWatch, t: float, final: bool) -> None:
        for (protocol, mode), c in sorted(watch.mux.counters().items(), key=lambda item: (item[0][0], str(item[0][1]))):
            self._write(CONNECTION_SAMPLES, (
                t, self.node, self.session, watch.conn, watch.peer, watch.link, protocol,
                getattr(mode, "value", str(mode)), c.bytes_in, c.bytes_out, c.sdus_in, c.sdus_out, final,
            ))

    def _holding(self, read: Callable[[], int] | None) -> int | None:
        if read is None:
            return None
        try:
            return int(read())
        except Exception:  # the mempool is closing: a missing value beats a broken sample
            return None

    def sample(self, *, final: bool = False) -> None:
        """One node sample and one sample of every watched connection, then flush.

        ``final``: the recording stops, so these are the connections' last samples.
        """
        if self._closed:
            return
        t = self.now()
        process = sample_process()
        self._write(NODE_SAMPLES, (
            t, self.node, self.session, self.process,
            self._holding(self._held_messages), self._holding(self._held_bytes),
            process.rss_bytes, process.cpu_seconds, process.anon_bytes,
        ))
        for watch in list(self._watched.values()):
            self._sample_connection(watch, t, final=final)
        for writer in self._writers.values():
            writer.flush()
            writer.maybe_rotate()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Sample every interval until cancelled, then record the end state and close."""
        self.sample()
        task_status.started()
        try:
            while True:
                await trio.sleep(self.sample_interval)
                self.sample()
        finally:
            self.close()

    def close(self) -> None:
        """Final samples, then every file closed. Later events are ignored."""
        if self._closed:
            return
        self.sample(final=True)
        self._closed = True
        for writer in self._writers.values():
            writer.close()

    @property
    def paths(self) -> list[Path]:
        """Every data file written so far."""
        return [path for writer in self._writers.values() for path in writer.paths]


class NullRecorder:
    """The recorder when recording is off: connection code calls it without branching."""

    def watch_connection(self, peer: str, mux: CountedMux, link: str) -> None:
        return None

    def unwatch(self, watch: object) -> None:
        return None

    @contextlib.contextmanager
    def watching(self, peer: str, mux: CountedMux, link: str) -> Iterator[None]:
        yield None

    def close(self) -> None:
        return None


NO_RECORDER = NullRecorder()
