"""Operator mistakes in ``dmq publish / subscribe / inspect / keys``: one line on stderr, exit 1,
no traceback. A few run as real processes (concurrently); the rest through the tool's entry
function, which is what the process runs."""

from __future__ import annotations

import pytest
import trio

from dmq.cli.tool import run
from tests.clients.mithril.support import DEVNET_BULK_CREDENTIALS, DEVNET_GENESIS, write_credential_files

from .conftest import run_dmq_async


async def test_operator_errors_are_one_line(tmp_path):
    kes, cert = write_credential_files(tmp_path / "pool", 0)
    signing = ["--kes-key", str(kes), "--opcert", str(cert), "--body-hex", "00" * 100]
    # Each in its own process: the exit status and stderr are what an operator sees.
    cases = {
        "no node": (["publish", "--socket", "absent.socket", "--kes-period", "0", *signing],
                    ["no DMQ node reachable", "absent.socket"]),
        "wrong key type": (["publish", "--kes-key", str(cert), "--opcert", str(cert), "--kes-period", "0",
                            "--body-hex", "00" * 100], ["expected a KesSigningKey_ed25519_kes_2^6 file"]),
        "not a message": (["inspect", "--hex", "83010203"], ["not a DMQ message"]),
    }
    results = {}

    async def one(name, args):
        results[name] = await run_dmq_async(args, cwd=tmp_path)

    async with trio.open_nursery() as nursery:
        for name, (args, _) in cases.items():
            nursery.start_soon(one, name, args)
    for name, (_, fragments) in cases.items():
        results[name].assert_operator_error(*fragments)


@pytest.mark.parametrize("args, fragment", [
    (["publish", "--kes-key", "nope.skey", "--opcert", "nope.cert", "--kes-period", "0", "--body-hex", "00" * 100],
     "nope.cert: no such file"),
    (["keys", "rotate", "--dir", ".", "--kes-period", "1"], "cold.skey: no such file"),
    (["publish", "--genesis", "{genesis}", "--bulk-credentials", "{bulk}", "--body-hex", "00" * 100],
     "rotate the KES key"),
    (["publish", "--signed", "{bulk}", "--kes-period", "3"], "--kes-period has no effect with --signed"),
    (["publish", "--signed", "{bulk}"], "neither a binary CBOR message nor hex text"),
    (["publish", "--signed", "short.hex"], "short.hex: not a DMQ message a node would decode"),
    (["subscribe", "--network", "moonnet"], "unknown network 'moonnet'"),
    (["subscribe", "--magic", "0x10"], "expected a decimal network magic"),
    (["publish", "--kes-key", "k", "--opcert", "c", "--body-hex", "00"], "needs the KES period"),
    (["inspect", "--hex", "zz"], "--hex is not hexadecimal"),
    (["subscribe", "--count", "0"], "expected a positive number"),
    (["simnet", "--processes", "2", "--nodes", "4"], "a run over two processes has no kills, partitions, flood"),
    (["simnet", "--processes", "2", "--mithril-registration"], "--mithril-registration runs in one process"),
])
def test_more_mistakes_in_process(args, fragment, capsys, tmp_path, monkeypatch):
    """The same one-line reports, from the tool's entry function (no process needed)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "short.hex").write_text("83010203\n")
    args = [arg.format(genesis=DEVNET_GENESIS, bulk=DEVNET_BULK_CREDENTIALS) for arg in args]
    assert run(args) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err
