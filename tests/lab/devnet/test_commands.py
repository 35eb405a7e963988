"""``dmq devnet`` and ``dmq demo`` as the operator types them: one-line mistakes, and the demo end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dmq.cli.tool import run as dmq


def one_line_error(capsys, *fragments: str) -> None:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_devnet_refuses_a_directory_that_is_not_a_previous_devnet(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("keep me")
    assert dmq(["devnet", "--dir", str(tmp_path), "--nodes", "2", "--no-live"]) == 1
    one_line_error(capsys, "dmq devnet:", str(tmp_path), "--dir")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("flags, fragment", [
    (["--aggregators", "0"], "node numbers start at 1"),
    (["--aggregators", "one"], "expected 'all' or node numbers"),
    (["--period", "0"], "positive"),
    (["--topology", "mesh"], "invalid choice"),
])
def test_devnet_flag_mistakes_are_one_line(tmp_path, capsys, flags, fragment):
    with pytest.raises(SystemExit) as exit_:
        dmq(["devnet", "--dir", str(tmp_path / "dn"), *flags])
    assert exit_.value.code == 1
    one_line_error(capsys, fragment)
    assert not (tmp_path / "dn").exists()


def test_devnet_aggregators_beyond_the_nodes_are_refused_before_anything_starts(tmp_path, capsys):
    assert dmq(["devnet", "--dir", str(tmp_path / "dn"), "--nodes", "2", "--aggregators", "1,3"]) == 1
    one_line_error(capsys, "aggregators go on nodes 1..2")
    assert not (tmp_path / "dn").exists()


def test_devnet_command_runs_with_its_flags_and_checks_the_run(tmp_path, capsys):
    directory = tmp_path / "dn"
    status = dmq(["devnet", "--nodes", "2", "--topology", "star", "--pools", "3", "--period", "1", "--duration", "2",
                  "--record", "--aggregators", "2", "--body-size", "1000", "--seed", "5", "--check", "--no-live",
                  "--dir", str(directory)])
    out = capsys.readouterr().out
    assert status == 0, out
    summary = json.loads((directory / "devnet-summary.json").read_text())
    settings = summary["settings"]
    assert (settings["nodes"], settings["topology"], settings["pools"], settings["period"], settings["seed"]) == \
        (2, "star", 3, 1.0, 5)
    assert settings["aggregators"] == ["node-2"] and [a["node"] for a in summary["aggregators"]] == ["node-2"]
    assert summary["complete"] and summary["stopped_cleanly"]
    assert summary["mean_message_size"] > 1000
    assert summary["recording"] and list((directory / "traffic").glob("manifest.*.json"))
    assert "all 2 nodes stopped cleanly" in out


def test_demo_without_java_says_so_in_one_line_and_starts_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert dmq(["demo", "--dir", str(tmp_path / "dn")]) == 1
    one_line_error(capsys, "Java", "scripts/ensure-java.sh", "--no-report")
    assert not (tmp_path / "dn").exists()


@pytest.mark.slow
def test_demo_runs_a_devnet_and_writes_the_capacity_report_from_its_recording(tmp_path):
    done = subprocess.run([sys.executable, "-m", "dmq.cli.tool", "demo", "--duration", "15", "--dir", "devnet",
                           "--no-live"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    report = tmp_path / "devnet" / "capacity-report" / "capacity-report.md"
    assert report.is_file()
    assert f"capacity report: {report.relative_to(tmp_path)}" in done.stdout
    assert "loss: 0 of" in done.stdout and "all 3 nodes stopped cleanly" in done.stdout
    text = report.read_text()
    assert "traffic" in text                     # the recorded run is measured in the report
    assert list((tmp_path / "devnet" / "capacity-report").glob("*.png"))
