"""The carried set of a network instance, and the protection of Mithril networks (docs/topics-design.md 2.1).

An instance carries ``raw`` and/or adapter names. Mithril's consumer fails a whole batch on a
body it cannot parse, so an instance whose magic is a Mithril network carries ``raw`` only:
enabling an adapter there is refused at start with one line naming the key and the magic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dmq.errors import OperatorError
from dmq.networks import NETWORK_MAGICS

from .classify import ADAPTER_TAGS

__all__ = ["CarriedSet", "TopicConfigError", "RAW", "DEFAULT_MITHRIL_MAGICS", "carried_set"]

RAW = "raw"
#: The DMQ magics of the named networks: Mithril runs on each of them.
DEFAULT_MITHRIL_MAGICS: frozenset[int] = frozenset(n.dmq for n in NETWORK_MAGICS.values())


class TopicConfigError(OperatorError):
    """A topic setting that cannot start the instance."""


@dataclass(frozen=True, slots=True)
class CarriedSet:
    """What an instance carries: ``raw`` and the enabled adapters."""

    names: frozenset[str]

    @property
    def raw(self) -> bool:
        return RAW in self.names

    @property
    def adapters(self) -> frozenset[str]:
        return self.names - {RAW}

    @property
    def has_topics(self) -> bool:
        """Whether the instance runs the topic pipeline (any adapter enabled)."""
        return bool(self.adapters)

    def carries(self, name: str) -> bool:
        return name in self.names


def carried_set(names: Iterable[str], network_magic: int,
                mithril_magics: Iterable[int] = DEFAULT_MITHRIL_MAGICS,
                known: Iterable[str] = ADAPTER_TAGS) -> CarriedSet:
    """Check ``names`` for an instance on ``network_magic``; raise a one-line error if refused."""
    names = frozenset(names)
    known = frozenset(known)
    unknown = sorted(names - {RAW} - known)
    if unknown:
        known = ", ".join([RAW, *sorted(known)])
        raise TopicConfigError(f'"TopicsCarried": unknown topic {unknown[0]!r}; known: {known}')
    if not names:
        raise TopicConfigError('"TopicsCarried": an instance carries at least one topic (e.g. ["raw"])')
    adapters = sorted(names - {RAW})
    if adapters and network_magic in frozenset(mithril_magics):
        raise TopicConfigError(
            f'"TopicsCarried": adapter {adapters[0]!r} cannot run on NetworkMagic {network_magic}, '
            f"a Mithril network (raw only); give the topic network its own magic"
        )
    return CarriedSet(names)
