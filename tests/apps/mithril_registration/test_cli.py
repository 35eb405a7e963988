"""``dmq mithril register``: an operator's mistake is one line and exit status 1, before the node is asked."""

from __future__ import annotations

import json

from dmq.cli import OPERATOR_ERROR
from dmq.cli.tool import run

from .keys import pool
from .test_agreement import _registration

TOPIC = "ab" * 32


def _register(tmp_path, capsys, document, *extra: str) -> tuple[int, str]:
    path = tmp_path / "registration.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    status = run(["mithril", "register", "--socket", str(tmp_path / "no.socket"), "--magic", "424242",
                  "--registration", str(path), *extra])
    return status, capsys.readouterr().err


def test_refusals_name_the_problem_in_one_line(tmp_path, capsys):
    good = _registration(0).to_json()
    cases = {
        "not JSON": ("{", ("--topic", TOPIC), "not JSON"),
        "another pool": ({**good, "party_id": pool(1).party_id}, ("--topic", TOPIC), "operational certificate"),
        "bad topic": (good, ("--topic", "abcd"), "--topic"),
    }
    for name, (document, extra, expected) in cases.items():
        status, err = _register(tmp_path, capsys, document, *extra)
        assert status == OPERATOR_ERROR, name
        assert len(err.strip().splitlines()) == 1 and expected in err, (name, err)


def test_a_missing_file_or_node_is_one_line(tmp_path, capsys):
    status = run(["mithril", "register", "--socket", str(tmp_path / "no.socket"), "--magic", "424242",
                  "--topic", TOPIC, "--registration", str(tmp_path / "absent.json")])
    err = capsys.readouterr().err
    assert status == OPERATOR_ERROR and len(err.strip().splitlines()) == 1 and "absent.json" in err
    status, err = _register(tmp_path, capsys, _registration(0).to_json(), "--topic", TOPIC)
    assert status == OPERATOR_ERROR and len(err.strip().splitlines()) == 1 and "no.socket" in err, err
