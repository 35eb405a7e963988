"""Operator mistakes in the ``dmq topic`` builders: one line on stderr, exit 1, no traceback,
found before any connection to a node (none runs here)."""

from __future__ import annotations

import pytest

from dmq.cli.tool import run

MAGIC = ["--magic", "424242", "--socket", "absent.socket"]
TOPIC = "ab" * 32


@pytest.mark.parametrize("args, fragment", [
    (["topic", "subscribe", *MAGIC, "--adapter", "kv"], "unknown adapter 'kv'"),
    (["topic", "subscribe", *MAGIC, "--adapter", "blocklace", "--payload-type", "block"], "unknown name"),
    (["topic", "subscribe", *MAGIC, "--adapter", "upsycle", "--group", "abcd"], "--group 'abcd': expected 32 bytes"),
    (["topic", "upsycle", "multicast", *MAGIC, "--group-key", "missing.key", "--text", "x"],
     "--group-key missing.key: No such file"),
    (["topic", "upsycle", "multicast", *MAGIC, "--group-key", "bad.key", "--text", "x"], "is not hexadecimal"),
    (["topic", "upsycle", "unicast", *MAGIC, "--key", "good.key", "--to", "00", "--text", "x"],
     "--to '00': expected 32 bytes"),
    (["topic", "upsycle", "advertise", *MAGIC, "--key", "good.key", "--address", "here:1", "--revision", "1"],
     "'here' is not an IPv4 or IPv6 address"),
    (["topic", "upsycle", "advertise", *MAGIC, "--key", "good.key", "--address", "203.0.113.7:1", "--revision", "1",
      "--service", "x=00"], "expected N=HEX"),
    (["topic", "blocklace", "create", *MAGIC, "--owner-key", "good.key", "--threshold", "2", "--publisher", "00" * 28],
     "threshold 2 of 1 owner keys"),
    (["topic", "blocklace", "create", *MAGIC, "--owner-key", "good.key", "--publisher", "00" * 28 + ":write"],
     "unknown permission 'write'"),
    (["topic", "blocklace", "event", *MAGIC, "--topic", TOPIC, "--payload-hex", "00" * 1300], "too_large"),
    (["topic", "blocklace", "event", *MAGIC, "--topic", TOPIC, "--text", "x", "--tag", "00" * 33],
     "up to 8 content tags of 1 to 32 bytes"),
    (["topic", "blocklace", "propose-epoch", *MAGIC, "--topic", TOPIC, "--number", "1", "--cut", "zz"],
     "--cut is not hexadecimal"),
    (["topic", "dmsg", "publish", *MAGIC, "--key", "good.key", "--server", "203.0.113.7:80"], "needs --sessions"),
    (["topic", "dmsg", "publish", *MAGIC, "--key", "good.key", "--server", "nowhere", "--sessions", "1"],
     "bad_address"),
    (["topic", "new-key", "--out", "good.key"], "good.key: File exists"),
])
def test_topic_mistakes_are_one_line(args, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.key").write_text("11" * 32 + "\n")
    (tmp_path / "bad.key").write_text("not a key\n")
    assert run(args) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err, err


def test_new_keys_print_the_public_key_of_each_kind(capsys, tmp_path):
    from nacl.public import PrivateKey
    from nacl.signing import SigningKey

    from clients.topics.dmsg import static_key

    derive = {"ed25519": lambda s: bytes(SigningKey(s).verify_key).hex(),
              "x25519": lambda s: bytes(PrivateKey(s).public_key).hex(), "secp256k1": static_key}
    for kind, public_of in derive.items():
        path = tmp_path / f"{kind}.key"
        assert run(["topic", "new-key", "--out", str(path), "--kind", kind]) == 0
        secret = bytes.fromhex(path.read_text())
        assert capsys.readouterr().out == public_of(secret) + "\n"
        assert path.stat().st_mode & 0o777 == 0o600
