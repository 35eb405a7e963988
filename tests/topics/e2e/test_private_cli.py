"""``dmq topic private``: an owner and two members on a ``dmq-node`` process, by the commands only."""

from __future__ import annotations

from dmq.cli import tool
from tests.e2e.topic_node import TOPIC_MAGIC, topic_nodes  # noqa: F401 (a fixture)


def test_members_read_each_other_until_one_is_revoked(topic_nodes, tmp_path, capsys):
    node = topic_nodes(carried=["raw", "upsycle"])
    connection = ["--socket", str(node.socket_path), "--magic", str(TOPIC_MAGIC)]

    def dmq(*command: str) -> str:
        assert tool.run(["topic", "private", *command]) == 0
        return capsys.readouterr().out

    def new_key(name: str, kind: str = "x25519") -> str:
        assert tool.run(["topic", "new-key", "--out", str(tmp_path / name), "--kind", kind]) == 0
        return capsys.readouterr().out.strip()

    owner, group = new_key("owner", "ed25519"), new_key("group", "ed25519")
    members = {name: new_key(name) for name in ("alice", "bob")}
    for name in members:
        new_key(f"{name}.svc", "ed25519")

    def member(action: str, name: str, *extra: str) -> str:
        return dmq(action, *connection, "--member-key", str(tmp_path / name), "--key", str(tmp_path / f"{name}.svc"),
                   "--state", str(tmp_path / f"{name}.state"), *extra)

    def owner_publishes(epoch: int, *names: str) -> None:
        dmq("members", *connection, "--owner-key", str(tmp_path / "owner"), "--group-key", str(tmp_path / "group"),
            "--epoch", str(epoch), *[a for n in names for a in ("--member", members[n])])

    for name in members:
        assert member("join", name, "--owner", owner, "--group", group).startswith("joined")
    owner_publishes(1, "alice", "bob")
    assert "epoch=1 revoked=no" in member("fetch", "alice")
    sent = member("publish", "alice", "--payload-hex", b"hello bob".hex())
    hello = sent.split("id=")[1].split()[0]
    out = member("fetch", "bob")
    assert f"id={hello} payload={b'hello bob'.hex()}" in out and "epoch=1 revoked=no unreadable=0" in out

    owner_publishes(2, "alice")
    assert "epoch=2 revoked=no" in member("fetch", "alice")
    member("publish", "alice", "--payload-hex", b"not for bob".hex())
    out = member("fetch", "bob")
    assert "payload=" not in out and "epoch=2 revoked=yes unreadable=1" in out
    assert tool.run(["topic", "private", "publish", *connection, "--member-key", str(tmp_path / "bob"), "--key",
                     str(tmp_path / "bob.svc"), "--state", str(tmp_path / "bob.state"), "--payload-hex", "00"]) != 0
    assert "cannot publish" in capsys.readouterr().err
    node.check_running()
