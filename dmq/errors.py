"""The base class of every mistake an operator can fix without reading the code.

A bad configuration key, a missing topology file, an unreadable stake file or an absent
cardano-node socket are not bugs: the command-line front ends print such an error as one
line (what happened, which file or key, what form was expected) and exit with status 1,
without a traceback. Anything that is not an ``OperatorError`` is a bug and keeps its
traceback.
"""

from __future__ import annotations

__all__ = ["OperatorError", "one_line"]


class OperatorError(Exception):
    """An error caused by the node's inputs (files, flags, environment), not by the node."""


def one_line(text: str) -> str:
    """Join a possibly multi-line message into one line, so logs keep one record per error."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
