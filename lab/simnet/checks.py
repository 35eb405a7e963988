"""What the simulation shares or runs differently from a node on its own machine, and why.

* :class:`SharedKesChecks`: check 10 (the Sum6KES signature) of one message gives the same
  answer at every node, since every node checks the same received bytes. Thousands of
  simulated nodes in one process would otherwise spend most of the run repeating it, so
  the answer is computed once per ``(verification key, evolution, signed bytes,
  signature)`` and remembered; every other check, and everything around it, runs at every
  node. What the check costs a real node is measured by the real-process part
  (``dmq netlab``, ``bench/validation_throughput.py``).
* :class:`SharedOpcertChecks`: the same for check 9, the Ed25519 check of an operational
  certificate's cold signature. Each node keeps its own cache of verified certificates
  (:class:`dmq.validation.opcert_cache.OpcertCache`), so a running node pays it once per pool;
  but with 3,000 pools each signing every 120 s, nearly every message a node sees in a run's
  first two minutes is its pool's first, and a thousand nodes repeated the same 75 us check for
  it (about 2 % of a 300-node run's CPU). The answer is computed once per distinct certificate and cold
  key (the cache's own key) and remembered; the nodes' caches, hits and misses run as they do.
* :class:`SharedRegistrationVerdicts`: the same for a Mithril signer registration
  (``verify_registration``, docs/mithril-registration.md 3): every node verifies the same
  received bytes at the same KES period, the one the carrying message names (8.3), so the
  verdict is the same everywhere. Its proof of possession costs 3 to 4 ms; 3,000
  registrations an epoch at 100 nodes would be 20 CPU minutes an epoch of one check, so the
  verdict is computed once per distinct registration and KES period and remembered. What a
  registration costs a real node is measured by ``bench/mithril_registration_verify.py``.
* :class:`SharedDecodes`: the message bytes every node receives are decoded once, and the
  decoded message (the bytes and the fields sliced out of them) held once for every node;
  memory, not CPU: see the class.
* :class:`SharedStakeFiles`: the stake file (3,000 pools at mainnet's size) is read and
  checked once, and every node's stake view holds that one read-only pool map
  (:meth:`dmq.stake.StakeView.from_stake_file`); memory and start-up time, not behaviour: each
  node read the same file into an equal map of its own, about 0.58 MB per node.
* :func:`run_inline`: the mempool's blocking commit in the loop's own thread. A worker
  thread would let the virtual clock jump while the commit runs, by however long the
  thread happened to take, and a run would not follow from its seed.
* :class:`VirtualClock`: what trio's ``MockClock(autojump_threshold=0)`` does, more cheaply. On
  each jump ``MockClock`` asks the run loop for its statistics, which count the tasks waiting on
  every registered file descriptor; each node's local socket is one, so a jump cost more with
  every node (and there are tens of thousands of jumps a simulated second at a thousand nodes).
* :func:`deterministic_scheduling`: trio breaks ties between tasks woken together at
  random (and between equal deadlines by object address); with this on, each batch of
  woken tasks is ordered by creation and then shuffled by a generator seeded from the run's
  seed, so the same seed schedules the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import math

import trio

from apps.mithril_registration.errors import RegistrationRefused
from apps.mithril_registration.message import SignerRegistration
from apps.mithril_registration.verify import VerifiedSigner, verify_registration
from dmq.kes import kes_verify
from dmq.message import DmqMessage, OperationalCertificate
from dmq.opcert import verify_opcert
from dmq.stake import StakeFile, load_stake_file
from dmq.validation.opcert_cache import OpcertCache

__all__ = ["SharedVerdicts", "SharedKesChecks", "SharedOpcertChecks", "SharedRegistrationVerdicts",
           "SharedDecodes", "SharedStakeFiles", "run_inline", "deterministic_scheduling", "VirtualClock"]


class SharedVerdicts:
    """A pure check computed once per distinct input (``key(*args)``) and remembered, for every node."""

    def __init__(self, verify: Callable[..., bool], key: Callable[..., Hashable]) -> None:
        self._verify = verify
        self._key = key
        self._answers: dict[Hashable, bool] = {}
        self.verified = 0
        self.remembered = 0

    def __call__(self, *args: Any) -> bool:
        key = self._key(*args)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = self._verify(*args)
            self.verified += 1
        else:
            self.remembered += 1
        return answer

    def stats(self) -> dict[str, int]:
        return {"verified": self.verified, "remembered": self.remembered}


class SharedKesChecks(SharedVerdicts):
    """A :data:`dmq.validation.pipeline.KesVerifier` that verifies each distinct
    ``(verification key, evolution, signed bytes, signature)`` once."""

    def __init__(self, verify: Callable[[bytes, int, bytes, bytes], bool] = kes_verify) -> None:
        super().__init__(verify, lambda *args: args)


class SharedOpcertChecks(SharedVerdicts):
    """An :data:`dmq.validation.opcert_cache.OpcertVerifier` (check 9's Ed25519 check of the cold
    signature) that verifies each distinct certificate and cold key once; each node's own
    :class:`~dmq.validation.opcert_cache.OpcertCache` still sits in front of it, as in a running node."""

    def __init__(self, verify: Callable[[OperationalCertificate, bytes], bool] = verify_opcert) -> None:
        super().__init__(verify, OpcertCache.key)


class SharedRegistrationVerdicts:
    """``verify_registration`` that computes each distinct verdict once: the registration (its
    exact texts, which are the carried bytes in Mithril's bytes-hex form), the KES period and
    the stake distribution object (a node asks with one that holds every pool, and weighs stake
    when it fixes a set). A refusal is remembered and raised again."""

    def __init__(self, verify: Callable[..., VerifiedSigner] = verify_registration) -> None:
        self._verify = verify
        self._answers: dict[tuple[SignerRegistration, int | None, int], VerifiedSigner | RegistrationRefused] = {}
        self._distributions: list[Any] = []     # kept alive, so that their ids stay theirs
        self.verified = 0
        self.remembered = 0

    def __call__(self, registration: SignerRegistration, *, stake_distribution: Any,
                 current_kes_period: int | None = None, **rest: Any) -> VerifiedSigner:
        if rest:        # another form of the call than a node's: not shared
            return self._verify(registration, stake_distribution=stake_distribution,
                                current_kes_period=current_kes_period, **rest)
        if not any(d is stake_distribution for d in self._distributions):
            self._distributions.append(stake_distribution)
        key = (registration, current_kes_period, id(stake_distribution))
        answer = self._answers.get(key)
        if answer is None:
            try:
                answer = self._verify(registration, stake_distribution=stake_distribution,
                                      current_kes_period=current_kes_period)
            except RegistrationRefused as refused:
                answer = refused
            self._answers[key] = answer
            self.verified += 1
        else:
            self.remembered += 1
        if isinstance(answer, RegistrationRefused):
            raise answer.with_traceback(None)
        return answer

    def stats(self) -> dict[str, int]:
        return {"verified": self.verified, "remembered": self.remembered}


class SharedDecodes:
    """``Ingress.decode_received`` for every node of a run: equal received message bytes are
    decoded once, and every node that receives them gets that one message (its ``raw`` the first
    node's bytes object).

    A decoded :class:`~dmq.message.DmqMessage` is immutable (a frozen dataclass of ``bytes``,
    ``int`` and a frozen certificate), and equal bytes decode to equal messages, so a node cannot
    tell its own decode from the shared one. Each node still receives the bytes over its links,
    validates the message, journals it in its own store, holds it in its own log and serves it;
    only the immutable objects are shared: the bytes, and the fields sliced out of them (id,
    signed payload, body, signatures, keys, pool id) that the node keeps in its log's index, its
    pools' state and its certificate cache. A thousand nodes each holding their own of every
    message of 10 simulated minutes at mainnet's rate would hold 15 million copies of 1.1 KB of
    bytes and about 0.3 KB of fields kept from the decode: more memory than the machine has.

    The first node's decoder decodes (``decode(raw)``): every node of a run decodes by the same
    rules (one configuration, legacy layout refused). Bytes that do not decode are not kept;
    each node raises its own error. The table keeps every distinct message of the run (a message
    lives 30 minutes in a node).
    """

    def __init__(self) -> None:
        self._held: dict[bytes, DmqMessage] = {}
        self.decoded = 0

    def __call__(self, raw: bytes, decode: Callable[[bytes], DmqMessage]) -> DmqMessage:
        self.decoded += 1
        message = self._held.get(raw)
        if message is None:
            message = self._held[raw] = decode(raw)
        return message

    def stats(self) -> dict[str, int]:
        return {"distinct": len(self._held), "decoded": self.decoded}


class SharedStakeFiles:
    """``assemble_node``'s ``read_stake_file`` for every node of a run: each file read once.

    A parsed :class:`~dmq.stake.StakeFile` is immutable (a frozen record around a read-only map of
    frozen :class:`~dmq.stake.PoolStake` values), so a node cannot tell a shared one from its own;
    a node that installs a new snapshot replaces its view's map, never the shared one. A file
    is read again when its size or modification time changes (a run that rewrites it).
    """

    def __init__(self, read: Callable[[Path], StakeFile] = load_stake_file) -> None:
        self._read = read
        self._held: dict[Path, tuple[tuple[int, int], StakeFile]] = {}
        self.reads = 0

    def __call__(self, path: Path) -> StakeFile:
        path = Path(path)
        stat = path.stat()
        stamp = (stat.st_size, stat.st_mtime_ns)
        held = self._held.get(path)
        if held is None or held[0] != stamp:
            held = self._held[path] = (stamp, self._read(path))
            self.reads += 1
        return held[1]


async def run_inline(function: Callable[..., Any], *args: Any) -> Any:
    """``trio.to_thread.run_sync``'s signature, run in the calling thread (a checkpoint first)."""
    await trio.lowlevel.checkpoint()
    return function(*args)


def deterministic_scheduling(seed: int) -> None:
    """Make trio's choice among runnable tasks follow ``seed`` (for the rest of the process).

    trio's run loop has this switch for Hypothesis (``_ALLOW_DETERMINISTIC_SCHEDULING`` and
    its generator ``_r``); it is private, hence the lookups by name.
    """
    from trio._core import _run

    setattr(_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)
    _run._r.seed(f"dmq-simnet-scheduling/{seed}")


class VirtualClock(trio.abc.Clock):
    """Virtual time that jumps to the next deadline whenever no task can run.

    What ``trio.testing.MockClock(autojump_threshold=0)`` does, without its statistics: the run
    loop asks a clock how long to sleep only when no task is runnable, so every task waits and
    time moves on to the earliest deadline there and then (one pass of the loop per jump;
    MockClock takes two, and counts every registered file descriptor on the second).
    """

    def __init__(self, shard=None) -> None:
        self._now = 0.0
        self._networks: list = []
        #: This process's part of a run over two processes (:class:`lab.simnet.shards.Shard`): time
        #: does not pass a window's end before the windows are exchanged.
        self._shard = shard

    def follow(self, network) -> None:
        """Also jump to ``network``'s next arrival (``next_arrival()``) and, there, let it wake its
        readers (``deliver(now)``): the simulated links' bytes arrive without a cancel scope each."""
        self._networks.append(network)

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self._now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        networks = self._networks
        for network in networks:
            arrival = network.next_arrival()
            if arrival < deadline:
                deadline = arrival
        shard = self._shard
        if shard is not None and not shard.peer_done and deadline >= shard.window_end:
            # The window ends first: exchange it (which books the other process's writes of the
            # window, all due after its end), then let trio look again, at the same time (a run
            # whose tasks wait on no deadline at all, as at its end, must still see its own wake-ups).
            shard.advance()
            return 0.0
        if deadline == math.inf:
            return 86400.0  # nothing will ever wake: a deadlock, as under MockClock
        now = self._now
        if deadline > now:
            self._now = now = deadline
        for network in networks:
            network.deliver(now)
        return 0.0
