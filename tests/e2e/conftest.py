"""Fixtures of the end-to-end tests: ``dmq-node`` processes on the conformance devnet.

Every node runs in its own directory under ``tmp_path`` with the devnet's Shelley genesis
(copied there; its two pools are the stake), the DMQ devnet magic, an LMDB database and a
Unix socket, and is killed in teardown whatever the test did.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.messages import DEVNET, DMQ_DEVNET_MAGIC, Signer, devnet_signers
from tests.e2e.node_process import NodeProcess

StartNode = Callable[..., NodeProcess]


def devnet_config(**overrides: Any) -> dict[str, Any]:
    """The configuration file of a devnet node; paths are relative to its working directory."""
    config: dict[str, Any] = {
        "NetworkMagic": DMQ_DEVNET_MAGIC,
        "CardanoNetworkMagic": 42,
        "StakeSource": "genesis",
        "ShelleyGenesisFile": "shelley-genesis.json",
        "DatabasePath": "db",
        "LocalAddress": "dmq.socket",
    }
    config.update(overrides)
    return config


@pytest.fixture(scope="session")
def signers() -> list[Signer]:
    return devnet_signers()


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[StartNode]:
    """``start_node(name="node", flags=(), **config)``: a started devnet node; all killed at the end."""
    started: list[NodeProcess] = []

    def start(name: str = "node", flags: tuple[str, ...] = (), **config: Any) -> NodeProcess:
        workdir = tmp_path / name
        workdir.mkdir(exist_ok=True)
        shutil.copyfile(DEVNET / "shelley-genesis.json", workdir / "shelley-genesis.json")
        node = NodeProcess(workdir, devnet_config(**config), tuple(flags))
        started.append(node)
        return node.start()

    try:
        yield start
    finally:
        for node in started:
            node.kill()
