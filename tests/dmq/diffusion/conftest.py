"""Fixtures of the diffusion tests: a stake file with staked, unstaked and unknown pools, and
a node under test with one healthy peer."""

from __future__ import annotations

import pytest

from miniprotocols.local_msg_submission import ACCEPTED

from dmq.diffusion import PeerState

from .network import NOW, Network, local_roots, pool, submit, wait_until, write_stake_file

#: Pools 0..9 have stake; pool 20 is listed with zero set stake; pool 30 is not listed at all.
STAKED = list(range(10))
UNSTAKED = 20
UNKNOWN = 30


@pytest.fixture
def stake_file(tmp_path):
    return write_stake_file(tmp_path / "stake.json", [pool(n) for n in STAKED], unstaked=[pool(UNSTAKED)])


class Pair:
    """X under test and B, a healthy peer holding one connection to X."""

    def __init__(self, net: Network, x, b) -> None:
        self.net, self.x, self.b = net, x, b
        self._tag = 1000

    @property
    def link(self):
        return self.b.node.diffusion.peers.get(f"127.0.0.1:{self.x.port}")

    async def assert_healthy(self) -> None:
        """B's one connection to X survives, and a new message from B still reaches X."""
        assert self.link.connections == 1 and self.link.state is PeerState.HOT
        self._tag += 1
        message = pool(9).sign(self._tag, int(NOW) + 900)
        assert await submit(self.b, [message]) == [ACCEPTED]
        await wait_until(lambda: message.message_id in self.x.held(), 5, what="B's message at X")
        assert self.link.connections == 1


@pytest.fixture
async def pair(stake_file, nursery):
    """X, the node under test, and B, a healthy peer that dialled X from its topology."""
    net = Network(nursery, stake_file)
    x = await net.start("x")
    b = await net.start("b", local_roots(x.port))
    await wait_until(lambda: b.node.diffusion.peers.get(f"127.0.0.1:{x.port}") is not None
                     and b.node.diffusion.peers.get(f"127.0.0.1:{x.port}").state is PeerState.HOT, 5,
                     what="B connected to X")
    return Pair(net, x, b)
