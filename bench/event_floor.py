"""What one socket event costs on this machine, before any protocol: the floor under every round.

A node of ``bench/diffusion_cost.py``'s mesh handles about 8 socket reads and 8.5 writes per
message (its ``--cprofile`` counts them), in about 6 rounds of trio's run loop. Whatever the
protocol code costs comes on top of what the event loop and the kernel cost per event, so this
measures that part alone: an echo process that does nothing but read each arriving message and
send it back, on ``--sockets`` socket pairs, while a driver process sends one small message on
every socket ``--rate`` times a second (a publish announced on every connection at once, the
mesh's pattern at mainnet's rate). The echo's CPU time (user and system, from ``getrusage``)
divided by the events it handled is the figure, for three echoes alternated ``--repeat`` times:

* ``plain``: a bare ``select.epoll`` loop, level-triggered, no framework;
* ``trio``: one trio task per socket, ``wait_readable`` then ``recv`` and ``send`` (how the
  node's mux reader waits);
* ``trio-epoll``: one trio task waiting on a shared epoll descriptor and serving every ready
  socket from it (a reactor inside trio: one task wake per loop round instead of one per socket);
* ``trio-kept``: a task per socket as in ``trio``, but each socket registered once with a shared
  level-triggered epoll descriptor that one trio task waits on and that wakes the ready sockets'
  tasks (``trio.lowlevel.reschedule``): what a connection's reader would save if it did not
  re-arm trio's one-shot registration (an ``epoll_ctl`` call) on every wait, keeping its task.

The driver's own CPU is not counted. The figures move with the machine's load (a wake after a
sleep costs more on a busy virtual machine); compare modes within one run.

    .venv/bin/python bench/event_floor.py [--rate 25] [--messages 1500] [--sockets 5] [--repeat 2] [--stagger]
        [--modes plain,trio,trio-epoll,trio-kept]
"""

from __future__ import annotations

import argparse
import os
import resource
import select
import socket
import statistics
import time

import trio

MESSAGE = b"x" * 60


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _serve_ready(sock: socket.socket) -> bool:
    """Echo what ``sock`` holds; False at end of stream."""
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return True
    if not data:
        return False
    sock.send(data)
    return True


def _poller(socks: list[socket.socket]) -> tuple[select.epoll, dict[int, socket.socket]]:
    """A level-triggered epoll watching every socket for input, and the sockets by descriptor."""
    poller = select.epoll()
    by_fd = {sock.fileno(): sock for sock in socks}
    for fd in by_fd:
        poller.register(fd, select.EPOLLIN)
    return poller, by_fd


def _echo_plain(socks: list[socket.socket]) -> int:
    poller, by_fd = _poller(socks)
    live, events = len(socks), 0
    while live:
        for fd, _ in poller.poll():
            events += 1
            if not _serve_ready(by_fd[fd]):
                poller.unregister(fd)
                live -= 1
    return events


async def _echo_trio(socks: list[socket.socket]) -> int:
    events = 0

    async def one(sock: socket.socket) -> None:
        nonlocal events
        while True:
            await trio.lowlevel.wait_readable(sock)
            events += 1
            if not _serve_ready(sock):
                return

    async with trio.open_nursery() as nursery:
        for sock in socks:
            nursery.start_soon(one, sock)
    return events


async def _echo_trio_epoll(socks: list[socket.socket]) -> int:
    poller, by_fd = _poller(socks)
    live, events = len(socks), 0
    while live:
        await trio.lowlevel.wait_readable(poller.fileno())
        for fd, _ in poller.poll(0):
            events += 1
            if not _serve_ready(by_fd[fd]):
                poller.unregister(fd)
                live -= 1
    return events


async def _echo_trio_kept(socks: list[socket.socket]) -> int:
    poller = select.epoll()
    by_fd = {sock.fileno(): sock for sock in socks}
    for fd in by_fd:
        poller.register(fd, select.EPOLLIN | select.EPOLLET)  # once per socket, never re-armed
    waiting: dict[int, trio.lowlevel.Task] = {}
    ready: set[int] = set()  # an edge reported while the socket's task was not waiting
    events = 0

    async def one(sock: socket.socket) -> None:
        nonlocal events
        fd = sock.fileno()
        try:
            while True:
                if fd in ready:
                    ready.discard(fd)
                    await trio.lowlevel.checkpoint()
                else:
                    waiting[fd] = trio.lowlevel.current_task()
                    await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.SUCCEEDED)
                events += 1
                if not _serve_ready(sock):
                    return
        finally:
            waiting.pop(fd, None)
            poller.unregister(fd)
            del by_fd[fd]

    async def wake() -> None:
        while True:
            await trio.lowlevel.wait_readable(poller.fileno())
            for fd, _ in poller.poll(0):
                task = waiting.pop(fd, None)
                if task is None:
                    ready.add(fd)
                else:
                    trio.lowlevel.reschedule(task)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wake)
        async with trio.open_nursery() as sockets:
            for sock in socks:
                sockets.start_soon(one, sock)
        nursery.cancel_scope.cancel()
    return events


ECHOES = {
    "plain": _echo_plain,
    "trio": lambda socks: trio.run(_echo_trio, socks),
    "trio-epoll": lambda socks: trio.run(_echo_trio_epoll, socks),
    "trio-kept": lambda socks: trio.run(_echo_trio_kept, socks),
}


def measure(mode: str, rate: float, messages: int, sockets: int, stagger: bool = False) -> float:
    """µs of the echo's CPU per event (a read and its send back).

    ``stagger``: each socket's message is sent on its own, spread over the interval, so that no two
    events come together (the worst case for an echo that serves every ready socket per wake).
    """
    pairs = [socket.socketpair() for _ in range(sockets)]
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echo
        try:
            os.close(reader)
            mine = [ours for ours, _ in pairs]
            for _, theirs in pairs:
                theirs.close()
            for sock in mine:
                sock.setblocking(False)
            start = _cpu()
            events = ECHOES[mode](mine)
            os.write(writer, f"{(_cpu() - start) / max(events, 1) * 1e6}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    mine = [theirs for _, theirs in pairs]
    for ours, _ in pairs:
        ours.close()
    due = time.monotonic()
    groups = [[sock] for sock in mine] if stagger else [mine]
    for _ in range(messages):
        for group in groups:
            due += 1.0 / rate / len(groups)
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            for sock in group:
                sock.send(MESSAGE)
            for sock in group:
                sock.recv(65536)
    for sock in mine:
        sock.close()
    figure = float(os.read(reader, 64).decode())
    os.close(reader)
    os.waitpid(pid, 0)
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=25.0, help="messages a second, each on every socket")
    parser.add_argument("--messages", type=int, default=1500)
    parser.add_argument("--sockets", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2, help="rounds of every mode, alternated")
    parser.add_argument("--stagger", action="store_true",
                        help="send on one socket at a time, spread over the interval (no two events together)")
    parser.add_argument("--modes", default=",".join(ECHOES), help=f"comma-separated, of {', '.join(ECHOES)}")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start")
    print(f"{args.messages} messages at {args.rate:g}/s on each of {args.sockets} sockets"
          f"{', staggered' if args.stagger else ''}; "
          f"µs of the echo's CPU per event (a read and a send):")
    modes = args.modes.split(",")
    figures: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.repeat):
        for mode in modes:
            figures[mode].append(measure(mode, args.rate, args.messages, args.sockets, args.stagger))
            print(f"  {mode:<11} {figures[mode][-1]:7.1f}", flush=True)
    print("medians: " + ", ".join(f"{mode} {statistics.median(values):.1f}" for mode, values in figures.items()))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
