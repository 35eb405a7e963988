"""One simulated network on two processes: each runs the nodes of some regions, on its own virtual clock.

A run of a thousand nodes spends nearly all its CPU in the nodes' own code, one core's worth in
one process; this splits it over two. The split follows the regions (:func:`split_regions`): no
region is cut, the halves hold about as many nodes each, and of such splits the one whose
closest pair of regions across it is farthest apart is taken. That pair's one-way latency is the
**lookahead**: nothing written on a link that crosses arrives sooner than that after it was written
(the links add serialisation, jitter and losses, never subtract).

So the processes move through virtual time in **windows** a little shorter than the lookahead,
in step (conservative synchronisation): a process runs its nodes up to the end of a window, sends
the other what its nodes wrote across (each write with its arrival time), receives the other's,
and books those arrivals; all of them fall in a later window, so
nothing arrives in the past. The exchange happens inside the clock (:class:`.checks.VirtualClock`
asks :meth:`Shard.advance` before it jumps past a window's end), with every task of the process
waiting, so the nodes' code never sees it. A connection across is a first packet (:meth:`Shard.connect`)
that the other process answers at its arrival time: the server end joins the listener's backlog,
or a refusal comes back before the dialler's round trip ends.

What a run reports is measured in both and merged (:func:`run_sharded`): each process logs
the acceptances of its nodes, and the parent replays both logs in time order into one
:class:`.deliveries.Deliveries`, so the hop counts across the split are the sender's plus one,
as in one process. The drain ends on both sides at the same virtual second: each process
counts its nodes' missing deliveries at every window's end and sends that count with the window.

The same seed gives the same run for the same split (each crossing link's randomness is named
by the link, not by the order the processes made them); it is not the one-process run of that
seed, whose links draw their randomness in another order and whose tasks run in other batches.
A run split this way has no kills, partitions, flood or eclipse (:func:`split_problem`).
"""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.connection
import pickle
import select
import socket
import struct
import time
import traceback
from array import array
from collections.abc import Callable, Sequence
from typing import Any

import trio

from .deliveries import Deliveries
from .links import SimNetwork, SimStream, _Pipe

__all__ = ["WINDOW_MARGIN", "Shard", "DeliveryLog", "replay", "split_regions", "split_problem", "run_sharded"]

#: A window is this much shorter than the lookahead, so that rounding never puts an arrival in
#: the window it was written in (a write at time t arrives at t + one way or later).
WINDOW_MARGIN = 1e-6

_LENGTH = struct.Struct("!Q")
_VANISHED = "the other process of the simulated network ended without finishing"


def split_regions(regions: Sequence[int], rtt: Callable[[int, int], float], *,
                  tolerance: float = 0.05) -> tuple[list[int], float]:
    """Each node's process (0 or 1) and the lookahead in seconds.

    ``regions`` is each node's region, ``rtt(a, b)`` the round trip between regions in seconds.
    Of the splits of the regions into two non-empty sides whose larger side holds at most
    ``tolerance`` more than half the nodes, the one with the largest lookahead wins (then the most
    even one, then the first found); when no split is that even (few nodes in few regions), the
    most even one wins.
    """
    present = sorted(set(regions))
    if len(present) < 2:
        raise ValueError("a run over two processes needs nodes in at least two regions")
    counts = {region: list(regions).count(region) for region in present}
    total = len(regions)

    def lookahead(side: frozenset[int]) -> float:
        return min(rtt(a, b) for a in side for b in present if b not in side) / 2

    def rank(side: frozenset[int]) -> tuple[bool, float, float]:
        here = sum(counts[region] for region in side)
        larger = max(here, total - here)
        if larger <= (1 + tolerance) * total / 2:
            return True, lookahead(side), -larger
        return False, -larger, lookahead(side)

    # Each split once: the side that holds the first region.
    sides = [frozenset((present[0], *others)) for size in range(len(present) - 1)
             for others in itertools.combinations(present[1:], size)]
    side = max(sides, key=rank)
    return [0 if region in side else 1 for region in regions], lookahead(side)


