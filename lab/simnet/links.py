"""In-memory links between simulated nodes: latency, jitter, loss, bandwidth and partitions.

Each node gets a :class:`SimTransport` (the :class:`dmq.diffusion.transport.Transport` of
the node code), so diffusion listens and dials exactly as over TCP, and a connection is a
pair of :class:`SimStream` objects joined by two one-way :class:`_Pipe` objects. Bytes
written on one side are readable on the other at a time computed when they are written:

* **bandwidth**: each node's uplink carries ``rate`` bits per second, shared by all its
  connections; a write waits behind the bytes the node is already sending, and its last byte
  leaves ``len * 8 / rate`` seconds after its first (serialisation delay); the receiver's
  downlink adds that delay again, without a queue (:meth:`_Pipe.arrival` says why);
* **latency**: half the round-trip time between the two nodes' regions
  (:mod:`.regions`), plus jitter drawn uniformly in ``[0, jitter * one way]``;
* **loss**: TCP is reliable, so a lost segment shows up as a delay, not a gap: each write
  is lost with probability ``loss`` (again and again, geometrically), and each loss costs one
  retransmission timeout (Linux's 200 ms floor plus the round trip) before the data arrives;
* **order**: a write never arrives before an earlier write on the same pipe (TCP's order);
* **tick**: with ``tick`` set, every arrival is put off to the next multiple of it, so the
  writes that arrive within one tick wake their readers together, in one pass of trio's run
  loop instead of one pass each (:meth:`_Pipe.arrival`);
* **partitions**: while a cut separates the two nodes, writes are held (as unacknowledged
  segments are); when it heals they arrive at the first retransmission after the heal (the
  timeout doubling from the write, as TCP backs off), plus the one-way latency. A connect
  across the cut waits (its SYNs are lost) until the heal or the dialler's connect timeout.

Everything is read from trio's clock, and the links run on
:class:`lab.simnet.checks.VirtualClock`, which wakes a reader when its bytes arrive;
the randomness comes from one seeded generator per pipe, so a run follows from its seed. A
write returns at once unless the node's uplink has more than ``send_buffer`` bytes queued (a
socket's send buffer), and then waits for it to drain.
"""

from __future__ import annotations

import errno
import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio
from trio import current_time
from trio.lowlevel import current_task, wait_task_rescheduled

from ouroboros_mux.bearer import Bearer

__all__ = ["LinkModel", "SimNetwork", "SimStream", "SimListener", "SimTransport"]

#: Linux's minimum retransmission timeout.
MIN_RTO = 0.2

_INF = math.inf


@dataclass(frozen=True)
class LinkModel:
    """How links behave; ``rtt(a, b)`` is the round trip between nodes ``a`` and ``b`` in seconds."""

    rtt: Callable[[int, int], float]
    #: Extra one-way delay per write, uniform in [0, jitter * one way].
    jitter: float = 0.1
    #: Probability that a write is lost once (retransmitted after a timeout).
    loss: float = 0.0
    #: Each node's uplink and downlink, bits per second (None: unlimited).
    rate_bps: float | None = 100e6
    #: Bytes a node's uplink may hold before a write waits (a socket's send buffer).
    send_buffer: int = 256 * 1024
    seed: int = 0
    #: Seconds; every arrival is put off to the next multiple of it (0: exact times).
    tick: float = 0.0

    def rto(self, rtt: float) -> float:
        return MIN_RTO + rtt


