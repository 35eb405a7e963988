"""The one reader of the JSON files an operator hands the node.

Configuration, topology, stake files, Shelley genesis and key text envelopes are all read
here, so a mistake in any of them is met by the same rules and reported the same way: one
line, ``<file>: <problem>``, no stack trace (each caller turns :class:`OperatorJsonError`
into its own error type at its boundary).

The rules:

- the file is UTF-8 text holding exactly one JSON document;
- ``NaN``, ``Infinity`` and ``-Infinity`` are refused: they are not JSON (RFC 8259), and a
  number that is not a number has no meaning in any of these files;
- a key repeated inside one object is refused, naming the key: the last one silently winning
  would hide an edit the operator believes took effect;
- where the caller expects an object, any other top level is refused, naming what it is.

A missing file raises :class:`FileNotFoundError` unchanged, because the callers treat it
differently (an absent configuration file means the defaults; an absent topology file gets a
hint on how to name one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["OperatorJsonError", "parse_operator_json", "read_operator_json", "json_kind", "json_shown"]


class OperatorJsonError(ValueError):
    """A JSON file the node cannot use; ``str()`` is the one line to show."""

    def __init__(self, source: str | Path, problem: str) -> None:
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"the key {json.dumps(key, ensure_ascii=False)} appears twice in one object")
        result[key] = value
    return result


def json_kind(value: Any) -> str:
    """What a JSON value is, for messages: ``an object``, ``an array``, ``a string`` ..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def json_shown(value: Any) -> str:
    """A value as the operator wrote it, short enough for a one-line message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_operator_json(data: bytes | str, source: str | Path, what: str, *, expect_object: bool = True) -> Any:
    """The document in ``data`` (read from ``source``, a ``what`` file), under the rules above."""
    try:
        document = json.loads(data, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise OperatorJsonError(source, f"the {what} file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise OperatorJsonError(source, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise OperatorJsonError(source, f"invalid JSON: {exc}") from None
    if expect_object and not isinstance(document, dict):
        raise OperatorJsonError(source, f"the {what} file must hold a JSON object, got {json_kind(document)}")
    return document


def read_operator_json(path: str | Path, what: str, *, expect_object: bool = True) -> tuple[bytes, Any]:
    """``(bytes, document)`` of the ``what`` file at ``path`` (the bytes for callers that hash them)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise OperatorJsonError(path, f"cannot read the {what} file: {exc.strerror or exc}") from None
    return data, parse_operator_json(data, path, what, expect_object=expect_object)