def split_problem(options: Any) -> str | None:
    """Why ``options`` cannot run over two processes, or None."""
    unsupported = [name for name, present in (("kills", options.kill_fraction > 0),
                                              ("partitions", options.partition_fraction > 0),
                                              ("a flood", options.flood), ("an eclipse", options.eclipse > 0),
                                              ("recording", options.record is not None)) if present]
    if unsupported:
        return ("a run over two processes has no kills, partitions, flood, eclipse or recording; this one has "
                + ", ".join(unsupported) + " (use --kill-fraction 0 --partition-fraction 0 --no-flood)")
    return None


class DeliveryLog:
    """Every acceptance at this process's nodes, as flat arrays: (time, node, message, sender)."""

    def __init__(self, index_of_host: dict[str, int]) -> None:
        self.index_of_host = index_of_host
        self.at = array("d")
        self.node = array("i")
        self.message = array("i")
        #: The sending node's index; -1 when the node's own client submitted it, -2 when unknown.
        self.sender = array("i")
        self.ids: dict[bytes, int] = {}

    def record(self, node: int, message_id: bytes, origin: str, at: float) -> None:
        ids = self.ids
        number = ids.get(message_id)
        if number is None:
            number = ids[message_id] = len(ids)
        self.at.append(at)
        self.node.append(node)
        self.message.append(number)
        self.sender.append(-1 if origin == "local" else self.index_of_host.get(origin.rpartition(":")[0], -2))


def replay(logs: Sequence[DeliveryLog], deliveries: Deliveries, hosts: Sequence[str]) -> None:
    """Every acceptance of ``logs`` into ``deliveries``, earliest first (a sender accepts before
    the nodes it sends to: a link's one-way latency is never zero)."""
    rows: list[tuple[float, int, bytes, int]] = []
    for log in logs:
        names = list(log.ids)
        rows.extend(zip(log.at, log.node, (names[number] for number in log.message), log.sender))
    rows.sort(key=lambda row: (row[0], row[1]))
    for at, node, message_id, sender in rows:
        origin = "local" if sender == -1 else ("unknown:0" if sender == -2 else f"{hosts[sender]}:0")
        deliveries.accepted(node, message_id, origin, at)


