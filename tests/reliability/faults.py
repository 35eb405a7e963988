"""Faults done to a ``dmq-node`` process, and what must hold after each.

* :func:`kill_trial`: Mithril-style signers publish (some messages with a TTL of 2 s) until
  SIGKILL at a random moment; the node restarts on the same database. Every acknowledged
  message still unexpired must be served, nothing expired may be, nothing rejected may.
* :func:`tear_a_page`: random bytes over one page of ``data.mdb``.
* :class:`SizeLimitedNode`: the node under ``RLIMIT_FSIZE`` (``prlimit --fsize``): the disk is
  full once ``data.mdb`` reaches the limit.
* :func:`fill_database`: a database of n valid messages written offline, for restart timing.

Shared by ``test_faults.py`` (a few quick trials) and ``bench/reliability_faults.py``.
"""

from __future__ import annotations

import random
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import trio

from dmq.clock import SystemClock
from dmq.codec import decode_message
from dmq.mempool import DurableMempool

from tests.e2e.conftest import devnet_config
from tests.e2e.messages import DEVNET, DMQ_DEVNET_MAGIC as MAGIC, Signer
from tests.e2e.node_process import NodeProcess
from tests.e2e.raw_n2c import ACCEPT, ConnectionLost, publish_like_mithril_signer, read_everything

__all__ = ["devnet_node", "SizeLimitedNode", "KillTrial", "kill_trial", "tear_a_page", "fill_database",
           "served_now", "MAGIC"]

#: Devnet pools may publish back to back (``--min-sig-delay 0``, refused on mainnet only).
FLAGS = ("--min-sig-delay", "0")


def devnet_node(workdir: Path, cls: type[NodeProcess] = NodeProcess, **config) -> NodeProcess:
    """A devnet ``dmq-node`` in ``workdir`` (not started)."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEVNET / "shelley-genesis.json", workdir / "shelley-genesis.json")
    return cls(workdir, devnet_config(**config), FLAGS, start_timeout=120.0)  # a loaded machine


class SizeLimitedNode(NodeProcess):
    """The node with a file-size limit: writes past ``fsize`` bytes fail with EFBIG."""

    fsize: int = 250_000

    def command(self) -> list[str]:
        return ["prlimit", f"--fsize={self.fsize}", "--", *super().command()]


async def served_now(node: NodeProcess) -> tuple[list[bytes], float]:
    """Everything the node serves a new subscriber, and the wall time just before asking."""
    asked_at = time.time()
    return await read_everything(node.socket_path, MAGIC), asked_at


@dataclass
class KillTrial:
    acknowledged: list[bytes] = field(default_factory=list)
    unanswered: list[bytes] = field(default_factory=list)
    rejected: list[bytes] = field(default_factory=list)
    killed_after: float = 0.0
    restart_s: float = 0.0
    lost: list[bytes] = field(default_factory=list)
    expired_served: list[bytes] = field(default_factory=list)
    unexpected: list[bytes] = field(default_factory=list)


async def kill_trial(node: NodeProcess, signers: list[Signer], rng: random.Random, *,
                     earlier: set[bytes] = frozenset(), submitters: int = 6,
                     load_for: tuple[float, float] = (0.3, 1.5)) -> KillTrial:
    """Load the running ``node``, SIGKILL it at a random moment, restart it and check.

    ``earlier``: what previous trials on the same database acknowledged or left unanswered
    (it may still be served)."""
    trial = KillTrial()
    killed = trio.Event()
    counter = iter(range(10**9))

    def next_message() -> bytes:
        n = next(counter)
        signer = signers[n % len(signers)]
        if n % 5 == 0:
            return signer.sign(expires_in=2).raw            # expires around the restart
        if n % 11 == 0:
            return signer.sign(expires_in=-5).raw           # already expired: rejected
        return signer.sign().raw

    async def submitter() -> None:
        while not killed.is_set():
            raw = next_message()
            try:
                reply = await publish_like_mithril_signer(node.socket_path, MAGIC, raw)
            except (ConnectionLost, OSError):
                trial.unanswered.append(raw)
                continue
            (trial.acknowledged if reply == ACCEPT else trial.rejected).append(raw)

    async def killer() -> None:
        trial.killed_after = rng.uniform(*load_for)
        await trio.sleep(trial.killed_after)
        node.kill(signal.SIGKILL)
        killed.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(killer)
        for _ in range(submitters):
            nursery.start_soon(submitter)
    began = time.monotonic()
    node.start()
    trial.restart_s = time.monotonic() - began
    served, asked_at = await served_now(node)
    served_set = set(served)
    expiry = {raw: decode_message(raw).expires_at for raw in served_set | set(trial.acknowledged)}
    trial.lost = [raw for raw in trial.acknowledged if raw not in served_set and expiry[raw] > time.time() + 0.5]
    trial.expired_served = [raw for raw in served if expiry[raw] <= asked_at]
    allowed = set(earlier) | set(trial.acknowledged) | set(trial.unanswered)
    trial.unexpected = [raw for raw in served_set if raw not in allowed]
    assert len(served) == len(served_set), "a message was served twice"
    return trial


def tear_a_page(data_file: Path, rng: random.Random, *, length: int = 64) -> int:
    """Overwrite ``length`` random bytes inside one page past the two meta pages; the page."""
    pages = data_file.stat().st_size // 4096
    page = rng.randrange(2, pages)
    with open(data_file, "r+b") as f:
        f.seek(page * 4096 + rng.randrange(0, 4096 - length))
        f.write(rng.randbytes(length))
    return page


def fill_database(path: Path, signers: list[Signer], count: int, *, batch: int = 1000) -> list[bytes]:
    """``count`` valid messages appended to a database at ``path``, as the node stores them."""
    mempool = DurableMempool(path, SystemClock())
    raws = []
    try:
        for start in range(0, count, batch):
            messages = [signers[i % len(signers)].sign() for i in range(start, min(count, start + batch))]
            mempool.append(messages)
            raws += [m.raw for m in messages]
    finally:
        mempool.close()
    return raws
