"""CPU per handshake on the server side of a local connection, as a Mithril signer makes it.

A Mithril signer opens a new connection for every message, so the node's local socket runs
one handshake per message. Here each connection is a real Unix socket pair (socketpair) and
the client's proposal has already arrived when the server starts, as it has when the node
accepts a signer's connection. The figure is the CPU time of ``run_server`` alone (process
time around the call; the proposal is there and the reply fits the socket buffer, so the
call never waits and nothing else runs during it), in three cases:

* remembered: DMQ N2C (4097) with the node's :class:`~handshake.driver.ServerAnswers`, the
  local socket's steady state;
* fresh N2C: the same proposal without remembered answers (decoded, decided, encoded);
* fresh N2N: a DMQ node-to-node proposal (versions 1 and 2), as an inbound peer sends it;
* remembered N2C without the socket: the first case on a bearer whose socket calls are
  stubbed (the proposal is handed over as an SDU already read, the reply's write returns at
  once): the Python the handshake runs per connection, which varies far less with the
  machine's load than the system calls do.

Each case runs ``--rounds`` rounds of ``--count`` handshakes; the best round is reported
(on a shared machine the other rounds measure the neighbours too).

    .venv/bin/python bench/handshake_cost.py [--count 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from handshake import (DMQ_MAINNET_MAGIC, DMQ_NODE_TO_CLIENT, DMQ_NODE_TO_NODE,  # noqa: E402
                       dmq_node_to_client_versions, dmq_node_to_node_versions, run_server)
from handshake.driver import ServerAnswers  # noqa: E402
from ouroboros_mux.bearer import Bearer  # noqa: E402
from ouroboros_mux.sdu import SDU, encode_sdu  # noqa: E402

N2C_PROPOSE = bytes.fromhex("8200a1191001821aad964a09f4")
N2N_PROPOSE = bytes.fromhex("8200a201841aad964a09f401f402841aad964a09f401f4")


async def _one_round(count: int, table, link, proposal: bytes, answers) -> float:
    """Seconds of process CPU per ``run_server`` call, over ``count`` connections."""
    wire = encode_sdu(SDU(0, False, proposal))
    spent = 0.0
    for _ in range(count):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        theirs.sendall(wire)
        bearer = Bearer(trio.SocketStream(trio.socket.from_stdlib_socket(ours)))
        start = time.process_time()
        if answers is None:
            result = await run_server(bearer, table, link)
        else:
            result = await run_server(bearer, table, link, answers=answers)
        spent += time.process_time() - start
        assert result.version in table
        await bearer.aclose()
        theirs.close()
    return spent / count


class _NoSocketBearer(Bearer):
    """A bearer whose socket calls are stubbed: reads return the proposal, writes return at once."""

    def __init__(self, proposal: bytes) -> None:  # no stream: nothing here touches one
        self.sdu_timeout = 30.0
        self._gather_socket = self  # writes take the gathered path, which stops here
        self._timestamp = lambda: 0
        self._sdu = SDU(0, False, proposal)

    def read_sdu_nowait(self) -> SDU:
        return self._sdu

    async def write_parts(self, parts: list, sdu_count: int) -> None:
        pass


async def _one_round_without_socket(count: int, table, link, proposal: bytes, answers) -> float:
    bearer = _NoSocketBearer(proposal)
    start = time.process_time()
    for _ in range(count):
        await run_server(bearer, table, link, answers=answers)
    return (time.process_time() - start) / count


async def main(count: int, rounds: int) -> None:
    n2c = dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)
    n2n = dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)
    cases = [
        ("remembered N2C (4097, ServerAnswers)", n2c, DMQ_NODE_TO_CLIENT, N2C_PROPOSE,
         ServerAnswers(n2c, DMQ_NODE_TO_CLIENT)),
        ("fresh N2C (4097, no remembered answers)", n2c, DMQ_NODE_TO_CLIENT, N2C_PROPOSE, None),
        ("fresh N2N (versions 1 and 2)", n2n, DMQ_NODE_TO_NODE, N2N_PROPOSE, None),
    ]
    print(f"Server-side handshake CPU, best of {rounds} rounds of {count:,} connections")
    print(f"  machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    for name, table, link, proposal, answers in cases:
        figures = [await _one_round(count, table, link, proposal, answers) for _ in range(rounds)]
        print(f"  {name}: {min(figures) * 1e6:.1f} µs per handshake "
              f"(rounds: {', '.join(f'{f * 1e6:.1f}' for f in figures)})")
    answers = ServerAnswers(n2c, DMQ_NODE_TO_CLIENT)
    figures = [await _one_round_without_socket(count * 4, n2c, DMQ_NODE_TO_CLIENT, N2C_PROPOSE, answers)
               for _ in range(rounds)]
    print(f"  remembered N2C without the socket calls: {min(figures) * 1e6:.2f} µs per handshake "
          f"(rounds: {', '.join(f'{f * 1e6:.2f}' for f in figures)})")
    print(f"  load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trio.run(main, args.count, args.rounds)
