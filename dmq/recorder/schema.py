"""The recorded-traffic format: record types, their fields and types, file names, versions.

This module is the one contract between the node that writes recordings and the Spark
pipeline that reads them (``spark/`` imports it and nothing else from ``dmq``), so it imports
nothing from the project and only the standard library. Changing a field's meaning or type
is a new :data:`SCHEMA_VERSION`; readers refuse versions they do not know rather than
guessing, and read every version they do know: a field records the version that introduced
it (:attr:`Field.since`) and the value older recordings stand for (:attr:`Field.default`,
None when an older writer could not know it), so a reader asks :meth:`RecordType.fields_in`
what a file of a given version holds and fills the rest.

Versions:

1. The first format.
2. ``node_samples.anon_bytes``: the resident memory not backed by a file. A node with a
   durable mempool maps its LMDB file, and the pages of that map that are resident count in
   RSS although they are page cache the kernel can drop; memory per message held is the
   slope of the anonymous part (the heap), which version 1 could not tell apart.

Layout of a recording directory::

    <dir>/manifest.<node>.<session>.json        one per node run (see :data:`MANIFEST_FIELDS`)
    <dir>/<record type>/<node>.<session>.<seq>.jsonl

Each data file is JSON lines, one object per record with exactly the fields of its record
type, appended and never rewritten; a file is closed and the next ``seq`` opened when it
reaches its size or age limit. JSON lines because Spark reads them in parallel without a
custom reader, a reader of a live recording only loses a possibly torn last line, and an
operator can ``grep`` them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping, Sequence

__all__ = [
    "SCHEMA_VERSION",
    "KNOWN_VERSIONS",
    "FieldType",
    "Field",
    "RecordType",
    "MessageEventKind",
    "MESSAGE_EVENTS",
    "CONNECTION_SAMPLES",
    "NODE_SAMPLES",
    "RECORD_TYPES",
    "MANIFEST_FIELDS",
    "DATA_SUFFIX",
    "LOCAL_ORIGIN",
    "N2N_LINKS",
    "N2C_LINK",
    "SchemaVersionError",
    "safe_name",
    "data_file_name",
    "manifest_file_name",
    "parse_data_file_name",
    "encode_record",
    "decode_record",
    "encode_manifest",
    "decode_manifest",
]

#: Version of everything this module defines; written into every manifest.
SCHEMA_VERSION = 2
#: Every version a reader of this module can load (older ones with their missing fields defaulted).
KNOWN_VERSIONS = (1, 2)

#: Data files end with this; anything else in a record-type folder is ignored by readers.
DATA_SUFFIX = ".jsonl"

#: ``peer`` of a message that a local client submitted (not received from a peer).
LOCAL_ORIGIN = "local"
#: ``link`` values of connection samples.
N2N_LINKS = ("n2n-in", "n2n-out")
N2C_LINK = "n2c"


class SchemaVersionError(ValueError):
    """A recording was written with a schema version this reader does not know."""


class FieldType(str, Enum):
    """Column types, named as Spark SQL names them (``spark`` maps them to its types)."""

    STRING = "string"
    LONG = "long"
    INT = "int"
    DOUBLE = "double"
    BOOLEAN = "boolean"


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: FieldType
    doc: str
    #: The schema version that introduced the field.
    since: int = 1
    #: What a record of an older version stands for in this field (None: unknown).
    default: Any = None


@dataclass(frozen=True, slots=True)
class RecordType:
    """One kind of record: its folder name and its fields in file order."""

    name: str
    fields: tuple[Field, ...]
    doc: str

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def fields_in(self, version: int) -> tuple[Field, ...]:
        """The fields a file written with schema ``version`` holds, in file order."""
        _check_version(version)
        return tuple(f for f in self.fields if f.since <= version)

    def missing_in(self, version: int) -> tuple[Field, ...]:
        """The fields a reader must default for a file of schema ``version``."""
        _check_version(version)
        return tuple(f for f in self.fields if f.since > version)


class MessageEventKind(str, Enum):
    """What happened to a message at the recording node.

    A message submitted by a local client or received from a peer appears once, as
    ``accepted`` or ``rejected``, with ``peer`` = :data:`LOCAL_ORIGIN` or the peer's address:
    that pair says both where it came from and what the node decided.
    """

    ACCEPTED = "accepted"    # validated and appended to the mempool; verify_ns set
    REJECTED = "rejected"    # failed validation; reason and reaction set
    EXPIRED = "expired"      # purged at its expiresAt
    OFFERED = "offered"      # its id (and size) announced to a peer
    SENT = "sent"            # its bytes sent to a peer that asked for it
    NOTIFIED = "notified"    # delivered to a local subscriber; one record per batch, count set


_S, _L, _I, _D, _B = FieldType.STRING, FieldType.LONG, FieldType.INT, FieldType.DOUBLE, FieldType.BOOLEAN

MESSAGE_EVENTS = RecordType(
    "message_events",
    (
        Field("t", _D, "wall-clock time, POSIX seconds"),
        Field("node", _S, "the recording node"),
        Field("session", _S, "the node run that wrote the record"),
        Field("event", _S, "a MessageEventKind value"),
        Field("message_id", _S, "hex; null for a notification batch"),
        Field("pool_id", _S, "hex Blake2b-224 of the cold key; null when the event does not carry it"),
        Field("size", _L, "wire bytes of the message (of the whole batch for notified)"),
        Field("count", _I, "messages in the record: 1, or the batch length for notified"),
        Field("peer", _S, "origin (local or peer address), the peer offered or sent to, or the local client"),
        Field("reason", _S, "rejection: the reference's error text"),
        Field("reaction", _S, "rejection: reject, trace or disconnect"),
        Field("verify_ns", _L, "accepted: validation time of the message in nanoseconds"),
    ),
    "One record per message event at the node.",
)

CONNECTION_SAMPLES = RecordType(
    "connection_samples",
    (
        Field("t", _D, "wall-clock time of the sample, POSIX seconds"),
        Field("node", _S, "the recording node"),
        Field("session", _S, "the node run that wrote the record"),
        Field("conn", _L, "connection number, unique within the session"),
        Field("peer", _S, "the peer's address or the local client's label"),
        Field("link", _S, "n2n-in, n2n-out or n2c"),
        Field("protocol", _I, "mini-protocol number"),
        Field("mode", _S, "initiator or responder: our instance of the protocol"),
        Field("bytes_in", _L, "cumulative bytes received, 8-byte SDU headers included"),
        Field("bytes_out", _L, "cumulative bytes sent, 8-byte SDU headers included"),
        Field("sdus_in", _L, "cumulative SDUs received"),
        Field("sdus_out", _L, "cumulative SDUs sent"),
        Field("final", _B, "the connection's last sample: it ended, or the recording stopped"),
    ),
    "Per connection and mini-protocol, cumulative counters sampled every interval.",
)

NODE_SAMPLES = RecordType(
    "node_samples",
    (
        Field("t", _D, "wall-clock time of the sample, POSIX seconds"),
        Field("node", _S, "the recording node"),
        Field("session", _S, "the node run that wrote the record"),
        Field("process", _S, "host:pid; nodes sharing a process share its memory and CPU"),
        Field("messages_held", _L, "messages in the mempool"),
        Field("bytes_held", _L, "wire bytes of the messages in the mempool"),
        Field("rss_bytes", _L, "resident memory of the process"),
        Field("cpu_seconds", _D, "CPU time of the process (user + system) since it started"),
        Field("anon_bytes", _L, "resident memory not backed by a file (RSS minus shared pages)", since=2),
    ),
    "Per node, sampled every interval.",
)

RECORD_TYPES: Mapping[str, RecordType] = {
    rt.name: rt for rt in (MESSAGE_EVENTS, CONNECTION_SAMPLES, NODE_SAMPLES)
}

#: Keys of a manifest file, which describes one node run.
MANIFEST_FIELDS: Mapping[str, str] = {
    "schema_version": "SCHEMA_VERSION of the writer",
    "node": "the recording node",
    "session": "this run's id",
    "process": "host:pid",
    "started_at": "wall-clock time the recording started, POSIX seconds",
    "sample_interval": "seconds between samples",
}

#: One encoder for every record (``json.dumps`` with options builds a new one per call).
_encode_json = json.JSONEncoder(separators=(",", ":")).encode

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_DATA_NAME = re.compile(r"^(?P<node>[A-Za-z0-9_-]+)\.(?P<session>[A-Za-z0-9_-]+)\.(?P<seq>[0-9]+)\.jsonl$")


def safe_name(text: str) -> str:
    """A node name or session as it may appear in a file name (``host:3001`` -> ``host_3001``)."""
    return _UNSAFE.sub("_", text).strip("_") or "node"


def data_file_name(node: str, session: str, seq: int) -> str:
    return f"{safe_name(node)}.{safe_name(session)}.{seq:06d}{DATA_SUFFIX}"


def parse_data_file_name(name: str) -> tuple[str, str, int] | None:
    """``(node, session, seq)`` of a data file name, or None for any other file."""
    match = _DATA_NAME.match(name)
    if match is None:
        return None
    return match["node"], match["session"], int(match["seq"])


def manifest_file_name(node: str, session: str) -> str:
    return f"manifest.{safe_name(node)}.{safe_name(session)}.json"


def encode_record(record_type: RecordType, values: Sequence[Any]) -> str:
    """One JSON line (with its newline) for ``values`` in ``record_type``'s field order."""
    names = record_type.field_names
    if len(values) != len(names):
        raise ValueError(f"{record_type.name} has {len(names)} fields, got {len(values)} values")
    return _encode_json(dict(zip(names, values))) + "\n"


