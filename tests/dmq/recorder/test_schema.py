"""The recording format: records round-trip, manifests carry the version, and the schema
module stands alone (``spark/`` imports it and nothing else from ``dmq``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmq.recorder import schema
from dmq.recorder.schema import (
    CONNECTION_SAMPLES,
    MESSAGE_EVENTS,
    NODE_SAMPLES,
    RECORD_TYPES,
    SCHEMA_VERSION,
    KNOWN_VERSIONS,
    FieldType,
    SchemaVersionError,
    data_file_name,
    decode_manifest,
    decode_record,
    encode_manifest,
    encode_record,
    parse_data_file_name,
)
from tests.conftest import ROOT

_VALUES = {
    FieldType.STRING: st.one_of(st.none(), st.text(max_size=30)),
    FieldType.LONG: st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    FieldType.INT: st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    FieldType.DOUBLE: st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
    FieldType.BOOLEAN: st.one_of(st.none(), st.booleans()),
}


@st.composite
def records(draw):
    record_type = draw(st.sampled_from(list(RECORD_TYPES.values())))
    return record_type, tuple(draw(_VALUES[f.type]) for f in record_type.fields)


@given(records())
def test_a_record_is_one_line_and_round_trips(record):
    record_type, values = record
    line = encode_record(record_type, values)
    assert line.endswith("\n") and line.count("\n") == 1  # text fields with newlines stay escaped
    assert decode_record(record_type, line) == dict(zip(record_type.field_names, values))


def test_wrong_arity_is_refused():
    with pytest.raises(ValueError, match="message_events has 12 fields, got 2"):
        encode_record(MESSAGE_EVENTS, (1.0, "n"))


def test_record_types_have_distinct_known_fields():
    assert set(RECORD_TYPES) == {"message_events", "connection_samples", "node_samples"}
    for record_type in (MESSAGE_EVENTS, CONNECTION_SAMPLES, NODE_SAMPLES):
        names = record_type.field_names
        assert len(set(names)) == len(names)
        assert names[:3] == ("t", "node", "session")


def test_manifest_carries_and_checks_the_version():
    text = encode_manifest(node="h:3001", session="s1", process="h:1", started_at=1.5, sample_interval=1.0)
    assert decode_manifest(text)["schema_version"] == SCHEMA_VERSION
    newer = text.replace(f'"schema_version": {SCHEMA_VERSION}', f'"schema_version": {SCHEMA_VERSION + 1}')
    with pytest.raises(SchemaVersionError, match=f"schema version {SCHEMA_VERSION + 1}; this reader knows versions 1, 2"):
        decode_manifest(newer, source="m.json")
    for unknown in (0, "2", True, None):
        with pytest.raises(SchemaVersionError):
            decode_manifest(text.replace(f'"schema_version": {SCHEMA_VERSION}', f'"schema_version": {json.dumps(unknown)}'))
    with pytest.raises(ValueError, match="missing keys"):
        decode_manifest('{"schema_version": %d, "node": "x"}' % SCHEMA_VERSION)
    with pytest.raises(ValueError, match="unknown manifest keys"):
        encode_manifest(node="x", colour="blue")


def test_file_names_are_safe_and_parse_back():
    name = data_file_name("relay-1.example:3001", "20260101T000000-ab12", 7)
    assert name == "relay-1_example_3001.20260101T000000-ab12.000007.jsonl"
    assert parse_data_file_name(name) == ("relay-1_example_3001", "20260101T000000-ab12", 7)
    assert parse_data_file_name("notes.txt") is None


def _modules_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(sorted(m for m in sys.modules "
                          "if m == 'dmq' or m.startswith('dmq.')))"],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])


def test_schema_module_imports_nothing_else_from_the_project():
    assert _modules_after("import dmq.recorder.schema") == ["dmq", "dmq.recorder", "dmq.recorder.schema"]
    source = (ROOT / "dmq" / "recorder" / "schema.py").read_text()
    assert "from dmq" not in source.replace("from dmq.recorder.schema", "") and "import dmq" not in source
    assert schema.__name__ == "dmq.recorder.schema"


def test_spark_package_imports_only_the_schema_from_dmq():
    modules = ["spark." + p.stem for p in (ROOT / "spark").glob("*.py") if p.stem not in {"__main__"}]
    code = "\n".join(f"import {m}" for m in modules)
    assert _modules_after(code) == ["dmq", "dmq.recorder", "dmq.recorder.schema"]


def test_every_version_is_known_and_fields_say_where_they_came_from():
    assert KNOWN_VERSIONS == (1, 2) and SCHEMA_VERSION == KNOWN_VERSIONS[-1]
    assert NODE_SAMPLES.missing_in(1) == (NODE_SAMPLES.fields[-1],)
    assert [f.name for f in NODE_SAMPLES.missing_in(1)] == ["anon_bytes"]
    assert NODE_SAMPLES.fields_in(2) == NODE_SAMPLES.fields and NODE_SAMPLES.missing_in(2) == ()
    for record_type in (MESSAGE_EVENTS, CONNECTION_SAMPLES):
        assert record_type.fields_in(1) == record_type.fields  # unchanged since version 1
    with pytest.raises(SchemaVersionError):
        NODE_SAMPLES.fields_in(3)


def test_a_version_1_line_decodes_with_the_new_field_defaulted():
    line = json.dumps({"t": 1.0, "node": "n", "session": "s", "process": "h:1", "messages_held": 3,
                       "bytes_held": 2100, "rss_bytes": 90_000_000, "cpu_seconds": 1.5}) + "\n"
    decoded = decode_record(NODE_SAMPLES, line, version=1)
    assert decoded == {"t": 1.0, "node": "n", "session": "s", "process": "h:1", "messages_held": 3,
                       "bytes_held": 2100, "rss_bytes": 90_000_000, "cpu_seconds": 1.5, "anon_bytes": None}
    assert list(decoded) == list(NODE_SAMPLES.field_names)
    # A field a version-1 file happens to carry is not read as the version-2 field.
    stray = json.loads(line) | {"anon_bytes": 5}
    assert decode_record(NODE_SAMPLES, json.dumps(stray), version=1)["anon_bytes"] is None
    assert decode_record(NODE_SAMPLES, json.dumps(stray))["anon_bytes"] == 5
