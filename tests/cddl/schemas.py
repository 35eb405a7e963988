"""The project's CDDL (``docs/protocol/cddl``) as schemas of whole messages.

Each file describes one protocol as DMQ runs it (DMQ version numbers, DMQ messages inside
the envelopes, DMQ reject reasons), written for pycddl 0.6 as
``docs/protocol/cddl/README.md`` says; :func:`tests.dmq.cardano_node.cddl.protocol_rules` loads
it. A :class:`Schema` answers which message alternative of the file accepts an encoded
message, so a test can assert that the encoder wrote the message it meant.
"""

from __future__ import annotations

from functools import cache

from tests.dmq.cardano_node.cddl import protocol_rules, protocol_text

__all__ = ["Schema", "schema"]


class Schema:
    """One protocol's CDDL, ready to check encoded messages against its message alternatives."""

    def __init__(self, name: str) -> None:
        self.text = protocol_text(name)
        self.rules, self.alternatives = protocol_rules(name)

    def message_rule(self, raw: bytes) -> str:
        """The message alternative that accepts ``raw``; ``CddlViolation`` if none does."""
        return self.rules.check(raw, *self.alternatives)

    def accepts(self, rule: str, raw: bytes) -> bool:
        return self.rules.accepts(rule, raw)


@cache
def schema(name: str) -> Schema:
    """``docs/protocol/cddl/<name>.cddl`` with its includes."""
    return Schema(name)