class _Pipe:
    """One direction of a connection: writes from ``src`` readable by ``dst`` at their arrival time."""

    __slots__ = ("net", "serial", "src", "dst", "rtt", "one_way", "jitter_span", "rng", "queue", "last_at",
                 "waiter", "expected_at", "reader_closed", "bytes", "abort", "key")

    def __init__(self, net: SimNetwork, serial: int, src: int, dst: int, rng: random.Random,
                 key: int | None = None) -> None:
        self.net = net
        self.serial = serial
        #: The pipe's name in both processes of a run split over processes (:mod:`.shards`) when
        #: its two ends are in different ones; None otherwise.
        self.key = key
        self.src = src
        self.dst = dst
        self.rtt = net.model.rtt(src, dst)
        #: Half the round trip, and the widest jitter on top of it (``model.jitter * one_way``, the
        #: same product a write would compute: the arrival times are the same to the last bit).
        self.one_way = self.rtt / 2
        self.jitter_span = net.model.jitter * self.one_way
        self.rng = rng
        #: [arrival time, data, time written]; arrival ``inf`` while held by a partition.
        self.queue: deque[list] = deque()
        self.last_at = 0.0
        #: The reader's task while it waits for data (:meth:`SimStream.receive_some`; rescheduled by
        #: the network, see ``_wake``).
        self.waiter: trio.lowlevel.Task | None = None
        #: The arrival the network will wake the reader at (None: none booked).
        self.expected_at: float | None = None
        self.reader_closed = False
        self.bytes = 0
        #: What trio calls when the waiting reader is cancelled (made once: a reader waits per read).
        self.abort = self._abort

    def _abort(self, _) -> trio.lowlevel.Abort:
        self.waiter = None
        return trio.lowlevel.Abort.SUCCEEDED

    def _wake(self) -> None:
        """Have the waiting reader woken when the first queued write arrives (at once if the reader closed).

        The arrival is booked with the network, which the virtual clock asks before it jumps
        (:meth:`SimNetwork.deliver`): the reader is rescheduled directly at that time, without a
        cancel scope, a deadline or a Cancelled exception per arrival.
        """
        if self.waiter is None:
            return
        if self.reader_closed:
            task, self.waiter = self.waiter, None
            trio.lowlevel.reschedule(task)
        elif self.queue:
            at = self.queue[0][0]
            if at != math.inf and at != self.expected_at:
                self.expected_at = at
                self.net.expect(at, self)

    def full_until(self, now: float) -> float | None:
        """When the sending node's uplink will again hold no more than one send buffer, if it holds
        more at ``now`` (a socket's writer would block until then); None when there is room."""
        net = self.net
        drain = net.drain_seconds
        if drain is None:
            return None
        free = net.uplink_free[self.src]
        return free - drain if free - now > drain else None

    def arrival(self, now: float, size: int) -> float:
        """When ``size`` bytes written now have all arrived (booking the sender's uplink).

        The sender's uplink is a queue, in the order the node writes (which is time order). The
        receiver's end adds its serialisation delay but no queue: a queue there would have to be
        served in the order the bytes arrive, not the order they are written (a write from a near
        peer does not wait behind one still on its way from the far side of the world), and at
        the rates studied a downlink carries well under 1 % of its capacity.

        With a ``tick``, the arrival is put off to the next multiple of it (never brought
        forward: nothing arrives sooner than the link allows, so the processes of a run split in
        two still never receive a write from their past). Arrivals in one tick are then one
        instant, and the virtual clock wakes all their readers in one pass of the run loop.
        """
        net = self.net
        isolated = net.isolated
        if isolated and (self.src in isolated) != (self.dst in isolated):  # ``net.separated``, written out
            net.held.add(self)
            return math.inf
        rate = net.rate_bps
        if rate is not None:
            serialise = size * 8 / rate
            uplink = net.uplink_free
            free = uplink[self.src]
            leaves = (now if now >= free else free) + serialise
            uplink[self.src] = leaves
        else:
            leaves, serialise = now, 0.0
        at = leaves + self.one_way + self.jitter_span * self.rng.random()
        loss = net.loss
        if loss > 0:
            while self.rng.random() < loss:
                at += net.model.rto(self.rtt)
        at += serialise
        tick = net.tick
        if tick:
            # The slack keeps a time already on a multiple there despite the division's rounding;
            # one integer of ticks gives one float, the same in both processes of a split run.
            at = math.ceil(at / tick - 1e-9) * tick
        return at

    def put(self, data: bytes, now: float) -> None:
        queue = self.queue
        size = len(data)
        # Behind a held write, held too: TCP delivers in order.
        at = _INF if queue and queue[-1][0] == _INF else self._in_order(self.arrival(now, size))
        queue.append([at, data, now])
        self._count(size)
        if self.waiter is not None:
            self._wake()

    def _in_order(self, at: float) -> float:
        """``at``, or the latest arrival booked on this pipe if later: a write never overtakes an
        earlier one (TCP's order). A held write (inf) books nothing."""
        last = self.last_at
        if last > at:
            return last
        if at != _INF:
            self.last_at = at
        return at

    def _count(self, size: int) -> None:
        self.bytes += size
        net = self.net
        net.bytes_sent[self.src] += size
        net.writes += 1

    def arrive(self, at: float, data: bytes, written: float) -> None:
        """A write from a node of another process (:mod:`.shards`), arriving at ``at`` (TCP's order
        already applied by its writer)."""
        self.queue.append([at, data, written])
        self.bytes += len(data)
        if self.waiter is not None:
            self._wake()

    def close_reader(self) -> None:
        """The reading node closed: its reads end, and a writer in another process learns it."""
        self.reader_closed = True
        self._wake()
        if self.key is not None:
            self.net.shard.reset(self)

    def release(self, healed_at: float) -> None:
        """The cut is gone: held writes arrive at the first retransmission after ``healed_at``."""
        rto = self.net.model.rto(self.rtt)
        one_way = self.rtt / 2
        for entry in self.queue:
            if entry[0] != math.inf:
                continue
            written = entry[2]
            # Retransmissions at written + rto * (2^k - 1), k = 1, 2, ...: the first one after the heal.
            k = max(1, math.ceil(math.log2((healed_at - written) / rto + 1)))
            at = max(written + rto * (2 ** k - 1), healed_at) + one_way
            entry[0] = max(at, self.last_at)
            self.last_at = entry[0]
        self._wake()

    def close_from_writer(self, now: float) -> None:
        """The writer's FIN: end of stream after everything written so far."""
        if self.queue and self.queue[-1][0] == math.inf:
            at = math.inf
        else:
            at = self.arrival(now, 0)
            at = max(at, self.last_at)
        self.queue.append([at, b"", now])
        self._wake()


