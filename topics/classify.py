"""Classification of a DMQ body by its first three bytes (docs/topics-design.md 2.2).

Only the head decides: a body that starts with ``d9`` followed by a big-endian tag number in
38137..38143 is tagged, everything else is raw. A Mithril body starts with a u16 length of
at most 1994, so its first byte is at most ``07`` and it is always raw. The full decode of a
tagged body (one deterministic item spanning the body) is the adapter decode step, not this.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from ouroboros_mux.cbor import MAJOR_TAG, write_head

__all__ = [
    "TAG_UPSYCLE",
    "TAG_BLOCKLACE",
    "TAG_DMSG",
    "TAG_RANGE",
    "ADAPTER_TAGS",
    "ADAPTER_NUMBERS",
    "tag_head",
    "tag_of",
    "TopicClass",
    "Classification",
    "classify",
]

TAG_UPSYCLE = 38137
TAG_BLOCKLACE = 38138
TAG_DMSG = 38139
#: Every tag number reserved for adapters; 38140..38143 are kept for future ones.
TAG_RANGE = range(38137, 38144)

#: Adapter name -> its tag (P numbers, docs/topics-design.md 2.2).
ADAPTER_TAGS: dict[str, int] = {"upsycle": TAG_UPSYCLE, "blocklace": TAG_BLOCKLACE, "dmsg": TAG_DMSG}
#: Adapter name -> the number a subscription selector uses (field 0, docs/topics-design.md 3.5).
ADAPTER_NUMBERS: dict[str, int] = {"raw": 0, "upsycle": 1, "blocklace": 2, "dmsg": 3}


def tag_head(tag: int) -> bytes:
    """The three head bytes of an adapter tag: ``d9`` and the number big-endian."""
    if tag not in TAG_RANGE:
        raise ValueError(f"{tag} is not an adapter tag")
    return write_head(MAJOR_TAG, tag)


def tag_of(body: bytes) -> int | None:
    """The adapter tag a body starts with, or None for a raw body."""
    if len(body) >= 3 and body[0] == 0xD9:
        number = (body[1] << 8) | body[2]
        if number in TAG_RANGE:
            return number
    return None


class TopicClass(enum.Enum):
    RAW = "raw"
    ADAPTER = "adapter"
    UNKNOWN = "unknown_topic"


@dataclass(frozen=True, slots=True)
class Classification:
    """Exactly one of: raw, a known adapter (by name), or an unknown/reserved tag."""

    kind: TopicClass
    tag: int | None = None
    adapter: str | None = None

    @property
    def name(self) -> str:
        """``raw``, the adapter name, or ``unknown_topic``."""
        return self.adapter if self.kind is TopicClass.ADAPTER else self.kind.value


RAW = Classification(TopicClass.RAW)
_BY_TAG = {tag: name for name, tag in ADAPTER_TAGS.items()}


def classify(body: bytes, known: Mapping[int, str] | None = None) -> Classification:
    """Classify ``body``; ``known`` maps the tags this process has adapters for to their names.

    By default the adapters of the table above. A tag without an adapter, or a reserved
    tag, is ``unknown_topic``. Whether the instance carries the adapter is a separate check
    (``topic_not_carried``).
    """
    tag = tag_of(body)
    if tag is None:
        return RAW
    name = (_BY_TAG if known is None else known).get(tag)
    if name is None:
        return Classification(TopicClass.UNKNOWN, tag)
    return Classification(TopicClass.ADAPTER, tag, name)
