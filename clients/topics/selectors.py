"""Subscription selectors by name (docs/topics-design.md 3.5), checked as the node checks them.

A filter is a list of selectors, any of which may match; inside a selector every field given
must match. :func:`selector` names the fields a client filters on and builds the map the
protocol sends; :func:`topics.filters.check_filter` (the node's own check) refuses sizes and
values the node would refuse, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from topics.classify import ADAPTER_NUMBERS
from topics.filters import FilterError, check_filter

__all__ = ["ADAPTERS", "PAYLOAD_TYPES", "ROLES", "selector", "FilterError"]

ADAPTERS = dict(ADAPTER_NUMBERS)
#: Blocklace payload types (selector field 10) and dmsg roles (field 11) by name.
PAYLOAD_TYPES = {"event": 0, "ack": 1, "epoch": 2, "advertisement": 3}
ROLES = {"client": 1, "server": 2}

_FIELDS = {"groups": 1, "destinations": 2, "topics": 3, "publishers": 4, "exclude_publishers": 5, "tags": 6,
           "exclude_tags": 7, "static_keys": 8, "kinds": 9, "payload_types": 10, "roles": 11}


def selector(adapter: str, **criteria: Iterable[Any]) -> dict[int, Any]:
    """One selector of ``adapter`` (``raw``, ``upsycle``, ``blocklace``, ``dmsg``) with the given
    criteria: ``groups``, ``destinations`` (UPSYCLE keys), ``topics`` (Blocklace topic ids),
    ``publishers`` / ``exclude_publishers`` (pool ids), ``tags`` / ``exclude_tags`` (content
    tags), ``static_keys`` (dmsg), ``kinds`` (envelope kinds), ``payload_types`` and ``roles``
    (numbers, or the names of :data:`PAYLOAD_TYPES` and :data:`ROLES`). Empty criteria are left
    out; ``FilterError`` for anything the node would refuse."""
    if adapter not in ADAPTERS:
        raise FilterError(f"unknown adapter {adapter!r}: one of {', '.join(ADAPTERS)}")
    out: dict[int, Any] = {0: ADAPTERS[adapter]}
    for name, values in criteria.items():
        if name not in _FIELDS:
            raise TypeError(f"unknown criterion {name!r}")
        names = {"payload_types": PAYLOAD_TYPES, "roles": ROLES}.get(name, {})
        listed = [names.get(v, v) if isinstance(v, str) else v for v in values]
        if any(isinstance(v, str) for v in listed):
            raise FilterError(f"{name}: unknown name in {list(values)}; known: {', '.join(names)}")
        if listed:
            out[_FIELDS[name]] = [bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in listed]
    check_filter([out])
    return out