class _OutboundPipe(_Pipe):
    """The writing end of a pipe whose reader is a node of another process (:mod:`.shards`).

    A write books this node's uplink and draws its latency and its arrival here, as :meth:`_Pipe.put`
    does, then goes to the other process (:meth:`_Pipe.arrive`); nothing is queued here. A run
    split over processes has no cuts.
    """

    __slots__ = ()

    def put(self, data: bytes, now: float) -> None:
        size = len(data)
        self.net.shard.send(self, self._in_order(self.arrival(now, size)), data, now)
        self._count(size)

    def close_from_writer(self, now: float) -> None:
        self.net.shard.send(self, max(self.arrival(now, 0), self.last_at), b"", now)


class SimStream(trio.abc.Stream):
    """One end of an in-memory connection."""

    def __init__(self, incoming: _Pipe, outgoing: _Pipe, label: str) -> None:
        self._in = incoming
        self._out = outgoing
        self.label = label
        self._closed = False
        self._eof_sent = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self._closed:
            raise trio.ClosedResourceError("stream closed")
        out = self._out
        if out.reader_closed:
            await trio.lowlevel.checkpoint()
            raise trio.BrokenResourceError("connection reset by peer")
        now = trio.current_time()
        out.put(bytes(data), now)
        until = out.full_until(now)
        if until is not None:
            await trio.sleep_until(until)
            return
        await trio.lowlevel.checkpoint()

    def send_parts_nowait(self, parts: list) -> int:
        """Take ``parts`` whole without waiting, as a socket with room in its send buffer does
        (:class:`ouroboros_mux.bearer.Bearer` writes this way when it can, as it does to a socket);
        BlockingIOError when the node's uplink already holds more than a send buffer."""
        if self._closed:
            raise trio.ClosedResourceError("stream closed")
        out = self._out
        if out.reader_closed:
            raise trio.BrokenResourceError("connection reset by peer")
        net = out.net
        now = net.now()
        drain = net.drain_seconds  # ``out.full_until(now) is not None``, written out: once per bearer write
        if drain is not None and net.uplink_free[out.src] - now > drain:
            raise BlockingIOError
        data = parts[0] if len(parts) == 1 and type(parts[0]) is bytes else b"".join(parts)
        out.put(data, now)
        return len(data)

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        pipe = self._in
        queue = pipe.queue
        slept = False
        while True:
            if self._closed:
                raise trio.ClosedResourceError("stream closed")
            if queue:
                now = pipe.net.now()
                if queue[0][0] <= now:
                    if not slept:
                        await trio.lowlevel.checkpoint()
                    return self._take(max_bytes, now)
            # Until the first write on the way arrives (later writes arrive later still: TCP's
            # order); with nothing on the way, or held by a cut, the writer, the heal or a close
            # books the wake-up (:meth:`_Pipe._wake`), which reschedules this task without a
            # cancel scope or a deadline.
            if pipe.reader_closed:
                await trio.lowlevel.checkpoint()
            else:
                pipe.waiter = current_task()
                pipe._wake()
                await wait_task_rescheduled(pipe.abort)
            slept = True

    def _take(self, max_bytes: int | None, now: float) -> bytes:
        queue = self._in.queue
        first = queue[0]
        data = first[1]
        if not data:
            return b""  # end of stream (left in place: later reads see it too)
        if max_bytes is not None and len(data) > max_bytes:
            first[1] = data[max_bytes:]
            return data[:max_bytes]
        queue.popleft()
        if not queue or queue[0][0] > now or not queue[0][1]:
            return data
        parts = [data]
        size = len(data)
        while queue and queue[0][0] <= now and queue[0][1] and (max_bytes is None or size + len(queue[0][1]) <= max_bytes):
            chunk = queue.popleft()[1]
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts)

    async def send_eof(self) -> None:
        if not self._eof_sent:
            self._eof_sent = True
            self._out.close_from_writer(trio.current_time())
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if not self._eof_sent:
                self._eof_sent = True
                self._out.close_from_writer(trio.current_time())
            self._in.close_reader()
        await trio.lowlevel.checkpoint()


