"""The node-side part's journal and HTTP answers, without a node (the processes: test_agreed_on_nodes)."""

from __future__ import annotations

import json

import pytest
import trio

from apps.mithril_registration.node_side import JOURNAL_NAME, Journal, RegistrationNode
from dmq.errors import OperatorError
from dmq.stake import StakeView
from dmq.trace import Tracer

from .keys import EPOCH as R, pool
from .test_agreement import _feed, _round


def test_the_journal_gives_back_its_records_and_drops_a_torn_tail(tmp_path):
    journal = Journal(tmp_path / JOURNAL_NAME)
    assert journal.records() == []
    journal.append([[0, b"\x01" * 40], [1, 3, b"\x02" * 32]])
    journal.append([[0, b"\x03"]])
    whole = (tmp_path / JOURNAL_NAME).read_bytes()
    (tmp_path / JOURNAL_NAME).write_bytes(whole[:-1])         # a crash in the middle of the last append
    assert journal.records() == [[0, b"\x01" * 40], [1, 3, b"\x02" * 32]]
    journal.append([[0, b"\x04"]])                            # appends after what was kept
    assert journal.records()[-1] == [0, b"\x04"]


def _node(tmp_path, epoch: int, port: int | None = None) -> RegistrationNode:
    stake = tmp_path / "stake.json"
    stake.write_text(json.dumps({"epoch": 1, "pools": {}}))
    return RegistrationNode(topic=b"\x00" * 32, socket_path=str(tmp_path / "none.socket"), network_magic=1,
                            stake_view=StakeView.from_json(stake), tracer=Tracer(), current_epoch=lambda: epoch,
                            own_pool=None, database=tmp_path, http_port=port)


def test_epoch_settings_wait_for_the_set_of_the_current_epoch(tmp_path):
    dag, proposal = _round()
    ledger = _feed(dag, dag.blocks)
    before = _node(tmp_path, R)
    assert before.answer("/epoch-settings")[0] == 503
    assert before.answer(f"/registrations/{R}")[0] == 404
    ledger.finalize(1, proposal)
    before.ledger = ledger
    status, settings = before.answer("/epoch-settings")
    assert status == 200 and settings["epoch"] == R and len(settings["next_signers"]) == 2
    status, described = before.answer(f"/registrations/{R}")
    assert status == 200 and described["digest"] == ledger.agreed[R].digest.hex()
    assert len(described["excluded"]) == 1
    assert before.answer("/nothing")[0] == 404


async def test_a_busy_http_port_is_one_operator_error(tmp_path):
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    node = _node(tmp_path, R, port)
    with pytest.raises(BaseException) as raised:
        await node.run()
    errors = raised.value.exceptions if isinstance(raised.value, BaseExceptionGroup) else [raised.value]
    assert [type(e) for e in errors] == [OperatorError]
    assert f"127.0.0.1:{port}" in str(errors[0])
    for listener in listeners:
        await listener.aclose()


def test_stake_for_an_epoch_is_the_snapshot_of_the_epoch_before_when_held(tmp_path):
    stake = tmp_path / "stake.json"
    stake.write_text(json.dumps({"epoch": R - 1, "pools": {pool(0).pool_id.hex(): 5, pool(2).pool_id.hex(): 0}}))
    node = RegistrationNode(topic=b"\x00" * 32, socket_path=str(tmp_path / "none.socket"), network_magic=1,
                            stake_view=StakeView.from_json(stake), tracer=Tracer(), current_epoch=lambda: R,
                            own_pool=None, database=tmp_path)
    assert node._registered(R, pool(0).pool_id)
    assert not node._registered(R, pool(1).pool_id)
    assert not node._registered(R, pool(2).pool_id)      # zero stake in the snapshot
    # no snapshot of R + 4 held: the current view (a stake file never changes)
    assert node._registered(R + 5, pool(0).pool_id) and not node._registered(R + 5, pool(1).pool_id)


def test_an_unreadable_record_ends_that_record_only(tmp_path):
    journal = Journal(tmp_path / JOURNAL_NAME)
    journal.append([[0, b"\x01"]])
    with open(tmp_path / JOURNAL_NAME, "ab") as f:
        f.write(b"\x00\x00\x00\x02\xff\xff")                # a record that is not CBOR
    assert journal.records() == [[0, b"\x01"]]
    node = _node(tmp_path, R)
    events = []
    node.tracer.add_sink(events.append)
    node._take_contained([0, b"not a DMQ message"])
    assert [type(e).__name__ for e in events] == ["TopicFailureContained"]
