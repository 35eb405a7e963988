"""Mini-protocol 0 on the bare bearer, as the engine's message channel.

The handshake runs before the mux starts, straight on the bearer: the client sends each
message as one SDU with M = 0, the server answers with M = 1. :class:`HandshakeChannel`
gives the protocol engine's driver that stream as a
:class:`~ouroboros_mux.channel.MessageChannel`, so the handshake is driven exactly as a
mini-protocol over a mux channel is.
"""

from __future__ import annotations

from collections.abc import Container

from ouroboros_mux.bearer import Bearer
from ouroboros_mux.channel import CborFramer
from ouroboros_mux.errors import MuxError
from ouroboros_mux.sdu import SDU

from .errors import HandshakeBearerError

__all__ = ["HANDSHAKE_PROTOCOL_NUM", "HandshakeChannel", "ForeignSDU"]

HANDSHAKE_PROTOCOL_NUM = 0


class ForeignSDU(Exception):
    """An SDU of another mini-protocol arrived before the handshake finished."""

    def __init__(self, protocol_num: int) -> None:
        super().__init__(f"SDU for mini-protocol {protocol_num}")
        self.protocol_num = protocol_num


class HandshakeChannel:
    """The handshake's messages over ``bearer``; bearer failures are :class:`HandshakeBearerError`.

    ``known`` holds whole messages seen before (a server's remembered proposals): one that
    arrives as one SDU is handed over without framing. Otherwise a message normally fills
    exactly one SDU; like the reference, a message continued in further SDUs is still
    assembled (within the state's byte limit), and bytes after the message in its last SDU
    are ignored. The SDU's M bit is not checked: in a simultaneous open both sides send with
    M = 0.
    """

    __slots__ = ("bearer", "_from_responder", "_known", "_framer")

    protocol_num = HANDSHAKE_PROTOCOL_NUM

    def __init__(self, bearer: Bearer, *, from_responder: bool, known: Container[bytes] = ()) -> None:
        self.bearer = bearer
        self._from_responder = from_responder
        self._known = known
        self._framer: CborFramer | None = None

    async def send(self, data: bytes) -> None:
        """``data`` as one SDU (a handshake message is far smaller than an SDU's payload)."""
        try:
            await self.bearer.write_sdu(SDU(HANDSHAKE_PROTOCOL_NUM, self._from_responder, data))
        except MuxError as exc:
            raise HandshakeBearerError(exc) from exc

    async def recv_message(self, max_size: int | None = None) -> bytes:
        """The next message; MessageTooLarge, MalformedMessage and ForeignSDU as they occur."""
        bearer = self.bearer
        # Usually the message is already here (a client sends its proposal as it connects):
        # then it is taken without waiting.
        try:
            sdu = bearer.read_sdu_nowait()
        except MuxError as exc:
            raise HandshakeBearerError(exc) from exc
        while True:
            if sdu is None:
                try:
                    sdu = await bearer.read_sdu()
                except MuxError as exc:
                    raise HandshakeBearerError(exc) from exc
            if sdu.protocol_num != HANDSHAKE_PROTOCOL_NUM:
                raise ForeignSDU(sdu.protocol_num)
            framer = self._framer
            if framer is None:
                if sdu.payload in self._known:
                    return sdu.payload
                framer = self._framer = CborFramer()
            framer.feed(sdu.payload)
            message = framer.next_message(max_size)
            if message is not None:
                self._framer = None
                return message
            sdu = None
