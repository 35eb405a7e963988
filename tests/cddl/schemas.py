"""The CDDL files of ``conformance/cddl/``, assembled into documents pycddl can check.

Three things stand between those files and pycddl, each handled mechanically here:

* Imports. The files use the cddlc convention ``;# import sig as sig`` (a comment to any
  other tool) and refer to the imported rules as ``sig.message``. A dot is legal inside a
  CDDL name, so an import is resolved by appending the imported file with every rule it
  defines renamed ``<prefix>.<name>``; nested imports get nested prefixes, so nothing
  collides. An import nobody refers to is not loaded (``handshake-node-to-node-v14``
  imports a ``-v16`` file that the conformance data does not hold and DMQ does not use).
* pycddl 0.6 quirks. Line breaks between a rule name and its ``=`` and a top-level choice
  of messages: :class:`tests.cardano_node.cddl.CddlRules` already deals with both. And
  ``[* name]`` where ``name`` is a choice of literal values (``versionNumbers = 1 / 2``)
  fails for every non-empty array, while the same choice written inline,
  ``[* (1 / 2)]``, works: such references are inlined.
* Instantiation. The ouroboros files describe the Cardano instance of generic protocols
  (Cardano version numbers, ``tx = any``, ``rejectReason = int``). DMQ runs the same
  envelopes with its own parameters (WIRE.md 4.2, 7.1, 9.4, and 12.1 says which parts of
  the files do not apply). Those rules are replaced by name, each replacement with its
  reason, and every replacement must hit a rule that exists: if an upstream file changes
  shape, the test fails instead of silently checking something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from tests.cardano_node.cddl import CddlRules, message_alternatives
from tests.conftest import CONFORMANCE

__all__ = ["CDDL_DIR", "Schema", "schema", "DMQ_INSTANCES", "STALE_BODY_RANGE", "PROJECT_BODY_RANGE"]

CDDL_DIR = CONFORMANCE / "cddl"

_IMPORT = re.compile(r"^;#\s*import\s+([\w.-]+)\s+as\s+([\w.-]+)\s*$", re.MULTILINE)
_COMMENT = re.compile(r";[^\n]*")
_NAME_THEN_BREAK = re.compile(r"^([A-Za-z][\w.-]*)[ \t]*\n[ \t]*(=|/=|//=)", re.MULTILINE)
_RULE_START = re.compile(r"^([A-Za-z@_$][\w.@$-]*)\s*(?:=|/=|//=)")
_NAME = re.compile(r"(?<![\w.@$-])([A-Za-z@_$][\w.@$-]*)")
_VALUE_CHOICE = re.compile(r"^[^=]*=\s*(\d+(?:\s*/\s*\d+)+)\s*$")

#: ``sig.cddl`` (the reference repository's own file) still bounds the body at 360 bytes;
#: the reference 0.7 decoder and WIRE.md 5.1 say 90 (CHANGELOG 0.7.0.0).
STALE_BODY_RANGE = "bstr .size (360..2000)"
PROJECT_BODY_RANGE = "bstr .size (90..2000)"


@dataclass(frozen=True)
class Instance:
    """How DMQ instantiates one CDDL file: extra imports and rules replaced by name."""

    imports: tuple[tuple[str, str], ...] = ()
    #: Rule name (as written in the file, or ``prefix.name`` for an imported rule) -> new right-hand side.
    rules: dict[str, str] = field(default_factory=dict)
    #: Rules the instance adds (name -> right-hand side).
    added: dict[str, str] = field(default_factory=dict)
    why: str = ""


_N2N_VERSIONS = "1 / 2"  # NodeToNodeV_1, NodeToNodeV_2
_N2C_VERSIONS = "4097"  # NodeToClientV_1 with bit 12 set

#: The project-normative instances, keyed by CDDL file (relative to ``conformance/cddl``, no suffix).
DMQ_INSTANCES: dict[str, Instance] = {
    "dmq/sig": Instance(rules={"messageBody": PROJECT_BODY_RANGE},
                        why="WIRE.md 5.1: body 90..2000 (the file's 360 is stale)"),
    "ouroboros/handshake-node-to-node-v14": Instance(
        rules={
            "versionNumbers": _N2N_VERSIONS,
            "msgAcceptVersion": "[1, versionNumbers, v14.nodeToNodeVersionData]",
            "versionTable": "{ * versionNumbers => v14.nodeToNodeVersionData }",
        },
        why="WIRE.md 4.2, 4.4: DMQ N2N versions 1 and 2, both with the v14 version data shape"),
    "ouroboros/handshake-node-to-client": Instance(
        rules={"versionNumber": _N2C_VERSIONS},
        why="WIRE.md 4.2, 4.4: the DMQ N2C socket has one version, 4097"),
    "ouroboros/local-tx-submission": Instance(
        imports=(("sig", "sig"),),
        # Named alternatives: pycddl 0.6 rejects every alternative after the first when a
        # choice of array literals sits inside another array.
        rules={"base.tx": "sig.message",
               "rejectReason": "rejectInvalid / rejectAlreadyReceived / rejectExpired / rejectOther"},
        added={"rejectInvalid": "[0, tstr]", "rejectAlreadyReceived": "[1]", "rejectExpired": "[2]",
               "rejectOther": "[3, tstr]"},
        why="WIRE.md 7.1, 7.2: the LocalTxSubmission envelope carrying DMQ messages, DMQ reject reasons"),
    "ouroboros/tx-submission2": Instance(
        imports=(("sig", "sig"),),
        rules={"base.txId": "sig.messageId", "base.tx": "sig.message"},
        why="WIRE.md 9.4: sig submission V1 is TxSubmission2 with txid = messageId, tx = message"),
}


def _locate(name: str, near: Path) -> Path | None:
    for folder in (near, CDDL_DIR / "dmq", CDDL_DIR / "ouroboros"):
        path = folder / f"{name}.cddl"
        if path.is_file():
            return path
    return None


def _split_rules(text: str) -> dict[str, str]:
    """Rule name -> its whole definition text (first line and indented continuation lines)."""
    rules: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        start = _RULE_START.match(line)
        if start:
            current = rules.setdefault(start.group(1), [])
            current.append(line)
        elif current is not None and line.strip():
            current.append(line)
    return {name: "\n".join(lines) for name, lines in rules.items()}


def _replace_rules(rules: dict[str, str], replacements: dict[str, str], where: str) -> dict[str, str]:
    missing = sorted(set(replacements) - set(rules))
    if missing:
        raise KeyError(f"{where} defines no rule {', '.join(missing)}: the instance no longer fits the file")
    return {name: f"{name} = {replacements[name]}" if name in replacements else text
            for name, text in rules.items()}


def _prefixed(rules: dict[str, str], prefix: str) -> dict[str, str]:
    """The same rules with every name they define renamed ``prefix.name``, references included."""
    def rename(match: re.Match) -> str:
        name = match.group(1)
        return f"{prefix}.{name}" if name in rules else name

    return {f"{prefix}.{name}": _NAME.sub(rename, text) for name, text in rules.items()}


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _load(path: Path, instances: dict[str, Instance], seen: tuple[Path, ...] = ()) -> dict[str, str]:
    """The rules of one file with its used imports resolved and its instance's replacements applied."""
    if path in seen:
        raise ValueError(f"import cycle through {path.name}")
    instance = instances.get(_key(path), Instance())
    raw = path.read_text()
    imports = _IMPORT.findall(raw) + list(instance.imports)
    rules = _split_rules(_NAME_THEN_BREAK.sub(r"\1 \2", _COMMENT.sub("", raw)))
    own = {k: v for k, v in instance.rules.items() if "." not in k}
    of_imports = {k: v for k, v in instance.rules.items() if "." in k}
    rules = _replace_rules(rules, own, path.name)
    rules.update((name, f"{name} = {text}") for name, text in instance.added.items())
    used = "\n".join([*rules.values(), *of_imports, *of_imports.values()])
    for name, prefix in dict.fromkeys(imports):
        if f"{prefix}." not in used:
            continue
        target = _locate(name, path.parent)
        if target is None:
            raise FileNotFoundError(f"{path.name} imports {name!r}, which is not in {CDDL_DIR}")
        rules.update(_prefixed(_load(target, instances, seen + (path,)), prefix))
    return _replace_rules(rules, of_imports, f"{path.name} with its imports")


