"""The one exception of the UPSYCLE core: a reject with its numbered reason (docs/topics-design.md 2.10)."""

from __future__ import annotations

from topics.reasons import RejectReason

__all__ = ["UpsycleReject"]


class UpsycleReject(Exception):
    """A body, message or request the adapter refuses; ``reason`` is what the wire reports."""

    def __init__(self, reason: RejectReason, detail: str = "") -> None:
        super().__init__(f"{reason.name}: {detail}" if detail else reason.name)
        self.reason = reason
        self.detail = detail
