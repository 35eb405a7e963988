"""``dmq publish``, ``dmq subscribe`` and ``dmq inspect`` against a real node, as separate processes."""

from __future__ import annotations

from dmq.cli.tool import run
from dmq.codec import build_message, decode_message
from dmq.opcert import pool_id_bech32
from tests.clients.mithril.support import (
    DEVNET_BULK_CREDENTIALS,
    DEVNET_GENESIS,
    DEVNET_POOL_IDS,
    devnet_credentials,
    running_node,
    write_credential_files,
)

from .conftest import run_dmq_async


async def test_publish_subscribe_inspect(tmp_path, vectors):
    kes, cert = write_credential_files(tmp_path / "pool0", 0)
    body = bytes.fromhex(vectors["mithril_body"]["body"])
    out = tmp_path / "out"
    out.mkdir()
    async with running_node(tmp_path) as node:
        connect = ["--socket", str(tmp_path / "dmq.socket"), "--network", "devnet"]

        done = await run_dmq_async(["publish", *connect, "--kes-key", str(kes), "--opcert", str(cert),
                                    "--kes-period", "0", "--body-hex", body.hex()], cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "accepted\n", "")

        # Pool 1 from the bulk credentials, its period from a slot, its body from standard input.
        done = await run_dmq_async(["publish", *connect, "--bulk-credentials", str(DEVNET_BULK_CREDENTIALS),
                                    "--credential", "1", "--slot", "129599", "--body", "-"],
                                   cwd=tmp_path, stdin=bytes(range(150)))
        assert (done.returncode, done.stdout) == (0, "accepted\n")

        assert len(node.mempool) == 2

        done = await run_dmq_async(["subscribe", *connect, "--non-blocking", "--out", str(out)], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        saved = sorted(out.iterdir())
        assert len(lines) == 2 and len(saved) == 2
        messages = {path.stem: decode_message(path.read_bytes()) for path in saved}
        for line in lines:
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            message = messages[fields["id"]]
            assert node.mempool.contains(message.message_id)
            assert fields["pool"] == pool_id_bech32(message.pool_id)
            assert fields["kes_period"] == "0" and fields["size"] == str(message.size)
            assert fields["expires_at"] == str(message.expires_at)
        assert {m.pool_id.hex() for m in messages.values()} == set(DEVNET_POOL_IDS)
        assert {m.body for m in messages.values()} == {body, bytes(range(150))}

        done = await run_dmq_async(["subscribe", *connect, "--count", "1"], cwd=tmp_path)
        assert done.returncode == 0 and len(done.stdout.splitlines()) == 1

        first = next(path for path in saved if messages[path.stem].body == body)
        done = await run_dmq_async(["publish", *connect, "--signed", str(first)], cwd=tmp_path)
        assert (done.returncode, done.stdout) == (1, "rejected: already received\n")

        message = messages[first.stem]
        done = await run_dmq_async(["inspect", str(first), "--genesis", str(DEVNET_GENESIS),
                                    "--now", str(message.expires_at - 100)], cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"id:          {message.message_id.hex()} (matches the payload)" in done.stdout
        assert f"pool:        {pool_id_bech32(message.pool_id)}" in done.stdout
        assert "Mithril signature for CardanoDatabase(epoch=10, immutable_file_number=1728)" in done.stdout
        assert done.stdout.endswith("verdict:     valid\n")


def test_inspect_at_another_time(tmp_path, capsys):
    credential = devnet_credentials()[0]
    message = build_message(bytes(100), 0, 1_800_000_000, credential.kes_key, credential.opcert, credential.cold_vk)
    (tmp_path / "message.hex").write_text(message.raw.hex() + "\n")
    arguments = ["inspect", str(tmp_path / "message.hex"), "--genesis", str(DEVNET_GENESIS), "--now"]
    assert run([*arguments, "2027-01-15T07:59:59Z"]) == 0
    assert capsys.readouterr().out.endswith("verdict:     valid\n")
    assert run([*arguments, "1800000000.5"]) == 1
    out = capsys.readouterr().out
    assert "expires at:  1800000000 (2027-01-15T08:00:00Z)" in out and out.endswith("verdict:     invalid: SigExpired\n")
    assert run([*arguments, "1799998200"]) == 1
    assert capsys.readouterr().out.endswith("verdict:     invalid: SigExpiresAtTooFarInTheFuture\n")
