"""Typed protocol errors.

Each of these ends the whole connection in the reference node (docs/protocol/mux.md 2.6): there is no
per-protocol recovery, so callers catch :class:`ProtocolError` once, at the connection, and
trace the specific subclass. Every error names the protocol and the state it happened in,
because "decoder failure" alone says nothing useful in an operator's log.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ProtocolError",
    "ProtocolViolation",
    "ExceededSizeLimit",
    "ExceededTimeLimit",
    "DecoderFailure",
    "CodecError",
]


class CodecError(ValueError):
    """Bytes that are CBOR but not a message of this protocol (raised by codecs)."""


class ProtocolError(Exception):
    """A mini-protocol instance broke the rules; the connection must be closed."""

    def __init__(self, protocol: str, state: Any, detail: str) -> None:
        super().__init__(f"{protocol} in state {_state_name(state)}: {detail}")
        self.protocol = protocol
        self.state = state


class ProtocolViolation(ProtocolError):
    """A message was sent or received without agency, or is not valid in the state.

    ``message`` is the offending message object (None when the peer was not due to send
    at all); ``raw`` holds the received bytes when the violation came from the peer.
    """

    def __init__(self, protocol: str, state: Any, message: Any, reason: str, raw: bytes | None = None) -> None:
        detail = reason if message is None else f"{_message_name(message)}: {reason}"
        super().__init__(protocol, state, detail)
        self.message = message
        self.reason = reason
        self.raw = raw


class ExceededSizeLimit(ProtocolError):
    """More bytes than the state's byte limit arrived without completing a message."""

    def __init__(self, protocol: str, state: Any, limit: int, buffered: int) -> None:
        super().__init__(protocol, state,
                         f"message exceeds the {limit}-byte limit of the state ({buffered} bytes buffered)")
        self.limit = limit
        self.buffered = buffered


class ExceededTimeLimit(ProtocolError):
    """The peer did not send a message within the state's time limit."""

    def __init__(self, protocol: str, state: Any, limit: float) -> None:
        super().__init__(protocol, state, f"no message from the peer within {limit:g} s")
        self.limit = limit


class DecoderFailure(ProtocolError):
    """Received bytes do not decode as a message of this protocol.

    ``raw`` keeps the bytes as received (None when the stream was not even CBOR and no
    item boundary exists), so the trace can show exactly what the peer sent.
    """

    def __init__(self, protocol: str, state: Any, raw: bytes | None, reason: str) -> None:
        shown = "" if raw is None else f" (bytes {_preview(raw)})"
        super().__init__(protocol, state, f"decoder failure: {reason}{shown}")
        self.raw = raw
        self.reason = reason


def _state_name(state: Any) -> str:
    return getattr(state, "name", None) or str(state)


def _message_name(message: Any) -> str:
    if isinstance(message, type):
        return message.__name__
    return repr(message) if len(repr(message)) <= 120 else type(message).__name__


def _preview(raw: bytes, limit: int = 64) -> str:
    text = raw[:limit].hex()
    return text if len(raw) <= limit else f"{text}... {len(raw)} bytes in all"
