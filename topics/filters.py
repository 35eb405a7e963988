"""Subscription filters (docs/topics-design.md 3.5): a list of selectors, OR between selectors, AND inside.

A selector is a map from field numbers to value lists. Field 0 names the adapter; the other
include fields match when the item has at least one listed value for that field; the two
exclude fields (5 publishers, 7 content tags) match when it has none. The item side is the
``facets`` map of a :class:`~topics.adapter.Delivery`, so matching is generic and no adapter
writes its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .adapter import Delivery

__all__ = ["SELECTOR_FIELDS", "EXCLUDES", "FilterError", "check_filter", "matches", "selector_matches"]

ADAPTER_FIELD = 0
#: Include fields and the facet each one reads.
INCLUDES = (1, 2, 3, 4, 6, 8, 9, 10, 11)
#: Exclude field -> the facet it reads.
EXCLUDES = {5: 4, 7: 6}
SELECTOR_FIELDS = frozenset({ADAPTER_FIELD, *INCLUDES, *EXCLUDES})
_SIZES = {1: 32, 2: 32, 3: 32, 4: 28, 5: 28, 8: 33}


class FilterError(ValueError):
    """A filter that does not match the CDDL."""


def check_filter(filter_: Any) -> list[dict[int, Any]]:
    """Validate a decoded filter; returns it with value lists as tuples."""
    if not isinstance(filter_, list) or not filter_:
        raise FilterError("a filter is a non-empty list of selectors")
    out = []
    for selector in filter_:
        if not isinstance(selector, dict) or ADAPTER_FIELD not in selector:
            raise FilterError("a selector is a map with field 0 (adapter)")
        checked: dict[int, Any] = {}
        for key, value in selector.items():
            if key not in SELECTOR_FIELDS:
                raise FilterError(f"unknown selector field {key!r}")
            if key == ADAPTER_FIELD:
                if value not in (0, 1, 2, 3) or isinstance(value, bool):
                    raise FilterError(f"unknown adapter number {value!r}")
                checked[key] = value
                continue
            if not isinstance(value, list) or not value:
                raise FilterError(f"selector field {key} must be a non-empty list")
            size = _SIZES.get(key)
            for item in value:
                if key in (9, 10, 11):
                    if not isinstance(item, int) or isinstance(item, bool) or item < 0:
                        raise FilterError(f"selector field {key} holds unsigned integers")
                elif not isinstance(item, bytes) or (size is not None and len(item) != size) or \
                        (size is None and not 1 <= len(item) <= 32):
                    raise FilterError(f"selector field {key} holds byte strings of the right size")
            checked[key] = tuple(value)
        out.append(checked)
    return out


def selector_matches(selector: Mapping[int, Any], delivery: Delivery) -> bool:
    if selector.get(ADAPTER_FIELD) != delivery.adapter:
        return False
    facets = delivery.facets
    for key in INCLUDES:
        wanted = selector.get(key)
        if wanted is not None and facets.get(key, frozenset()).isdisjoint(wanted):
            return False
    for key, facet in EXCLUDES.items():
        unwanted = selector.get(key)
        if unwanted is not None and not facets.get(facet, frozenset()).isdisjoint(unwanted):
            return False
    return True


def matches(filter_: Sequence[Mapping[int, Any]], delivery: Delivery) -> bool:
    """Whether any selector of ``filter_`` matches ``delivery``."""
    return any(selector_matches(selector, delivery) for selector in filter_)
