"""Fixtures of the operator's-kit tests: devnet node processes (from the end-to-end tests) and
their working directories as an operator lays them out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import devnet_config, signers, start_node  # noqa: F401 - fixtures used here
from tests.e2e.messages import DEVNET

__all__ = ["NodeDirectory"]


class NodeDirectory:
    """A devnet node's files in ``path``: genesis, configuration and topology, as the node reads them."""

    def __init__(self, path: Path, **config: Any) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DEVNET / "shelley-genesis.json", path / "shelley-genesis.json")
        self.config = devnet_config(**config)
        self.write_config()
        (path / "dmq.topology.json").write_text(json.dumps({"localRoots": [], "publicRoots": []}))

    def write_config(self) -> None:
        (self.path / "dmq.config.json").write_text(json.dumps(self.config))

    def flags(self) -> dict[str, str]:
        """What ``dmq-node`` receives: the two files and a bind address (the flags it requires)."""
        return {"ConfigFile": str(self.path / "dmq.config.json"),
                "TopologyFile": str(self.path / "dmq.topology.json"), "IPv4": "127.0.0.1"}


@pytest.fixture
def node_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NodeDirectory:
    """A good configuration in ``tmp_path/node``, which is also the working directory."""
    directory = NodeDirectory(tmp_path / "node")
    monkeypatch.chdir(directory.path)
    return directory
