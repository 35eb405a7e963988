"""The memory allocator of a large simulation: glibc's malloc on transparent huge pages.

Hundreds of nodes in one process hold gigabytes of small objects, and every link write touches
some of them, spread over that heap: with 4 KiB pages most of those touches also miss the TLB.
CPython's own allocator takes its arenas from ``mmap`` in 1 MiB pieces, which the kernel backs with
huge pages only when transparent huge pages are on for everything; glibc's malloc asks for them
itself (the ``glibc.malloc.hugetlb=1`` tunable, glibc 2.35 and later) under the usual "madvise"
setting. At 1,000 nodes and mainnet's rate that cut the CPU of a simulated second of publishing
by 13 %, measured with both allocators running at once, while glibc's malloc alone was a little
slower than CPython's (docs/benchmarks.md "The simulated network's heap on huge pages").

Both settings take effect only when the interpreter starts, so a run that wants them starts its
own program again with them (:func:`restart_with`), before it has built anything; the nodes of
``--processes 2`` are forked from that program and inherit them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

__all__ = ["ALLOCATORS", "HUGE_PAGES_FROM", "allocator_in_use", "restart_with"]

#: ``--allocator`` choices: ``auto`` (huge pages from :data:`HUGE_PAGES_FROM` nodes), ``python``
#: (CPython's own allocator, 4 KiB pages) and ``huge-pages`` (glibc's malloc on huge pages).
ALLOCATORS = ("auto", "python", "huge-pages")
#: From this many nodes ``auto`` means huge pages: a heap of gigabytes (1.7 GiB a process at 1,000
#: nodes once connected). A smaller run would pay glibc's slower start-up for little.
HUGE_PAGES_FROM = 500

_MALLOC_VARIABLE = "PYTHONMALLOC"
_TUNABLE = "glibc.malloc.hugetlb=1"


def _tunables(environ: Mapping[str, str]) -> list[str]:
    return [item for item in environ.get("GLIBC_TUNABLES", "").split(":") if item]


def allocator_in_use(environ: Mapping[str, str] = os.environ) -> str:
    """``huge-pages`` when this interpreter runs on glibc's malloc with huge pages, else ``python``."""
    return "huge-pages" if environ.get(_MALLOC_VARIABLE) == "malloc" and _TUNABLE in _tunables(environ) else "python"


def _wanted(choice: str, nodes: int) -> str:
    if choice not in ALLOCATORS:
        raise ValueError(f"--allocator must be one of {', '.join(ALLOCATORS)}, not {choice!r}")
    if choice == "auto":
        return "huge-pages" if nodes >= HUGE_PAGES_FROM else "python"
    return choice


def restart_with(choice: str, nodes: int, say: Callable[[str], None],
                 execute: Callable[[str, list[str], dict[str, str]], None] = os.execve) -> None:
    """Start this program again on the allocator ``choice`` asks for, unless it already runs on it.

    Returns when nothing needs to change: the allocator is already the wanted one, or ``auto`` finds
    ``PYTHONMALLOC`` set by the caller's environment (theirs to choose). Otherwise it replaces the
    process (``execute``, :func:`os.execve`) with the same command line, ``PYTHONMALLOC=malloc`` and
    the huge-page tunable added to any other ``GLIBC_TUNABLES`` (``huge-pages``), or both removed
    (``python``), and says so in one line first.
    """
    wanted = _wanted(choice, nodes)
    if wanted == allocator_in_use():
        return
    if choice == "auto" and _MALLOC_VARIABLE in os.environ:
        return
    environ = dict(os.environ)
    others = [item for item in _tunables(environ) if item != _TUNABLE]
    environ.pop("GLIBC_TUNABLES", None)
    environ.pop(_MALLOC_VARIABLE, None)
    if wanted == "huge-pages":
        environ[_MALLOC_VARIABLE] = "malloc"
        environ["GLIBC_TUNABLES"] = ":".join([*others, _TUNABLE])
        say(f"simnet: {nodes} nodes: starting again on glibc's malloc with transparent huge pages "
            f"(PYTHONMALLOC=malloc, GLIBC_TUNABLES={_TUNABLE})")
    else:
        if others:
            environ["GLIBC_TUNABLES"] = ":".join(others)
        say("simnet: starting again on CPython's own allocator")
    sys.stdout.flush()
    sys.stderr.flush()
    execute(sys.executable, [sys.executable, *sys.orig_argv[1:]], environ)
