"""The simulated links: bytes arrive after the one-way latency, in order, at the node's rate,
held across a partition, refused where nothing listens; all on trio's virtual clock."""

from __future__ import annotations

import errno
import math

import pytest
import trio

from lab.simnet.links import MIN_RTO, LinkModel, SimNetwork
from lab.simnet.regions import REGIONS, RELAY_SHARE, RTT_MS, place_nodes

HOSTS = ["198.18.0.1", "198.18.0.2"]
RTT = 0.1  # seconds, between the two nodes


def network(**model) -> SimNetwork:
    model.setdefault("jitter", 0.0)
    model.setdefault("rate_bps", None)
    return SimNetwork(LinkModel(rtt=lambda a, b: RTT, **model), HOSTS)


async def connected(net: SimNetwork):
    """(client stream, server stream, time the connect returned) of one connection from node 0 to node 1."""
    [(listener, _)] = await net.transport(1).listen(HOSTS[1], 3001)
    bearer = await net.transport(0).connect(HOSTS[1], 3001)
    connected_at = trio.current_time()
    server = await listener.accept()
    return bearer.stream, server, connected_at


async def read_exactly(stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        assert chunk, "end of stream"
        data += chunk
    return data


async def test_a_connect_takes_one_round_trip_and_bytes_one_way(virtual_clock):
    client, server, connected_at = await connected(network())
    assert connected_at == pytest.approx(RTT)
    await client.send_all(b"hello")
    assert await server.receive_some(100) == b"hello"
    assert trio.current_time() == pytest.approx(connected_at + RTT / 2)
    await server.send_all(b"back")
    assert await client.receive_some(100) == b"back"
    assert trio.current_time() == pytest.approx(connected_at + RTT)


async def test_jitter_never_reorders_and_stays_in_its_bound(virtual_clock):
    client, server, _ = await connected(network(jitter=0.5, seed=3))
    sent_at = trio.current_time()
    for n in range(200):
        await client.send_all(n.to_bytes(2, "big"))
    received = await read_exactly(server, 400)
    assert [int.from_bytes(received[i:i + 2], "big") for i in range(0, 400, 2)] == list(range(200))
    assert RTT / 2 <= trio.current_time() - sent_at <= RTT / 2 * 1.5 + 1e-9


async def _arrivals(net: SimNetwork) -> list[tuple[float, int]]:
    """(seconds after the writes, number) of 200 two-byte writes made at one instant, as the reader gets them."""
    client, server, _ = await connected(net)
    sent_at = trio.current_time()
    for n in range(200):
        await client.send_all(n.to_bytes(2, "big"))
    got: list[tuple[float, int]] = []
    buffer = b""
    while len(got) < 200:
        buffer += await server.receive_some(400)
        while len(buffer) >= 2:
            got.append((trio.current_time() - sent_at, int.from_bytes(buffer[:2], "big")))
            buffer = buffer[2:]
    return got


async def test_a_tick_puts_each_arrival_off_to_its_next_multiple_and_the_reader_wakes_once_a_tick(virtual_clock):
    tick = 0.01
    exact = await _arrivals(network(jitter=0.5, seed=3))
    ticked = await _arrivals(network(jitter=0.5, seed=3, tick=tick))
    assert [n for _, n in ticked] == [n for _, n in exact] == list(range(200))  # TCP's order either way
    wakes = sorted({at for at, _ in ticked})
    assert len(wakes) <= 4 < len({at for at, _ in exact})  # a 25 ms spread of jitter: four ticks at most
    for (late, _), (on_time, _) in zip(ticked, exact):
        assert on_time - 1e-9 <= late < on_time + tick  # never sooner, less than a tick later
    offset = trio.current_time() - ticked[-1][0]  # the virtual time the tick run's writes were made
    for at in wakes:
        ticks = (offset + at) / tick
        assert abs(ticks - round(ticks)) < 1e-6, at


async def test_bandwidth_is_a_serialisation_delay(virtual_clock):
    client, server, _ = await connected(network(rate_bps=8e6, send_buffer=1 << 30))
    sent_at = trio.current_time()
    await client.send_all(bytes(1_000_000))  # 8 Mbit at 8 Mbit/s: one second up, one second down
    await read_exactly(server, 1_000_000)
    assert trio.current_time() - sent_at == pytest.approx(RTT / 2 + 2.0)


async def test_a_write_from_a_near_peer_does_not_wait_behind_one_still_on_its_way_from_afar(virtual_clock):
    # Node 0 is 0.3 s from node 2, node 1 is 2 ms from it. Node 0 writes first; node 1's write,
    # made a millisecond later, arrives long before node 0's, and nothing holds it at node 2's end
    # (a receiving queue booked in the order writes are made held it until node 0's had arrived).
    hosts = ["198.18.0.1", "198.18.0.2", "198.18.0.3"]
    net = SimNetwork(LinkModel(rtt=lambda a, b: 0.3 if min(a, b) == 0 else 0.002, jitter=0.0, rate_bps=8e6), hosts)
    [(listener, _)] = await net.transport(2).listen(hosts[2], 3001)
    far = (await net.transport(0).connect(hosts[2], 3001)).stream
    near = (await net.transport(1).connect(hosts[2], 3001)).stream
    far_in, near_in = await listener.accept(), await listener.accept()
    sent_at = trio.current_time()
    await far.send_all(bytes(1_000))  # 1 ms each way at 8 Mbit/s
    await trio.sleep(0.001)
    await near.send_all(bytes(1_000))
    await read_exactly(near_in, 1_000)
    assert trio.current_time() - sent_at == pytest.approx(0.001 + 0.001 + 0.001 + 0.001)
    await read_exactly(far_in, 1_000)
    assert trio.current_time() - sent_at == pytest.approx(0.001 + 0.15 + 0.001)


async def test_a_full_send_buffer_makes_the_writer_wait(virtual_clock):
    client, _, _ = await connected(network(rate_bps=8e6, send_buffer=100_000))
    started = trio.current_time()
    await client.send_all(bytes(1_000_000))
    # The write returns once no more than the buffer (0.1 s at this rate) is left to send.
    assert trio.current_time() - started == pytest.approx(0.9)


async def test_loss_is_a_retransmission_delay(virtual_clock):
    client, server, _ = await connected(network(loss=0.999, seed=1))
    sent_at = trio.current_time()
    await client.send_all(b"x")
    assert await server.receive_some(10) == b"x"
    late = trio.current_time() - sent_at - RTT / 2
    assert late > 0 and late == pytest.approx(round(late / (MIN_RTO + RTT)) * (MIN_RTO + RTT))


async def test_a_partition_holds_writes_until_the_first_retransmission_after_the_heal(virtual_clock):
    net = network()
    client, server, _ = await connected(net)
    net.cut({1})
    written = trio.current_time()
    await client.send_all(b"held")
    with trio.move_on_after(5):
        await server.receive_some(10)
        pytest.fail("a write crossed the cut")
    net.heal()
    healed = trio.current_time()
    assert await server.receive_some(10) == b"held"
    rto = MIN_RTO + RTT
    # Retransmissions at written + rto * (2^k - 1): 0.3, 0.9, 2.1, 4.5, 9.3 s; the first after 5 s is 9.3 s.
    assert healed - written == pytest.approx(5.0)
    assert trio.current_time() - written == pytest.approx(rto * 31 + RTT / 2)


async def test_a_connect_across_a_cut_waits_for_the_heal(virtual_clock):
    net = network()
    await net.transport(1).listen(HOSTS[1], 3001)
    net.cut({0})
    with trio.move_on_after(3) as waited:
        await net.transport(0).connect(HOSTS[1], 3001)
    assert waited.cancelled_caught


async def test_nothing_listening_is_a_refused_connection(virtual_clock):
    net = network()
    with pytest.raises(OSError) as raised:
        await net.transport(0).connect(HOSTS[1], 3001)
    assert raised.value.errno == errno.ECONNREFUSED
    assert trio.current_time() == pytest.approx(RTT)


async def test_closing_one_end_is_end_of_stream_then_reset(virtual_clock):
    client, server, _ = await connected(network())
    await client.send_all(b"last")
    await client.aclose()
    assert await server.receive_some(10) == b"last"
    assert await server.receive_some(10) == b""
    with pytest.raises(trio.BrokenResourceError):
        await server.send_all(b"too late")


def test_the_region_table_is_symmetric_and_the_placement_follows_the_shares():
    n = len(REGIONS)
    assert all(RTT_MS[i][j] == RTT_MS[j][i] > 0 for i in range(n) for j in range(n))
    assert abs(sum(RELAY_SHARE.values()) - 1) < 1e-9
    placed = place_nodes(1000, seed=5)
    assert len(placed) == 1000 and placed == place_nodes(1000, seed=5)
    for index, name in enumerate(REGIONS):
        assert abs(placed.count(index) - 1000 * RELAY_SHARE[name]) <= 1



async def test_each_reader_wakes_at_its_own_arrival_and_readers_due_together_wake_together(virtual_clock):
    # Node 0 writes to nodes 1, 2 and 3 at once; 0-1 and 0-3 are 0.2 s apart, 0-2 0.1 s: the
    # network books one wake-up per arrival time, the one at 0.1 s for two readers.
    hosts = ["198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.0.4"]
    rtts = {1: 0.2, 2: 0.1, 3: 0.2}
    net = SimNetwork(LinkModel(rtt=lambda a, b: rtts[max(a, b)], jitter=0.0, rate_bps=None), hosts)
    pairs = []
    for index in (1, 2, 3):
        [(listener, _)] = await net.transport(index).listen(hosts[index], 3001)
        bearer = await net.transport(0).connect(hosts[index], 3001)
        pairs.append((bearer.stream, await listener.accept()))
    woken: list[tuple[float, bytes]] = []
    sent_at = math.inf

    async def read(stream) -> None:
        data = await stream.receive_some(100)
        woken.append((round(trio.current_time() - sent_at, 9), data))

    with trio.fail_after(5):  # a reader never woken fails here, at 5 virtual seconds
        async with trio.open_nursery() as nursery:
            for _, server in pairs:
                nursery.start_soon(read, server)
            await trio.sleep(1)  # every reader waits, nothing on the way
            sent_at = trio.current_time()
            for n, (client, _) in enumerate(pairs):
                assert client.send_parts_nowait([b"to", bytes([n])]) == 3
    assert sorted(woken) == [(0.05, b"to\x01"), (0.1, b"to\x00"), (0.1, b"to\x02")]


async def test_a_reader_that_gave_up_before_its_bytes_arrived_gets_them_at_their_arrival(virtual_clock):
    client, server, _ = await connected(network())
    await client.send_all(b"on the way")
    sent_at = trio.current_time()
    with trio.move_on_after(RTT / 4):
        await server.receive_some(100)  # booked for RTT / 2, cancelled before
        pytest.fail("bytes arrived before their latency")
    assert await server.receive_some(100) == b"on the way"
    assert trio.current_time() - sent_at == pytest.approx(RTT / 2)