class Shard:
    """This process's half of a run over two processes: which nodes run here, and the exchange.

    ``owner`` is each node's process, ``window`` the length of a window in virtual seconds, ``peer``
    a connected socket to the other process.
    """

    def __init__(self, index: int, owner: Sequence[int], window: float, peer: socket.socket) -> None:
        self.index = index
        self.owner = bytes(owner)
        #: How many nodes run in this process.
        self.nodes_here = self.owner.count(index)
        self.window = window
        self.window_end = window
        self._windows = 1
        self._peer = peer
        peer.setblocking(False)
        self._inbox = bytearray()
        self.peer_done = False
        self.net: SimNetwork | None = None
        #: This process's end of every link that crosses, by key: the reading end of a pipe from the
        #: other process (its writes arrive there), the writing end of one to it (a reset arrives there).
        self.pipes: dict[int, _Pipe] = {}
        self._keys = 0
        self._writes: list[tuple[int, float, bytes, float]] = []
        self._notes: list[tuple] = []
        self._refused: set[int] = set()
        #: This process's nodes' missing deliveries (set by the run), and both processes' at the last window's end.
        self.missing_here: Callable[[], int] = lambda: 0
        self.missing = 0
        #: What the other process published or withdrew (set by the run): ``expect(id, home, sent_at)``, ``withdraw(id)``.
        self.expect: Callable[[bytes, int, float], None] = lambda message_id, home, sent_at: None
        self.withdraw: Callable[[bytes], None] = lambda message_id: None
        self.exchanges = 0
        self.bytes_exchanged = 0
        self.seconds_waiting = 0.0

    def attach(self, net: SimNetwork) -> None:
        self.net = net
        net.shard = self

    def runs(self, node: int) -> bool:
        return self.owner[node] == self.index

    # -- what the nodes here send across --------------------------------------------------

    def send(self, pipe: _Pipe, at: float, data: bytes, written: float) -> None:
        """A write on a link to the other process, arriving at ``at``."""
        self._writes.append((pipe.key, at, data, written))

    def reset(self, pipe: _Pipe) -> None:
        """The reading end here closed: the writer there learns it, and later writes are dropped."""
        self.pipes.pop(pipe.key, None)
        self._notes.append(("reset", pipe.key))

    def published(self, message_id: bytes, home: int, sent_at: float) -> None:
        self._notes.append(("expect", message_id, home, sent_at))

    def withdrawn(self, message_id: bytes) -> None:
        self._notes.append(("withdraw", message_id))

    async def connect(self, src: int, dst: int, port: int, label: str, own_label: str) -> SimStream:
        """Dial the other process's node ``dst``: its answer is known after one round trip."""
        net = self.net
        assert net is not None
        out_key, in_key = self._new_key(), self._new_key()
        outgoing, incoming = net.remote_connection(src, dst, out_key, in_key)
        self.pipes[out_key], self.pipes[in_key] = outgoing, incoming
        now = net.now()
        rtt = net.model.rtt(src, dst)
        self._notes.append(("syn", now + rtt / 2, src, dst, port, out_key, in_key, own_label))
        await trio.sleep(rtt)
        if out_key in self._refused:
            self._refused.discard(out_key)
            self.pipes.pop(out_key, None)
            self.pipes.pop(in_key, None)
            raise OSError(111, f"connection refused by {label}")
        return SimStream(incoming, outgoing, label)

    def _new_key(self) -> int:
        self._keys += 1
        return self._keys * 2 + self.index

    def _accept(self, src: int, dst: int, port: int, out_key: int, in_key: int, label: str) -> None:
        net = self.net
        assert net is not None
        listener = net.listeners.get((net.hosts[dst], port))
        if listener is None or listener.closed:
            self._notes.append(("refused", out_key))
            return
        outgoing, incoming = net.remote_connection(dst, src, in_key, out_key)
        self.pipes[in_key], self.pipes[out_key] = outgoing, incoming
        listener.send.send_nowait(SimStream(incoming, outgoing, label))

    # -- the exchange at a window's end ---------------------------------------------------

    def advance(self) -> None:
        """End this window: swap what crossed with the other process and book what it sent; the next
        window begins. Called by the clock with every task waiting."""
        if self.peer_done:
            self.window_end = float("inf")
            return
        missing_here = self.missing_here()
        payload = pickle.dumps((self._writes, self._notes, missing_here), protocol=pickle.HIGHEST_PROTOCOL)
        self._writes, self._notes = [], []
        began = time.perf_counter()
        received = self._swap(payload)
        self.seconds_waiting += time.perf_counter() - began
        self._windows += 1
        self.window_end = self._windows * self.window
        if received is None:
            self.peer_done = True
            self.window_end = float("inf")
            return
        self.exchanges += 1
        self.bytes_exchanged += len(payload) + len(received)
        writes, notes, missing_there = pickle.loads(received)
        self.missing = missing_here + missing_there
        net = self.net
        assert net is not None
        for note in notes:
            kind = note[0]
            if kind == "syn":
                _, at, src, dst, port, out_key, in_key, label = note
                net.at(at, lambda a=(src, dst, port, out_key, in_key, label): self._accept(*a))
            elif kind == "refused":
                self._refused.add(note[1])
            elif kind == "reset":
                pipe = self.pipes.pop(note[1], None)
                if pipe is not None:
                    pipe.reader_closed = True
            elif kind == "expect":
                self.expect(note[1], note[2], note[3])
            elif kind == "withdraw":
                self.withdraw(note[1])
        pipes = self.pipes
        for key, at, data, written in writes:
            pipe = pipes.get(key)
            if pipe is not None:
                pipe.arrive(at, data, written)

    def finish(self) -> None:
        """This process's run is over: the other one stops waiting for its windows (unless it is
        over too: then it reads nothing more, and a full socket would hold this one until it exits)."""
        if self.peer_done:
            return
        try:
            self._send_all(memoryview(_LENGTH.pack(0)))
        except OSError:
            pass

    def _send_all(self, data: memoryview) -> None:
        while data:
            select.select([], [self._peer], [])
            sent = self._peer.send(data[:1 << 20])
            data = data[sent:]

    def _swap(self, payload: bytes) -> bytes | None:
        """Send ``payload`` and receive the other's window (None: it finished), both at once, so two
        large windows cannot fill both sockets' buffers and wait on each other. The other sends
        nothing more until it has this window, so what is read is its window and nothing after."""
        out = memoryview(_LENGTH.pack(len(payload) + 1) + payload)
        peer = self._peer
        received = self._take(self._inbox)
        while out or received is None:
            if received == b"":
                return None  # it finished (while this side was still sending: the rest is not wanted)
            readable, writable, _ = select.select([peer] if received is None else [], [peer] if out else [], [])
            if writable:
                try:
                    sent = peer.send(out[:1 << 20])
                except (BrokenPipeError, ConnectionResetError):
                    return self._after_close()
                out = out[sent:]
            if readable:
                try:
                    chunk = peer.recv(1 << 20)
                except ConnectionResetError:  # it closed with this window unread
                    chunk = b""
                if not chunk:
                    return self._after_close()
                self._inbox += chunk
                received = self._take(self._inbox)
        return received or None

    def _after_close(self) -> None:
        """The other closed its end: None if it had said it finished (the rest of this window is not
        wanted), else the ConnectionError of a process that failed or was killed. Only the marker
        tells the two apart: taken for a finish, a failure would leave this process waiting, with
        nothing left to wake it, for answers that never come."""
        try:
            while (chunk := self._peer.recv(1 << 20)):  # what it sent before closing, then the end
                self._inbox += chunk
        except OSError:  # nothing more to read (reset, or not closed after all): judged on what came
            pass
        if self._take(self._inbox) == b"":
            return None
        raise ConnectionError(_VANISHED)

    @staticmethod
    def _take(inbox: bytearray) -> bytes | None:
        """One whole message off the front of ``inbox`` (b"" is the other's end), or None."""
        if len(inbox) < _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(inbox)
        if length == 0:
            del inbox[:_LENGTH.size]
            return b""
        end = _LENGTH.size + length - 1
        if len(inbox) < end:
            return None
        message = bytes(inbox[_LENGTH.size:end])
        del inbox[:end]
        return message


