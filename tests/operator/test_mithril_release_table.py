"""docs/mithril.md's table of Mithril releases agrees with what docs/interop.md says was checked.

Both documents are parsed. docs/interop.md names, for each pallas-network line the harness
drives, the Mithril releases that ship it ("pallas 0.34 (Mithril 2543.x, 2603.x)") and the node
settings it needed (the settings named in its row of "What was exercised", including a row it
refers to with "As for"). Every release of docs/mithril.md's table on one of those pallas lines
must be among the releases interop.md names for it, and must list exactly the settings
interop.md says that line needs; a release on pallas 1.x needs none. The guide's configuration
for released signers must read as a node configuration with both settings on. And a size
reject is what the guide says it is from the node's side: no reply, the connection closed, and a
log line naming the body's size.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import trio

from dmq.config import read_config
from tests.e2e.messages import DMQ_DEVNET_MAGIC
from tests.e2e.raw_n2c import ConnectionLost, RawN2CClient

ROOT = Path(__file__).resolve().parents[2]
MITHRIL = ROOT / "docs" / "mithril.md"
INTEROP = ROOT / "docs" / "interop.md"
SETTINGS = ("LegacyMessageFormat", "LegacyRejectText")


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The cells of the rows of the Markdown table whose header row starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def pallas_line(version: str) -> str:
    """``0.34.0`` -> ``0.34``; any 1.x (1.1.1, 1.4.0, 1.0.0-alpha.2) -> ``1``."""
    major, minor = re.match(r"(\d+)\.(\d+)", version).groups()
    return major if major != "0" else f"0.{minor}"


def named_settings(text: str) -> set[str]:
    """The settings named in ``text``, as `` `LegacyRejectText` `` or `` `LegacyRejectText: true` ``."""
    return {name for name in SETTINGS if re.search(rf"`{name}(`|: true`)", text)}


def interop_statements() -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """pallas line -> settings the node needed; pallas line -> the Mithril releases shipping it."""
    text = INTEROP.read_text()
    rows = table_rows(text, "| Client | Version |")
    by_version = {}
    for client, version, exercised, held in rows:
        if client.startswith("pallas-network (Mithril") and re.fullmatch(r"\d+\.\d+\.\d+", version):
            by_version[version] = (exercised, held)
    settings: dict[str, set[str]] = {}
    for version, (exercised, held) in by_version.items():
        needed = named_settings(exercised) | named_settings(held)
        referred = re.match(r"As for (\d+\.\d+)", exercised)
        if referred:
            (other,) = [v for v in by_version if pallas_line(v) == referred.group(1)]
            needed |= named_settings(by_version[other][0])
        settings[pallas_line(version)] = needed
    releases: dict[str, list[str]] = {}
    prose = " ".join(text.split())  # "pallas 0.34 (Mithril 2543.x, 2603.x) and 0.35 (Mithril 2617.0)"
    for line, names in re.findall(r"\b(\d+\.\d+) \(Mithril ([^)]*)\)", prose):
        releases.setdefault(line, []).extend(name.strip() for name in names.split(","))
    return settings, releases


def mithril_table() -> list[dict[str, str]]:
    rows = table_rows(MITHRIL.read_text(), "| Mithril release | pallas-network |")
    keys = ("releases", "pallas", "layout", "reason", "settings")
    return [dict(zip(keys, row)) for row in rows]


def covered(release: str, named: list[str]) -> bool:
    """``2543.1-hotfix`` is covered by ``2543.x``; ``2617.0`` by ``2617.0``."""
    return any(release == n or (n.endswith(".x") and release.split(".")[0] == n[:-2]) for n in named)


def test_the_release_table_agrees_with_what_interop_md_states():
    needed, releases = interop_statements()
    assert needed.keys() >= {"0.34", "0.35", "1"} and releases.keys() >= {"0.34", "0.35"}
    rows = mithril_table()
    assert len(rows) >= 5
    checked = set()
    for row in rows:
        version = re.search(r"\d+\.\d+\.\d+(-[\w.]+)?", row["pallas"]).group(0)
        # A git pin is described by the release whose DMQ protocols it carries ("those of 0.34.0").
        same_as = re.search(r"those of (\d+\.\d+\.\d+)", row["pallas"])
        line = pallas_line(same_as.group(1) if same_as else version)
        if row["settings"].startswith("none:"):   # a release no DMQ node serves: neither layout
            assert row["layout"] not in ("legacy", "current"), row
            continue
        assert row["layout"] == ("current" if line == "1" else "legacy"), row
        assert line in needed, row
        assert named_settings(row["settings"]) == needed[line], row
        if line in releases:
            for release in row["releases"].split(","):
                assert covered(release.strip(), releases[line]), (release, releases[line])
        checked.add(line)
    assert checked == {"0.34", "0.35", "1"}
    # Released signers (pallas 0.x) need the legacy layout; the next release (pallas 1.x) nothing.
    assert all("LegacyMessageFormat" in needed[line] for line in ("0.34", "0.35")) and needed["1"] == set()


def test_the_configuration_for_released_signers_turns_both_settings_on(tmp_path, monkeypatch):
    text = MITHRIL.read_text()
    (block,) = re.findall(r"^```json dmq\.config\.json released\n(.*?)^```", text, flags=re.M | re.S)
    path = tmp_path / "dmq.config.json"
    path.write_text(block)
    assert set(SETTINGS) <= set(json.loads(block))
    config = read_config({"ConfigFile": str(path)})
    assert config.legacy_message_format and config.legacy_reject_text


async def test_a_size_reject_is_a_closed_connection_and_a_log_line_naming_the_size(start_node, signers):
    node = start_node()
    message = signers[0].sign(body=b"x" * 2000)
    # One byte over the limit: the message cannot be built with the project's encoder, so its body is grown in place.
    too_long = message.raw.replace(b"\x59\x07\xd0" + b"x" * 2000, b"\x59\x07\xd1" + b"x" * 2001)
    assert too_long != message.raw
    with trio.fail_after(30):
        async with await RawN2CClient.connect(node.socket_path) as client:
            await client.handshake(DMQ_DEVNET_MAGIC)
            try:
                reply = await client.submit(too_long)
            except ConnectionLost:
                reply = None
    assert reply is None   # no reject reason: the connection ends (pallas: a transport error)
    deadline = time.monotonic() + 20
    while not (errors := [e.data for e in node.log_events()
                          if e.ns == "Net.ConnectionManager.Local.ConnectionHandler.Error"]):
        assert time.monotonic() < deadline, "no ConnectionHandler.Error line"
        time.sleep(0.05)
    (error,) = errors
    assert "DecoderFailure" in error["error"] and "messageBody: expected 90..2000 bytes, got 2001" in error["error"]
    assert error["connectionHandler"]["reason"] == error["error"]
