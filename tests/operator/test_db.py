"""``dmq db info / backup / check`` on the store of a running node that keeps accepting messages.

A submitter publishes signed devnet messages without pause over the node's socket while each
command runs as its own process: the commands must read a consistent store beside the writer,
and the backup must hold every message acknowledged before it started.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import lmdb
import trio

from dmq.mempool.entry import default_decoder
from dmq.mempool.record import CHECKSUM_SIZE
from dmq.mempool.store import MESSAGES_DB, MempoolStore
from clients.mithril import Publisher, describe_result, is_accepted
from dmq.cli.tool import run
from tests.dmq.cli.conftest import run_dmq_async
from tests.e2e.messages import DMQ_DEVNET_MAGIC

#: Enough messages in the store before the commands run that a wrong count cannot pass by chance.
_BEFORE = 30
#: Between two submissions: a steady stream that leaves the machine's cores to the commands.
_PAUSE = 0.01


def _stored_ids(path: Path) -> set[bytes]:
    """The ids the node would load from the store at ``path`` (every record judged as at start-up)."""
    store = MempoolStore(path)
    try:
        loaded = store.load(default_decoder(), time.time())
    finally:
        store.close()
    assert loaded.report.corrupt == ()
    return {entry.message_id for entry in loaded.entries}


def _field(output: str, name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith(f"{name}:"))


async def test_info_backup_and_check_while_the_node_writes(start_node, signers, tmp_path):
    node = start_node(MinSigDelay=0)
    database = node.workdir / "db"
    where = ["--database-path", str(database)]
    publisher = Publisher(node.socket_path, DMQ_DEVNET_MAGIC)
    acknowledged: list[bytes] = []

    async def submit_without_pause() -> None:
        for n in itertools.count():
            message = signers[n % len(signers)].sign()
            result = await publisher.submit(message.raw)
            assert is_accepted(result), describe_result(result)
            acknowledged.append(message.message_id)
            await trio.sleep(_PAUSE)

    async def while_writing(args: list[str]):
        """Run ``dmq args`` and show that the node acknowledged messages meanwhile."""
        before = len(acknowledged)
        done = await run_dmq_async(args, cwd=node.workdir)
        assert len(acknowledged) > before, "no message was written while the command ran"
        return done, before

    async with trio.open_nursery() as nursery:
        nursery.start_soon(submit_without_pause)
        while len(acknowledged) < _BEFORE:
            await trio.sleep(0.01)

        backup = tmp_path / "backup"
        acknowledged_before_backup = set(acknowledged)
        done, _ = await while_writing(["db", "backup", str(backup), *where])
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"backup: {backup}: ")

        done, before_info = await while_writing(["db", "info", *where])
        assert done.returncode == 0, done.stderr
        assert _field(done.stdout, "format") == "dmq-mempool/2"
        assert int(_field(done.stdout, "messages").split()[0]) >= before_info
        oldest, newest = (int(_field(done.stdout, name).split()[0]) for name in ("oldest expiry", "newest expiry"))
        assert time.time() < oldest <= newest

        done, before_check = await while_writing(["db", "check", *where])
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        checked = int(done.stdout.split()[1])
        assert checked >= before_check and done.stdout.rstrip().endswith(": intact")
        nursery.cancel_scope.cancel()

    in_backup = _stored_ids(backup)
    assert acknowledged_before_backup <= in_backup
    assert in_backup <= set(acknowledged)
    assert node.running, node.diagnostics()


def _store_with_messages(path: Path, signers, count: int) -> list[bytes]:
    """A store written by the node's own store code, then closed (no node running)."""
    from dmq.clock import SystemClock
    from dmq.mempool import DurableMempool

    mempool = DurableMempool(path, SystemClock())
    messages = [signers[n % len(signers)].sign() for n in range(count)]
    mempool.append(messages)
    mempool.close()
    return [message.message_id for message in messages]


def _dmq(capsys, args: list[str]) -> tuple[int, str, list[str]]:
    """``dmq args`` in this process (no node runs): status, standard output, lines of standard error."""
    status = run(args)
    captured = capsys.readouterr()
    return status, captured.out, captured.err.splitlines()


def test_check_names_a_record_whose_bytes_changed(tmp_path, signers, capsys):
    database = tmp_path / "db"
    _store_with_messages(database, signers, 3)
    env = lmdb.open(str(database), max_dbs=8)
    with env.begin(write=True) as txn:
        messages = env.open_db(MESSAGES_DB, txn=txn)
        key, record = list(txn.cursor(db=messages))[1]
        damaged = bytearray(record)
        damaged[CHECKSUM_SIZE + 200] ^= 0x01  # one bit of the message itself: the checksum notices
        txn.put(key, bytes(damaged), db=messages)
    env.close()

    status, out, err = _dmq(capsys, ["db", "check", "--database-path", str(database)])
    assert status == 1
    assert err == [f"dmq db check: database {database}: record {key.hex()} (index 1) "
                   "its bytes do not match their checksum"]
    assert out == f"checked 3 records of {database}: 1 problem(s)\n"

    status, out, _ = _dmq(capsys, ["db", "info", "--database-path", str(database)])
    assert status == 0 and _field(out, "messages").startswith("2 ")


def test_backup_refuses_a_directory_holding_a_store_and_info_a_missing_store(tmp_path, signers, capsys):
    database = tmp_path / "db"
    ids = _store_with_messages(database, signers, 2)
    status, _, err = _dmq(capsys, ["db", "backup", str(tmp_path / "copy"), "--database-path", str(database)])
    assert (status, err) == (0, [])
    assert _stored_ids(tmp_path / "copy") == set(ids)

    status, _, err = _dmq(capsys, ["db", "backup", str(tmp_path / "copy"), "--database-path", str(database)])
    assert status == 1 and len(err) == 1 and "it already holds a store" in err[0]
    status, _, err = _dmq(capsys, ["db", "info", "--database-path", str(tmp_path / "absent")])
    assert status == 1 and len(err) == 1 and "no message store here" in err[0]


def test_the_database_path_comes_from_the_configuration_file(tmp_path, signers, capsys, monkeypatch):
    _store_with_messages(tmp_path / "store", signers, 1)
    (tmp_path / "dmq.config.json").write_text('{"DatabasePath": "store"}')
    monkeypatch.chdir(tmp_path)
    status, out, err = _dmq(capsys, ["db", "info"])
    assert (status, err) == (0, [])
    assert _field(out, "database") == "store"
    assert _field(out, "messages").startswith("1 ")