def _worker(run_part: Callable[[Shard], Any], index: int, owner: list[int], window: float,
            ends: tuple[socket.socket, socket.socket], results: Any) -> None:
    """One process of the run: its part run; the outcome (or the failure) to the parent."""
    peer = ends[index]
    ends[1 - index].close()  # the other's end: held here, the other's exit would never read as one
    try:
        shard = Shard(index, owner, window, peer)
        outcome = run_part(shard)
        shard.finish()  # after a failure the socket just closes: the other's next exchange fails too
        results.send(("done", outcome))
    except BaseException:  # reported to the parent, which stops the other process
        results.send(("failed", traceback.format_exc()))
    finally:
        results.close()
        peer.close()


def run_sharded(run_part: Callable[[Shard], Any], owner: list[int], window: float) -> list[Any]:
    """Call ``run_part(shard)`` in two processes (forked: nothing is pickled on the way in), each
    running its shard's nodes on a virtual clock that exchanges windows through ``shard``, and
    return what each returned; a failure in either stops both and raises with its traceback."""
    context = multiprocessing.get_context("fork")
    ends = socket.socketpair()
    processes, readers = [], []
    for index in range(2):
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(target=_worker, args=(run_part, index, owner, window, ends, writer),
                                  name=f"simnet-shard-{index}")
        process.start()
        writer.close()
        processes.append(process)
        readers.append(reader)
    for end in ends:
        end.close()
    outcomes: list[Any] = [None, None]
    failures: list[str] = []
    waited = False
    try:
        # Both are waited for: when one fails, the other's next exchange finds it gone and fails too,
        # so the report names the first cause, not only its echo.
        pending = dict(enumerate(readers))
        while pending:
            for reader in multiprocessing.connection.wait(list(pending.values())):
                index = readers.index(reader)
                del pending[index]
                try:
                    kind, value = reader.recv()
                except EOFError:
                    failures.append(f"simulated network process {index} ended without a result "
                                    f"(exit code {processes[index].join() or processes[index].exitcode})")
                    continue
                if kind == "failed":
                    failures.append(f"simulated network process {index} failed:\n{value}")
                else:
                    outcomes[index] = value
        waited = True
    finally:
        # Stopped early (a failure, or the caller interrupted: a test's timeout): what is left of
        # the run is ended, so nothing it started outlives it.
        for process in processes:
            if process.is_alive() and (failures or not waited):
                process.terminate()
            process.join()
    if failures:
        raise RuntimeError("\n".join(failures))
    return outcomes