class SimListener(trio.abc.Listener[trio.abc.Stream]):
    """A node's listening address: connections arrive here from :meth:`SimTransport.connect`."""

    def __init__(self, net: SimNetwork, address: tuple[str, int]) -> None:
        self.net = net
        self.address = address
        self.send, self.receive = trio.open_memory_channel[SimStream](math.inf)
        self.closed = False

    async def accept(self) -> trio.abc.Stream:
        try:
            return await self.receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise trio.ClosedResourceError("listener closed") from None

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            if self.net.listeners.get(self.address) is self:
                del self.net.listeners[self.address]
            self.send.close()
            # Connections the node never accepted are reset, as the kernel does for its backlog.
            while True:
                try:
                    stream = self.receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                await stream.aclose()
            self.receive.close()
        await trio.lowlevel.checkpoint()


@dataclass(eq=False)
class SimNetwork:
    """Every node's address, listener and links; where partitions are cut and healed."""

    model: LinkModel
    #: Node index -> its host (an address string, as a topology file names peers).
    hosts: list[str]
    listeners: dict[tuple[str, int], SimListener] = field(default_factory=dict)
    #: Nodes on the isolated side of the current cut (empty: no cut).
    isolated: frozenset[int] = frozenset()
    held: set[_Pipe] = field(default_factory=set)
    #: This process's part of a run split over processes (:class:`lab.simnet.shards.Shard`): the
    #: nodes it runs, and the exchange of what crosses to the other's; None in a run of one process.
    shard: Any = None

    def __post_init__(self) -> None:
        count = len(self.hosts)
        model = self.model
        #: Seconds a node's uplink takes to send one send buffer (None: unlimited), for
        #: :meth:`_Pipe.full_until`.
        self.drain_seconds = None if model.rate_bps is None else model.send_buffer * 8 / model.rate_bps
        #: The model's rate, loss and tick, read on every write (a frozen model: they do not change).
        self.rate_bps = model.rate_bps
        self.loss = model.loss
        self.tick = model.tick
        self.index_of = {host: index for index, host in enumerate(self.hosts)}
        self.uplink_free = [0.0] * count
        self.bytes_sent = [0] * count
        #: Writes handed to any link (one per bearer write: a batch of SDUs), for the cost per write.
        self.writes = 0
        self._healed = trio.Event()
        self._pipes = 0
        #: Booked wake-ups: the arrival times, earliest first (a heap of bare floats: with thousands
        #: booked, a heap of tuples spent more on reaching its entries than on ordering them), and the
        #: pipe or pipes booked at each (a list when several are). The order of the readers woken at
        #: one jump does not matter: trio runs each batch of woken tasks in its own order
        #: (:func:`lab.simnet.checks.deterministic_scheduling`: by creation, then shuffled by the seed).
        self._times: list[float] = []
        self._booked: dict[float, _Pipe | list[_Pipe]] = {}
        self._clock_followed = False
        self._ports = [32768] * count
        #: Actions at a virtual time (a connection's first packet from another process), earliest
        #: first: (time, order, action).
        self._timed: list[tuple[float, int, Callable[[], None]]] = []
        self._timed_count = 0
        #: The run's time: trio's ``current_time`` until the virtual clock follows this network, then
        #: the clock's own method (one call instead of trio's two wrappers, on every read and write).
        self.now: Callable[[], float] = current_time

    def expect(self, at: float, pipe: _Pipe) -> None:
        """Wake ``pipe``'s reader at ``at`` (the virtual clock calls :meth:`deliver`)."""
        if not self._clock_followed:
            self._follow_clock()
        booked = self._booked
        already = booked.get(at)
        if already is None:
            booked[at] = pipe
            heapq.heappush(self._times, at)
        elif type(already) is list:
            already.append(pipe)
        else:
            booked[at] = [already, pipe]

    def _follow_clock(self) -> None:
        clock = trio.lowlevel.current_clock()
        follow = getattr(clock, "follow", None)
        if follow is None:
            raise RuntimeError("simulated links run on lab.simnet.checks.VirtualClock, "
                               f"not {type(clock).__name__}")
        follow(self)
        self._clock_followed = True
        self.now = clock.current_time

    def next_arrival(self) -> float:
        """The earliest booked wake-up (inf: none)."""
        times = self._times
        first = times[0] if times else math.inf
        if self._timed and self._timed[0][0] < first:
            return self._timed[0][0]
        return first

    def at(self, when: float, action: Callable[[], None]) -> None:
        """Call ``action`` at virtual time ``when`` (from :meth:`deliver`, like a reader's wake-up)."""
        self._timed_count += 1
        heapq.heappush(self._timed, (when, self._timed_count, action))
        if not self._clock_followed:
            self._follow_clock()

    def deliver(self, now: float) -> None:
        """Reschedule every reader whose data has arrived by ``now``; the virtual clock calls this
        when no task can run, before it moves time on."""
        times = self._times
        booked = self._booked
        pop = heapq.heappop
        reschedule = trio.lowlevel.reschedule
        while times and times[0] <= now:
            at = pop(times)
            due = booked.pop(at)
            for pipe in due if type(due) is list else (due,):
                # ``pipe``'s booking at ``at`` is due: wake its reader if its first write is in.
                if pipe.expected_at == at:
                    pipe.expected_at = None
                task = pipe.waiter
                if task is None:
                    continue
                queue = pipe.queue
                if queue and queue[0][0] <= now:
                    pipe.waiter = None
                    reschedule(task)
                else:
                    pipe._wake()  # a stale booking: book the current first arrival, if any
        timed = self._timed
        while timed and timed[0][0] <= now:
            heapq.heappop(timed)[2]()

    def transport(self, index: int) -> SimTransport:
        return SimTransport(self, index)

    def separated(self, a: int, b: int) -> bool:
        isolated = self.isolated
        return bool(isolated) and ((a in isolated) != (b in isolated))

    def cut(self, isolated: frozenset[int] | set[int]) -> None:
        """Isolate ``isolated`` from every other node (connections stay open, writes are held)."""
        self.isolated = frozenset(isolated)
        self._healed = trio.Event()

    def heal(self) -> None:
        now = trio.current_time()
        self.isolated = frozenset()
        held, self.held = self.held, set()
        for pipe in sorted(held, key=lambda p: p.serial):
            pipe.release(now)
        self._healed.set()

    async def wait_healed(self) -> None:
        await self._healed.wait()

    def _pipe(self, src: int, dst: int, kind: type[_Pipe] = _Pipe, key: int | None = None) -> _Pipe:
        """A new pipe from ``src`` to ``dst``; one crossing to another process is named by its ``key``
        in both, and its randomness follows from that name."""
        self._pipes += 1
        name = self._pipes if key is None else f"k{key}"
        rng = random.Random(f"dmq-simnet-link/{self.model.seed}/{src}/{dst}/{name}")
        return kind(self, self._pipes, src, dst, rng, key)

    def remote_connection(self, src: int, dst: int, out_key: int, in_key: int) -> tuple[_Pipe, _Pipe]:
        """The two pipes of a connection between this process's node ``src`` and another process's
        node ``dst``: ``src``'s writing end of ``out_key`` and its reading end of ``in_key``."""
        return self._pipe(src, dst, _OutboundPipe, out_key), self._pipe(dst, src, _Pipe, in_key)

    def ephemeral(self, index: int) -> int:
        port = self._ports[index]
        self._ports[index] = port + 1 if port < 60999 else 32768
        return port


