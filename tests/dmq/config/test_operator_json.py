"""The one reader of operator JSON files: its rules, once each, and that every loader uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmq.config import ConfigError, read_config
from dmq.keyfiles import KeyFileError, read_text_envelope
from dmq.operator_json import OperatorJsonError, parse_operator_json, read_operator_json
from dmq.stake import StakeFileError, load_shelley_genesis, load_stake_file
from dmq.topology import TopologyError, load_topology


@pytest.mark.parametrize(("data", "problem"), [
    (b'{"a": NaN}', "invalid JSON: NaN is not a JSON number"),
    (b'{"a": Infinity}', "invalid JSON: Infinity is not a JSON number"),
    (b'{"a": [-Infinity]}', "invalid JSON: -Infinity is not a JSON number"),
    (b'{"a": 1, "b": {"c": 1, "c": 2}}', 'invalid JSON: the key "c" appears twice in one object'),
    (b'{"a": 1,}', "invalid JSON at line 1 column 9: Expecting property name enclosed in double quotes"),
    (b'{"a": "\xff"}', "the demo file is not UTF-8 text"),
    (b"[1]", "the demo file must hold a JSON object, got an array"),
    (b"null", "the demo file must hold a JSON object, got null"),
])
def test_each_rule_is_one_line_naming_the_file(data: bytes, problem: str) -> None:
    with pytest.raises(OperatorJsonError) as refused:
        parse_operator_json(data, "demo.json", "demo")
    assert str(refused.value) == f"demo.json: {problem}"
    assert "\n" not in str(refused.value)


def test_a_document_that_keeps_the_rules_is_returned_as_is() -> None:
    assert parse_operator_json(b'{"a": [1, 2.5, "x"], "b": {"c": null}}', "f", "demo") == {
        "a": [1, 2.5, "x"], "b": {"c": None}}
    assert parse_operator_json("[1, 2]", "f", "demo", expect_object=False) == [1, 2]


def test_the_bytes_come_back_for_hashing_and_a_missing_file_is_left_to_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_bytes(b'{"x": 1}')
    assert read_operator_json(path, "genesis") == (b'{"x": 1}', {"x": 1})
    with pytest.raises(FileNotFoundError):
        read_operator_json(tmp_path / "absent.json", "genesis")
    with pytest.raises(OperatorJsonError, match=r"cannot read the genesis file: Is a directory"):
        read_operator_json(tmp_path, "genesis")


def _config(path: Path) -> None:
    read_config({"ConfigFile": str(path)})


def _key(path: Path) -> None:
    read_text_envelope(path)


@pytest.mark.parametrize(("load", "error"), [
    (_config, ConfigError),
    (load_topology, TopologyError),
    (load_stake_file, StakeFileError),
    (load_shelley_genesis, StakeFileError),
    (_key, KeyFileError),
])
def test_every_loader_reads_through_the_one_reader(tmp_path: Path, load, error) -> None:
    """A duplicated key is refused by none of the old loaders: only the shared reader knows the rule."""
    path = tmp_path / "file.json"
    path.write_bytes(b'{"a": 1, "a": 2}')
    with pytest.raises(error) as refused:
        load(path)
    assert str(refused.value) == f'{path}: invalid JSON: the key "a" appears twice in one object'
