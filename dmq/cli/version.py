"""``dmq version``: which release of the tools (and of the node beside them) is installed."""

from __future__ import annotations

import argparse

from dmq.cli import package_version

__all__ = ["add_parser", "run"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    subparsers.add_parser("version", help="show the installed version")


def run(args: argparse.Namespace) -> int:
    print(f"dmq version: {package_version()}")
    return 0