class SimTransport:
    """Node ``index``'s view of the simulated network (a :class:`dmq.diffusion.transport.Transport`)."""

    def __init__(self, net: SimNetwork, index: int) -> None:
        self.net = net
        self.index = index

    async def listen(self, host: str, port: int) -> list:
        address = (host, port)
        if self.net.index_of.get(host) != self.index:
            raise OSError(errno.EADDRNOTAVAIL, f"{host} is not this node's address")
        if address in self.net.listeners:
            raise OSError(errno.EADDRINUSE, "address already in use")
        listener = SimListener(self.net, address)
        self.net.listeners[address] = listener
        await trio.lowlevel.checkpoint()
        return [(listener, address)]

    async def connect(self, host: str, port: int) -> Bearer:
        net, src = self.net, self.index
        dst = net.index_of.get(host)
        if dst is None:
            await trio.lowlevel.checkpoint()
            raise OSError(errno.EHOSTUNREACH, f"no route to {host}")
        shard = net.shard
        if shard is not None and not shard.runs(dst):
            return Bearer(await shard.connect(src, dst, port, f"{host}:{port}",
                                              f"{net.hosts[src]}:{net.ephemeral(src)}"))
        while net.separated(src, dst):
            await net.wait_healed()
        await trio.sleep(net.model.rtt(src, dst))
        listener = net.listeners.get((host, port))
        if listener is None or listener.closed or net.separated(src, dst):
            raise OSError(errno.ECONNREFUSED, f"connection refused by {host}:{port}")
        outgoing, incoming = net._pipe(src, dst), net._pipe(dst, src)
        client = SimStream(incoming, outgoing, f"{host}:{port}")
        server = SimStream(outgoing, incoming, f"{net.hosts[src]}:{net.ephemeral(src)}")
        listener.send.send_nowait(server)
        return Bearer(client)

    def peer_label(self, stream: trio.abc.Stream) -> str:
        return stream.label if isinstance(stream, SimStream) else "unknown"
