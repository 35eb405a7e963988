"""Command-line front ends: ``dmq-node`` (the node) and ``dmq`` (the operator's tool box).

Both print an operator's mistake as one line on stderr, ``<program>: <what happened>``, and
exit with status 1 (docs/architecture.md principle 9); a traceback means a bug. The helpers here
give both commands that behaviour, including for mistyped flags.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from importlib import metadata
from typing import NoReturn, TextIO

from dmq.errors import OperatorError, one_line

__all__ = ["OneLineArgumentParser", "USAGE_ERROR", "OPERATOR_ERROR", "INTERRUPTED", "CLOSED_PIPE", "report",
           "exit_with", "package_version", "hex_bytes"]

#: Exit statuses. A bad flag exits 1 like the reference (optparse-applicative), not argparse's 2.
OPERATOR_ERROR = 1
USAGE_ERROR = 1
INTERRUPTED = 130
#: The status a shell shows for a program ended by SIGPIPE (``dmq keys pool-id ... | head -1``).
CLOSED_PIPE = 128 + signal.SIGPIPE


class OneLineArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line pointing at ``--help``.

    Sub-command parsers inherit the class, so ``dmq publish --bad`` reports as
    ``dmq publish: unrecognized arguments: --bad (see dmq publish --help)``.
    """

    def error(self, message: str) -> NoReturn:
        report(self.prog, f"{message} (see {self.prog} --help)")
        sys.exit(USAGE_ERROR)


def exit_with(run: Callable[[], int]) -> NoReturn:
    """Exit with ``run()``'s status; a reader that went away (``| head -1``) ends the command quietly.

    Python ignores SIGPIPE, so writing to a closed pipe raises ``BrokenPipeError`` wherever the
    command printed, and flushing stdout at exit fails again. Both console scripts end here, so
    every command behaves as ``cat`` does: no traceback, the status of a SIGPIPE death.
    """
    try:
        status = run()
        sys.stdout.flush()
    except BrokenPipeError:
        # Nothing more can reach the reader; point stdout at /dev/null so the exit flush is silent.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        status = CLOSED_PIPE
    sys.exit(status)


def report(program: str, message: str, stream: TextIO | None = None) -> None:
    """Write ``program: message`` as exactly one line."""
    print(f"{program}: {one_line(message)}", file=stream or sys.stderr, flush=True)


def package_version() -> str:
    """The installed distribution's version (``dmq-node`` in pyproject)."""
    try:
        return metadata.version("dmq-node")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def hex_bytes(text: str, what: str, size: int | None = None) -> bytes:
    """Bytes an operator gave in hexadecimal (white space anywhere is ignored, so pasted dumps work),
    or one line naming the argument and what was expected."""
    try:
        value = bytes.fromhex("".join(text.split()))
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise OperatorError(f"{what} is not hexadecimal: {shown!r}") from None
    if size is not None and len(value) != size:
        raise OperatorError(f"{what} {text!r}: expected {size} bytes, got {len(value)}")
    return value
