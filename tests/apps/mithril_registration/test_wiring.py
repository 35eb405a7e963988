"""The composition root starts the application only where it can run, and says why in one line otherwise."""

from __future__ import annotations

import json
import time

import pytest

from dmq.cli.wiring import assemble_node
from dmq.config import read_config
from dmq.node import NodeStartError
from tests.topics.blocklace.world import pool
from tests.topics.e2e.network import write_chain


def _config(tmp_path, **settings):
    write_chain(tmp_path, [pool(0)], time.time())
    document = {"NetworkMagic": 424242, "StakeSource": str(tmp_path / "stake.json"),
                "ShelleyGenesisFile": str(tmp_path / "shelley-genesis.json"), "DatabasePath": str(tmp_path / "db"),
                "LocalAddress": str(tmp_path / "dmq.socket"),
                "MithrilRegistration": {"Topic": "ab" * 32, "HttpPort": 0}, **settings}
    (tmp_path / "dmq.config.json").write_text(json.dumps(document))
    return read_config({"ConfigFile": str(tmp_path / "dmq.config.json")})


def test_a_node_without_blocklace_refuses_the_application_in_one_line(tmp_path):
    with pytest.raises(NodeStartError, match="MithrilRegistration needs a topic network carrying blocklace"):
        assemble_node(_config(tmp_path, TopicsCarried=["raw", "upsycle"]))


def test_a_blocklace_node_runs_the_application(tmp_path):
    node = assemble_node(_config(tmp_path, TopicsCarried=["raw", "blocklace"]))
    try:
        assert any(getattr(s, "__self__", None).__class__.__name__ == "RegistrationNode" for s in node.services)
    finally:
        node.mempool.close()
