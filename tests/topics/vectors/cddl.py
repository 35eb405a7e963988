"""The CDDL of protocol 1000 (docs/topics-design.md 3.5), read from the specification, ready for pycddl.

The rules are taken from the ``cddl`` block of section 3.5 itself, plus ``proof`` and
``proofKind`` from the Blocklace block of 5.2, which ``itemBody`` refers to. Two mechanical
rewrites make pycddl 0.6 check what the text says, neither changes the language described:

* pycddl rejects every array with an optional trailing entry (``[uint, tstr, ? uint]``
  accepts nothing), so such an array becomes a choice of the fixed-length arrays it allows.
* pycddl rejects every alternative after the first when a choice of array literals sits
  inside another array, so each array alternative becomes a named rule ``<rule>.<n>``.
* pycddl tries only the last alternative of a type choice written inline as an array entry
  (``[11, dmqId / null]`` refuses every ``dmqId``), so such a choice becomes a named rule
  ``<rule>.entry<n>``.

A message is then checked against each named alternative of its message rule separately
(pycddl also mis-validates a top-level choice after a failed alternative).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tests.dmq.cardano_node.cddl import CddlRules, CddlViolation, message_alternatives
from tests.conftest import ROOT

__all__ = ["TOPICS_MD", "MESSAGE_RULE", "specification_text", "protocol1000_rules", "message_rules",
           "message_rule_of"]

TOPICS_MD = ROOT / "docs" / "topics-design.md"
MESSAGE_RULE = "localTopicMessage"
#: Rules of the Blocklace block (5.2) that 3.5 refers to.
_BORROWED = ("proof", "proofKind")

_COMMENT = re.compile(r";[^\n]*")
_RULE_START = re.compile(r"^(?=[A-Za-z][\w.-]*\s*\n?\s*=)", re.MULTILINE)
_ENTRY = re.compile(r"^(\?\s*)?([A-Za-z][\w-]*\s*:\s*)?(.*)$", re.DOTALL)
_DEFINITION = re.compile(r"^([A-Za-z][\w.-]*)\s*=\s*(.*)$", re.DOTALL)


def _block(text: str, heading: str) -> str:
    section = text[text.index(heading):]
    return re.search(r"```cddl\n(.*?)```", section, re.DOTALL).group(1)


def _rules(block: str) -> dict[str, str]:
    """Rule name -> right-hand side, comments removed and whitespace collapsed."""
    rules = {}
    for chunk in _RULE_START.split(_COMMENT.sub("", block)):
        match = _DEFINITION.match(chunk.strip())
        if match:
            rules[match.group(1)] = " ".join(match.group(2).split())
    return rules


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator`` outside brackets, braces and parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _fixed_lengths(array: str) -> list[str]:
    """``[a, ? b, ? c]`` -> ``[a]``, ``[a, b]``, ``[a, b, c]``; other arrays unchanged."""
    entries = _split_top(array[1:-1], ",")
    required = [e for e in entries if not e.startswith("?")]
    optional = [e[1:].strip() for e in entries if e.startswith("?")]
    if not optional:
        return [array]
    if entries[:len(required)] != required:
        raise ValueError(f"an optional entry before a required one: {array}")
    return ["[" + ", ".join(required + optional[:n]) + "]" for n in range(len(optional) + 1)]


def _named_entry_choices(name: str, array: str, out: dict[str, str]) -> str:
    """``[11, a / b]`` -> ``[11, <name>.entry1]`` with ``<name>.entry1 = a / b`` added to ``out``."""
    entries = []
    for n, entry in enumerate(_split_top(array[1:-1], ",")):
        match = _ENTRY.match(entry)
        occurrence, key, type_ = match.group(1) or "", match.group(2) or "", match.group(3)
        if len(_split_top(type_, "/")) > 1:
            out[f"{name}.entry{n}"] = type_
            type_ = f"{name}.entry{n}"
        entries.append(f"{occurrence}{key}{type_}")
    return "[" + ", ".join(entries) + "]"


def _named_array_alternatives(rules: dict[str, str]) -> dict[str, str]:
    """Each array alternative of a choice, at each length it allows, as a rule of its own."""
    out: dict[str, str] = {}
    for name, rhs in rules.items():
        rhs = " / ".join(_named_entry_choices(name, a, out) if a.startswith("[") and a.endswith("]") else a
                         for a in _split_top(rhs, "/"))
        alternatives = _split_top(rhs, "/")
        arrays = [a for a in alternatives if a.startswith("[") and a.endswith("]")]
        expanded = [f for a in arrays for f in _fixed_lengths(a)]
        if len(expanded) < 2:
            out[name] = rhs
            continue
        names = iter(f"{name}.{n}" for n in range(len(expanded)))
        choice = []
        for alternative in alternatives:
            if alternative in arrays:
                for fixed in _fixed_lengths(alternative):
                    choice.append(part := next(names))
                    out[part] = fixed
            else:
                choice.append(alternative)
        out[name] = " / ".join(choice)
    return out


@cache
def specification_text() -> str:
    """The 3.5 rules (and the borrowed 5.2 ones) exactly as docs/topics-design.md writes them."""
    text = TOPICS_MD.read_text()
    borrowed = _rules(_block(text, "### 5.2 CDDL"))
    rules = _rules(_block(text, "### 3.5 CDDL"))
    rules.update((name, borrowed[name]) for name in _BORROWED)
    return "\n".join(f"{name} = {rhs}" for name, rhs in rules.items()) + "\n"


@cache
def _rewritten() -> dict[str, str]:
    return _named_array_alternatives(_rules(specification_text()))


@cache
def protocol1000_rules() -> CddlRules:
    return CddlRules("\n".join(f"{name} = {rhs}" for name, rhs in _rewritten().items()) + "\n")


def message_rules() -> tuple[str, ...]:
    """The sixteen message rules of ``localTopicMessage``."""
    return tuple(message_alternatives(specification_text(), MESSAGE_RULE))


def message_rule_of(raw: bytes) -> str:
    """The message rule of ``localTopicMessage`` that accepts ``raw``; ``CddlViolation`` if none does."""
    rewritten = _rewritten()
    for rule in message_rules():
        parts = [part for part in _split_top(rewritten[rule], "/") if part.startswith(f"{rule}.")] or [rule]
        for part in parts:
            if protocol1000_rules().accepts(part, raw):
                return rule
    raise CddlViolation(f"{raw[:64].hex()} ({len(raw)} bytes) matches no message of docs/topics-design.md 3.5")
