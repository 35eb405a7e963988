"""The node's file descriptors: the limit it runs with, and its listeners running out of them.

Every connection holds a descriptor, so the ``nofile`` limit is the number of clients and
peers the node can hold at once. The soft limit is what the kernel enforces and is often far
below the hard one (systemd's defaults are 1,024 and 524,288), so the node raises it to the
hard limit at start (the unit's ``LimitNOFILE`` sets both) and traces what it runs with.

Out of descriptors, ``accept(2)`` fails with ``EMFILE`` (or ``ENFILE``, or the kernel is out of
memory for sockets); the accept loops wait and retry, since connections that end free some.
:class:`AcceptExhaustion` makes that visible: one warning when an episode begins (not one
per retry, which would flood the log ten times a second), counted by the metrics, and one
notice when an accept succeeds again, with how long it lasted and how many retries it took.
"""

from __future__ import annotations

import errno
import os
import resource
from dataclasses import dataclass
from pathlib import Path

from dmq.trace import TraceEvent, Tracer

__all__ = ["DescriptorLimit", "DescriptorsExhausted", "DescriptorsAvailable", "AcceptExhaustion",
           "EXHAUSTION_ERRNOS", "raise_descriptor_limit", "open_descriptors"]

#: accept(2) failures that mean "out of descriptors or kernel memory for now", not a broken listener.
EXHAUSTION_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})

_NR_OPEN = Path("/proc/sys/fs/nr_open")


@dataclass(frozen=True, slots=True)
class DescriptorLimit(TraceEvent):
    """The ``nofile`` limit the node runs with; ``raised_from`` the soft limit it found, if lower."""

    soft: int
    hard: int
    raised_from: int | None
    error: str | None = None   # why the soft limit could not be raised


@dataclass(frozen=True, slots=True)
class DescriptorsExhausted(TraceEvent):
    """A listener cannot accept: the process (or the system) is out of descriptors or memory."""

    link: str              # "n2c", "n2n-in"
    error: str             # the errno's name: EMFILE, ENFILE, ...
    open: int | None       # descriptors the process holds (None where /proc is not there)
    limit: int             # the soft nofile limit


@dataclass(frozen=True, slots=True)
class DescriptorsAvailable(TraceEvent):
    """A listener accepts again after an exhaustion episode."""

    link: str
    waited: float          # seconds since the episode began
    retries: int           # failed accepts during it


def _soft_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_descriptors() -> int | None:
    """How many descriptors this process holds (Linux; None elsewhere)."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
    except OSError:
        return None


def raise_descriptor_limit(now: float) -> DescriptorLimit:
    """Raise the soft ``nofile`` limit to the hard one (``nr_open`` when the hard one is
    unlimited); the returned event says what the node runs with."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        try:
            target = int(_NR_OPEN.read_text())
        except (OSError, ValueError):
            target = soft
    if soft != resource.RLIM_INFINITY and target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError) as exc:
            return DescriptorLimit(now, soft, hard, None, str(exc))
        return DescriptorLimit(now, target, hard, soft)
    return DescriptorLimit(now, soft, hard, None)


class AcceptExhaustion:
    """Exhaustion episodes of one accept loop: ``failed(exc)`` on each capacity failure,
    ``accepted()`` on each success (a comparison only, outside an episode)."""

    __slots__ = ("tracer", "link", "_since", "_retries")

    def __init__(self, tracer: Tracer, link: str) -> None:
        self.tracer = tracer
        self.link = link
        self._since: float | None = None
        self._retries = 0

    @property
    def exhausted(self) -> bool:
        return self._since is not None

    def failed(self, exc: OSError) -> None:
        if self._since is None:
            now = self.tracer.now()
            self._since = now
            self._retries = 0
            name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            self.tracer.emit(DescriptorsExhausted(now, self.link, name, open_descriptors(), _soft_limit()))
        self._retries += 1

    def accepted(self) -> None:
        if self._since is not None:
            now = self.tracer.now()
            self.tracer.emit(DescriptorsAvailable(now, self.link, max(0.0, now - self._since), self._retries))
            self._since = None
