"""Checking CBOR items against the CDDL of the conformance data, with pycddl.

Two workarounds for pycddl 0.6 (cddl-rs), both mechanical: its parser rejects a rule name
followed by a line break before ``=`` (the ouroboros files' style), so those are joined;
and it mis-validates a top-level choice of messages after a failed alternative, so a
message is checked against each alternative of the message rule separately (a message is
valid if one accepts it, which is what a choice means). ``;# import network.base as base``
is resolved by inlining ``network.base.cddl`` without the ``base.`` prefix.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pycddl

from tests.conftest import CONFORMANCE

__all__ = ["CddlRules", "CddlViolation", "ouroboros_rules", "cardano_query_rules", "message_alternatives"]

OUROBOROS_CDDL = CONFORMANCE / "cddl" / "ouroboros"
CARDANO_QUERIES_CDDL = Path(__file__).with_name("cardano-lsq.cddl")

_NAME_THEN_BREAK = re.compile(r"^([A-Za-z][\w.-]*)[ \t]*\n[ \t]*(=|/=|//=)", re.MULTILINE)


class CddlViolation(AssertionError):
    """An item that no rule it was checked against accepts."""


def _normalised(text: str) -> str:
    return _NAME_THEN_BREAK.sub(r"\1 \2", text)


def message_alternatives(text: str, rule: str) -> list[str]:
    """The rule names of a top-level choice ``rule = a / b / c`` (several lines allowed)."""
    match = re.search(rf"^{re.escape(rule)}\s*=\s*((?:[\w.-]+\s*/\s*)*[\w.-]+)", _normalised(text), re.MULTILINE)
    if match is None:
        raise ValueError(f"no rule {rule!r} made of named alternatives")
    return [name.strip() for name in match.group(1).split("/")]


class CddlRules:
    """One CDDL document; ``accepts(rule, raw)`` validates an item against one named rule."""

    def __init__(self, text: str) -> None:
        self.text = _normalised(text)
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
def ouroboros_rules(name: str) -> tuple[CddlRules, tuple[str, ...]]:
    """The rules of ``cddl/ouroboros/<name>.cddl`` and the alternatives of its first rule."""
    text = (OUROBOROS_CDDL / f"{name}.cddl").read_text()
    if ";# import network.base as base" in text:
        text = text.replace("base.", "") + "\n" + (OUROBOROS_CDDL / "network.base.cddl").read_text()
    first = re.search(r"^([A-Za-z][\w-]*)\s*=", _normalised(text), re.MULTILINE).group(1)
    return CddlRules(text), tuple(message_alternatives(text, first))


@cache
def cardano_query_rules() -> CddlRules:
    """The queries and results of WIRE.md 10.2 and 10.3 (``cardano-lsq.cddl`` beside this file)."""
    return CddlRules(CARDANO_QUERIES_CDDL.read_text())