def _inline_repeated_value_choices(rules: dict[str, str]) -> dict[str, str]:
    """``[* name]`` -> ``[* (1 / 2)]`` for rules that are a choice of literal values (pycddl 0.6)."""
    choices = {name: m.group(1) for name, text in rules.items() if (m := _VALUE_CHOICE.match(text))}
    if not choices:
        return rules
    repeated = re.compile(r"([*+?]\s*)(" + "|".join(map(re.escape, choices)) + r")(?![\w.@$-])")
    return {name: repeated.sub(lambda m: f"{m.group(1)}({choices[m.group(2)]})", text)
            for name, text in rules.items()}


class Schema:
    """One message CDDL, ready to check encoded messages against its message alternatives."""

    def __init__(self, rules: dict[str, str]) -> None:
        rules = _inline_repeated_value_choices(rules)
        self.text = "\n".join(rules.values()) + "\n"
        self.rules = CddlRules(self.text)
        first = next(iter(rules))
        try:
            self.alternatives = tuple(message_alternatives(self.text, first))
        except ValueError:  # a single message shape, not a choice (sig.cddl)
            self.alternatives = (first,)

    def message_rule(self, raw: bytes) -> str:
        """The message alternative that accepts ``raw``; ``CddlViolation`` if none does."""
        return self.rules.check(raw, *self.alternatives)

    def accepts(self, rule: str, raw: bytes) -> bool:
        return self.rules.accepts(rule, raw)


@cache
def schema(name: str, *, as_published: bool = False) -> Schema:
    """``cddl/<name>.cddl`` as DMQ instantiates it, or exactly as published (imports resolved)."""
    return Schema(_load(CDDL_DIR / f"{name}.cddl", {} if as_published else DMQ_INSTANCES))
