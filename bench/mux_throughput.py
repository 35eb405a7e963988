"""Throughput of the mux over loopback TCP, against a plain trio socket copy of the same bytes.

For each message size, the same total volume goes three ways in one run:

* plain: ``send_all`` of chunks of that size on a bare trio TCP stream, ``receive_some`` on
  the other end (the ceiling: no framing at all);
* mux x1: one mini-protocol channel sending CBOR messages of that size, the peer's mux
  reassembling and framing them back into whole messages;
* mux x8: eight channels sending concurrently, served round-robin.

The figures of interest are the ratios to the plain copy, which cancel out the machine. Both
runs are single-threaded (sender and receiver in one trio process), so each is also timed in
process CPU time: on a shared machine the wall-clock ratio also measures how often each run
lost the CPU to other processes, the CPU-time ratio only the work done.

    python bench/mux_throughput.py [--megabytes 64] [--sizes 1024,4096,12288,65536] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import trio

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.mux import Mode, Mux, Provenance

UNLIMITED = 0xFFFFFFFF


def cbor_bytes_message(size: int) -> bytes:
    """A CBOR byte string whose whole encoding is ``size`` bytes (``size`` >= 1)."""
    if size <= 24:
        return bytes([0x40 | (size - 1)]) + bytes(size - 1)
    for head, arg_len in ((0x58, 1), (0x59, 2), (0x5A, 4)):
        body = size - 1 - arg_len
        if body < 256**arg_len:
            return bytes([head]) + body.to_bytes(arg_len, "big") + bytes(body)
    raise ValueError(f"no byte string encodes to {size} bytes")


async def tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    client = await trio.open_tcp_stream("127.0.0.1", listeners[0].socket.getsockname()[1])
    server = await listeners[0].accept()
    await listeners[0].aclose()
    return client, server


async def plain_copy(total: int, chunk: int) -> tuple[float, float]:
    """Wall and CPU seconds to move ``total`` bytes in ``chunk``-sized writes over a bare socket."""
    a, b = await tcp_pair()
    data = bytes(chunk)
    count = total // chunk

    async def send():
        for _ in range(count):
            await a.send_all(data)

    received = 0
    start, cpu = time.perf_counter(), time.process_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        while received < count * chunk:
            received += len(await b.receive_some())
    elapsed = time.perf_counter() - start, time.process_time() - cpu
    await a.aclose()
    await b.aclose()
    return elapsed


async def mux_copy(total: int, size: int, protocols: int) -> tuple[float, float]:
    """Wall and CPU seconds to move ``total`` bytes as ``size``-byte messages over ``protocols`` channels."""
    a, b = await tcp_pair()
    sender = Mux(Bearer(a), Provenance.OUTBOUND)
    receiver = Mux(Bearer(b), Provenance.INBOUND)
    pairs = [(sender.register(n, Mode.INITIATOR, UNLIMITED), receiver.register(n, Mode.RESPONDER, UNLIMITED))
             for n in range(protocols)]
    message = cbor_bytes_message(size)
    per_channel = total // size // protocols

    async def send(channel):
        for _ in range(per_channel):
            await channel.send(message)
        channel.finish()

    async def receive(channel):
        for _ in range(per_channel):
            await channel.recv_message()
        channel.finish()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender.run)
        nursery.start_soon(receiver.run)
        start, cpu = time.perf_counter(), time.process_time()
        async with trio.open_nursery() as flows:
            for out, inn in pairs:
                flows.start_soon(send, out)
                flows.start_soon(receive, inn)
        elapsed = time.perf_counter() - start, time.process_time() - cpu
        sender.stop()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=64, help="volume per measurement (MiB)")
    parser.add_argument("--sizes", default="1024,4096,12288,65536", help="message / chunk sizes in bytes")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per cell")
    args = parser.parse_args()
    total = args.megabytes * 2**20
    sizes = [int(s) for s in args.sizes.split(",")]

    async def measure():
        rows = []
        for size in sizes:
            volume = total // 8 if size < 4096 else total  # small messages: per-message cost dominates
            wall, cpu = {}, {}
            for _ in range(args.repeat):
                for label, job in (("plain", lambda: plain_copy(volume, size)),
                                   ("mux x1", lambda: mux_copy(volume, size, 1)),
                                   ("mux x8", lambda: mux_copy(volume, size, 8))):
                    seconds, cpu_seconds = await job()
                    wall[label] = min(wall.get(label, float("inf")), seconds)
                    cpu[label] = min(cpu.get(label, float("inf")), cpu_seconds)
            rows.append((size, volume, {k: volume / v / 2**20 for k, v in wall.items()},
                         {k: cpu["plain"] / v for k, v in cpu.items()}))
        return rows

    rows = trio.run(measure)
    print(f"{'size':>7} {'MiB':>5} {'plain MiB/s':>12} {'mux x1 MiB/s':>13} {'ratio':>6} "
          f"{'mux x8 MiB/s':>13} {'ratio':>6} {'CPU ratio x1':>13} {'x8':>5}")
    for size, volume, rate, cpu_ratio in rows:
        print(f"{size:>7} {volume // 2**20:>5} {rate['plain']:>12.0f} {rate['mux x1']:>13.0f} "
              f"{rate['mux x1'] / rate['plain']:>6.2f} {rate['mux x8']:>13.0f} {rate['mux x8'] / rate['plain']:>6.2f} "
              f"{cpu_ratio['mux x1']:>13.2f} {cpu_ratio['mux x8']:>5.2f}")


if __name__ == "__main__":
    main()