def _check_version(version: Any) -> None:
    if version not in KNOWN_VERSIONS:
        raise SchemaVersionError(f"schema version {version!r} is not one of the known versions {KNOWN_VERSIONS}")


def decode_record(record_type: RecordType, line: str, version: int = SCHEMA_VERSION) -> dict[str, Any]:
    """A JSON line of a ``version`` file back to a mapping of every current field.

    Fields the line lacks are None; fields its version did not have take their default.
    """
    obj = json.loads(line)
    values = {f.name: obj.get(f.name) for f in record_type.fields_in(version)}
    values.update((f.name, f.default) for f in record_type.missing_in(version))
    return {name: values[name] for name in record_type.field_names}


def encode_manifest(**values: Any) -> str:
    unknown = set(values) - set(MANIFEST_FIELDS) - {"schema_version"}
    if unknown:
        raise ValueError(f"unknown manifest keys: {sorted(unknown)}")
    return json.dumps({"schema_version": SCHEMA_VERSION, **values}, indent=2, sort_keys=True) + "\n"


def decode_manifest(text: str, source: str = "manifest") -> dict[str, Any]:
    """A manifest's keys; refuses a schema version not in :data:`KNOWN_VERSIONS`."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{source}: expected a JSON object")
    version = obj.get("schema_version")
    if version not in KNOWN_VERSIONS or isinstance(version, bool):
        known = ", ".join(map(str, KNOWN_VERSIONS))
        raise SchemaVersionError(f"{source}: recorded with schema version {version!r}; this reader knows versions {known}")
    missing = [key for key in MANIFEST_FIELDS if key not in obj]
    if missing:
        raise ValueError(f"{source}: missing keys {missing}")
    return obj
