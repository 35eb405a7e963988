"""Checking CBOR items against the project's CDDL (``docs/protocol/cddl``), with pycddl.

The schemas are written for pycddl 0.6 (see ``docs/protocol/cddl/README.md``): the first rule
of a file is the choice of its messages, each a named rule, and a message is checked against
each alternative separately (pycddl mis-validates a top-level choice after a failed
alternative; a message is valid if one alternative accepts it, which is what a choice means).
``;# include message.cddl`` appends that file's rules.
"""

from __future__ import annotations

import re
from functools import cache

import pycddl

from tests.conftest import ROOT

__all__ = ["PROTOCOL_CDDL", "CddlRules", "CddlViolation", "protocol_rules", "protocol_text", "cardano_query_rules",
           "message_alternatives"]

#: The project's schemas, beside the protocol documentation they belong to.
PROTOCOL_CDDL = ROOT / "docs" / "protocol" / "cddl"

_INCLUDE = re.compile(r"^;#\s*include\s+([\w.-]+\.cddl)\s*$", re.MULTILINE)
_COMMENT = re.compile(r";[^\n]*")


class CddlViolation(AssertionError):
    """An item that no rule it was checked against accepts."""


def message_alternatives(text: str, rule: str) -> list[str]:
    """The rule names of a top-level choice ``rule = a / b / c`` (several lines allowed)."""
    match = re.search(rf"^{re.escape(rule)}\s*=\s*((?:[\w.-]+\s*/\s*)*[\w.-]+)", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"no rule {rule!r} made of named alternatives")
    return [name.strip() for name in match.group(1).split("/")]


class CddlRules:
    """One CDDL document; ``accepts(rule, raw)`` validates an item against one named rule."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._schemas: dict[str, pycddl.Schema] = {}

    def _schema(self, rule: str) -> pycddl.Schema:
        schema = self._schemas.get(rule)
        if schema is None:
            schema = self._schemas[rule] = pycddl.Schema(f"check-root = {rule}\n{self.text}")
        return schema

    def accepts(self, rule: str, raw: bytes) -> bool:
        try:
            self._schema(rule).validate_cbor(raw)
        except pycddl.ValidationError:
            return False
        return True

    def check(self, raw: bytes, *rules: str) -> str:
        """The first of ``rules`` that accepts ``raw``; :class:`CddlViolation` if none does."""
        for rule in rules:
            if self.accepts(rule, raw):
                return rule
        raise CddlViolation(f"{raw[:64].hex()} ({len(raw)} bytes) matches none of {', '.join(rules)}")


@cache
def protocol_text(name: str) -> str:
    """``docs/protocol/cddl/<name>.cddl`` with the files it includes appended."""
    text = (PROTOCOL_CDDL / f"{name}.cddl").read_text()
    included = [(PROTOCOL_CDDL / file).read_text() for file in _INCLUDE.findall(text)]
    return "\n".join([text, *included])


@cache
def protocol_rules(name: str) -> tuple[CddlRules, tuple[str, ...]]:
    """The rules of ``docs/protocol/cddl/<name>.cddl`` and the message alternatives of its first rule.

    A file whose first rule is a single shape (``message.cddl``) has that rule as its one alternative.
    """
    text = protocol_text(name)
    first = re.search(r"^([A-Za-z][\w-]*)\s*=", _COMMENT.sub("", text), re.MULTILINE).group(1)
    try:
        return CddlRules(text), tuple(message_alternatives(text, first))
    except ValueError:
        return CddlRules(text), (first,)


@cache
def cardano_query_rules() -> CddlRules:
    """The queries and results of docs/protocol/cardano-node-link.md 10.2 and 10.3 (``local-state-query.cddl``)."""
    return protocol_rules("local-state-query")[0]
