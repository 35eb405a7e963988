"""Messages built from fields a codec has read and checked, without the constructor's checks.

A message dataclass checks its fields in ``__post_init__`` (ids of 32 bytes, word16 counts,
one CBOR item per body): that is what keeps a message built in code from going out as
bytes the peer cannot read. A decoded message was checked by its codec's strict reading
(the same sizes and ranges, from the bytes), so building it through the constructor would
check every field a second time, on every message received. :func:`decoded_builder` builds
it without: each message is checked in one place, the codec for what arrives and the
constructor for what is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["decoded_builder"]

M = TypeVar("M")


def decoded_builder(cls: type[M]) -> Callable[..., M]:
    """A function building instances of the slotted dataclass ``cls`` from its fields, in declaration
    order, without ``__init__`` and its checks.

    Only for values a codec has just read and checked as the constructor would (same types,
    sizes and ranges, tuples where the constructor makes tuples). The fields are set through
    the class's slot descriptors, found once here: a third of the cost of ``object.__setattr__``
    per field, and the one-field messages (most of those received) get a builder of their own.
    """
    new = object.__new__
    setters = tuple(getattr(cls, name).__set__ for name in cls.__slots__)
    if len(setters) == 1:
        (set_field,) = setters

        def build_one(value: object) -> M:
            message = new(cls)
            set_field(message, value)
            return message

        return build_one

    def build(*fields: object) -> M:
        message = new(cls)
        for set_field, value in zip(setters, fields, strict=True):
            set_field(message, value)
        return message

    return build
