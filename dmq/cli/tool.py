"""``dmq``: the operator's tool box, one sub-command per module of ``dmq.cli``.

A sub-command is a module ``dmq/cli/<name>.py`` with two functions::

    def add_parser(subparsers) -> None:   # subparsers.add_parser("<name>", help=...) plus its flags
    def run(args: argparse.Namespace) -> int:

Adding ``publish`` or ``capacity-report`` is adding a module: nothing here names them. A module
that fails to import (a missing optional dependency such as pyspark, or a bug) does not take the
other sub-commands down; its sub-command stays listed and reports the import error when run.

An invocation that names a command imports only the module of that name (``capacity-report``:
``capacity_report``) when that module provides the command, so that ``dmq publish`` in a
signer's script does not first import every other command's modules. Anything else
(``dmq``, ``dmq --help``, a command of another module's name) imports them all, so heavy
dependencies still belong inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from typing import Callable, NoReturn, Sequence

import dmq.cli
from dmq.cli import INTERRUPTED, OPERATOR_ERROR, OneLineArgumentParser, exit_with, report
from dmq.errors import OperatorError

__all__ = ["PROGRAM", "SubcommandModule", "subcommand_modules", "build_parser", "run", "main"]

PROGRAM = "dmq"
#: Modules of ``dmq.cli`` that are entry points themselves, not sub-commands.
_NOT_SUBCOMMANDS = frozenset({"node", "tool"})


@dataclass(frozen=True, slots=True)
class SubcommandModule:
    """A module of ``dmq.cli`` providing sub-commands, or the reason it could not be imported."""

    module_name: str
    add_parser: Callable[[argparse._SubParsersAction], object] | None
    run: Callable[[argparse.Namespace], int] | None
    import_error: str | None = None

    @property
    def default_name(self) -> str:
        """``capacity_report`` -> ``capacity-report``: the name shown when the import failed."""
        return self.module_name.rsplit(".", 1)[-1].replace("_", "-")


def subcommand_modules(only: str | None = None) -> list[SubcommandModule]:
    """Every sub-command module of ``dmq.cli`` (or only the one named ``only``), in name order."""
    found: list[SubcommandModule] = []
    for info in sorted(pkgutil.iter_modules(dmq.cli.__path__), key=lambda info: info.name):
        if info.name.startswith("_") or info.name in _NOT_SUBCOMMANDS or info.ispkg:
            continue
        if only is not None and info.name != only:
            continue
        name = f"{dmq.cli.__name__}.{info.name}"
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # one broken module must not take every sub-command down
            reason = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
            found.append(SubcommandModule(name, None, None, import_error=reason))
            continue
        add_parser, run_command = getattr(module, "add_parser", None), getattr(module, "run", None)
        if callable(add_parser) and callable(run_command):
            found.append(SubcommandModule(name, add_parser, run_command))
    return found


def _unavailable(reason: str) -> Callable[[argparse.Namespace], int]:
    def run_unavailable(args: argparse.Namespace) -> int:
        raise OperatorError(f"this sub-command is unavailable: {reason}")

    return run_unavailable


def build_parser(modules: Sequence[SubcommandModule] | None = None) -> OneLineArgumentParser:
    """The parser of every sub-command module's commands (or of ``modules``' only)."""
    return _parser_and_commands(subcommand_modules() if modules is None else modules)[0]


def _parser_and_commands(modules: Sequence[SubcommandModule]) -> tuple[OneLineArgumentParser, set[str]]:
    parser = OneLineArgumentParser(prog=PROGRAM, description="DMQ operator tools", allow_abbrev=False)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command", required=True)
    for module in modules:
        if module.add_parser is None or module.run is None:
            stub = subparsers.add_parser(module.default_name, help=f"(unavailable: {module.import_error})")
            stub.set_defaults(_run=_unavailable(module.import_error or "import failed"))
            continue
        before = set(subparsers.choices)
        module.add_parser(subparsers)
        for name in set(subparsers.choices) - before:
            subparsers.choices[name].set_defaults(_run=module.run)
    return parser, set(subparsers.choices)


def _parser_for(argv: Sequence[str]) -> OneLineArgumentParser:
    """The parser of the module named after the command when it imports and provides that
    command, else every sub-command's."""
    if argv and not argv[0].startswith("-"):
        named = [module for module in subcommand_modules(only=argv[0].replace("-", "_")) if module.run is not None]
        parser, commands = _parser_and_commands(named)
        if argv[0] in commands:
            return parser
    return build_parser()


def run(argv: Sequence[str] | None = None) -> int:
    """Run ``dmq`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser_for(argv).parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except OperatorError as exc:
        report(f"{PROGRAM} {args.command}", str(exc))
        return OPERATOR_ERROR
    except KeyboardInterrupt:
        return INTERRUPTED


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console-script entry point: exits with :func:`run`'s status."""
    exit_with(lambda: run(argv))


if __name__ == "__main__":
    main()
