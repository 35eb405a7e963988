"""A node-to-client client made of nothing but the bytes Pallas puts on the socket.

No project code frames, encodes or decodes anything sent here: every SDU header is built
by hand (4 bytes of transmission time, the M bit and protocol number, the payload length),
every request is a literal byte string of what ``pallas-network`` writes, and every reply
is read back as raw bytes so tests can compare them byte for byte. Only the end of a
reply is found with the project's CBOR cursor (``item_end``), because a reply may be split
over several SDUs (the node segments at 12 288 bytes).

Pallas sends each message in one SDU (it segments at 65 535 bytes, and every message of
these protocols is smaller), with transmission time 0 here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import trio

from ouroboros_mux.cbor import CborIncomplete, item_end

__all__ = [
    "HANDSHAKE", "SUBMISSION", "NOTIFICATION",
    "REPLY_HANDSHAKE", "REPLY_SUBMISSION", "REPLY_NOTIFICATION",
    "MSG_DONE", "REQUEST_BLOCKING", "REQUEST_NON_BLOCKING", "CLIENT_DONE",
    "ACCEPT", "REJECT_ALREADY_RECEIVED", "REJECT_EXPIRED",
    "sdu", "propose_versions", "accept_version", "submit_message",
    "blocking_reply", "non_blocking_reply",
    "RawSdu", "RawN2CClient", "ConnectionLost", "publish_like_mithril_signer",
    "split_non_blocking_reply", "read_everything",
]

#: Header words (M bit + protocol number) of what the client sends: M = 0, initiator.
HANDSHAKE = b"\x00\x00"
SUBMISSION = b"\x00\x0e"
NOTIFICATION = b"\x00\x0f"
#: ... and of what the node must answer with: M = 1, responder.
REPLY_HANDSHAKE = b"\x80\x00"
REPLY_SUBMISSION = b"\x80\x0e"
REPLY_NOTIFICATION = b"\x80\x0f"

MSG_DONE = bytes.fromhex("8103")               # local message submission [3]
REQUEST_BLOCKING = bytes.fromhex("8200f5")     # [0, true]
REQUEST_NON_BLOCKING = bytes.fromhex("8200f4")  # [0, false]
CLIENT_DONE = bytes.fromhex("8103")            # local message notification [3]

ACCEPT = bytes.fromhex("8101")
REJECT_ALREADY_RECEIVED = bytes.fromhex("82028101")
REJECT_EXPIRED = bytes.fromhex("82028102")


def sdu(word: bytes, payload: bytes, timestamp: bytes = b"\x00\x00\x00\x00") -> bytes:
    """One SDU as it travels: time (4 bytes), M + protocol (2 bytes), length (2 bytes), payload."""
    assert len(word) == 2 and len(timestamp) == 4 and 0 < len(payload) <= 0xFFFF
    return timestamp + word + len(payload).to_bytes(2, "big") + payload


def propose_versions(magic: int) -> bytes:
    """``[0, {4097: [magic, false]}]``: the only proposal a Pallas ``DmqClient`` makes (Unix)."""
    return bytes.fromhex("8200a1191001821a") + magic.to_bytes(4, "big") + b"\xf4"


def accept_version(magic: int) -> bytes:
    """``[1, 4097, [magic, false]]``: what the reference node answers to it."""
    return bytes.fromhex("8301191001821a") + magic.to_bytes(4, "big") + b"\xf4"


def submit_message(raw_message: bytes) -> bytes:
    """``[0, message]``: the message inline, not wrapped in a byte string."""
    return b"\x82\x00" + raw_message


def blocking_reply(raw_messages: list[bytes]) -> bytes:
    """``[2, [_ msg...]]``: the reference writes the list indefinite."""
    return b"\x82\x02\x9f" + b"".join(raw_messages) + b"\xff"


def non_blocking_reply(raw_messages: list[bytes], has_more: bool) -> bytes:
    """``[1, [_ msg...], hasMore]``: indefinite list, even when empty."""
    return b"\x83\x01\x9f" + b"".join(raw_messages) + b"\xff" + (b"\xf5" if has_more else b"\xf4")


class ConnectionLost(Exception):
    """The node closed the socket (or died) before a whole reply arrived."""


@dataclass(frozen=True)
class RawSdu:
    """One SDU as read from the socket: the 8 header bytes and the payload, untouched."""

    header: bytes
    payload: bytes

    @property
    def word(self) -> bytes:
        return self.header[4:6]

    @property
    def length(self) -> bytes:
        return self.header[6:8]


class RawN2CClient:
    """One connection to the node's local socket, spoken in raw SDUs.

    ``sdus`` records every SDU the node sent on this connection, so a test can check
    headers as well as the reassembled replies.
    """

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._buffer = bytearray()
        self._pending: dict[bytes, bytearray] = {}
        self.sdus: list[RawSdu] = []

    @classmethod
    async def connect(cls, path: str | os.PathLike[str]) -> RawN2CClient:
        return cls(await trio.open_unix_socket(os.fspath(path)))

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> RawN2CClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def send(self, raw_sdus: bytes) -> None:
        try:
            await self.stream.send_all(raw_sdus)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionLost(f"sending: {exc}") from exc

    async def _fill(self, size: int) -> None:
        while len(self._buffer) < size:
            try:
                chunk = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise ConnectionLost(f"receiving: {exc}") from exc
            if not chunk:
                raise ConnectionLost(f"end of stream with {len(self._buffer)} of {size} bytes buffered")
            self._buffer += chunk

    async def read_sdu(self) -> RawSdu:
        await self._fill(8)
        length = int.from_bytes(self._buffer[6:8], "big")
        await self._fill(8 + length)
        header, payload = bytes(self._buffer[:8]), bytes(self._buffer[8:8 + length])
        del self._buffer[:8 + length]
        received = RawSdu(header, payload)
        self.sdus.append(received)
        return received

    async def read_reply(self, word: bytes) -> bytes:
        """The next whole CBOR reply sent with header word ``word``, reassembled from its SDUs.

        An SDU on any other word is a test failure: nothing else runs on these connections.
        """
        pending = self._pending.setdefault(word, bytearray())
        while True:
            if pending:
                try:
                    end = item_end(pending, 0, len(pending))
                except CborIncomplete:
                    pass
                else:
                    reply = bytes(pending[:end])
                    del pending[:end]
                    return reply
            received = await self.read_sdu()
            assert received.word == word, f"SDU on {received.word.hex()} while waiting for {word.hex()}"
            pending += received.payload

    async def read_until_closed(self) -> bytes:
        """Everything the node still sends until it closes the socket."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        while True:
            try:
                chunk = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return rest
            if not chunk:
                return rest
            rest += chunk

    # -- the exchanges a Pallas client makes, as raw bytes ----------------------------------

    async def handshake(self, magic: int) -> bytes:
        """Propose ``{4097: [magic, false]}`` in one SDU; return the raw payload of the answer."""
        await self.send(sdu(HANDSHAKE, propose_versions(magic)))
        answer = await self.read_sdu()
        assert answer.word == REPLY_HANDSHAKE, f"handshake answer on {answer.word.hex()}"
        return answer.payload

    async def submit(self, raw_message: bytes) -> bytes:
        await self.send(sdu(SUBMISSION, submit_message(raw_message)))
        return await self.read_reply(REPLY_SUBMISSION)

    async def submission_done(self) -> None:
        await self.send(sdu(SUBMISSION, MSG_DONE))

    async def request(self, blocking: bool) -> bytes:
        await self.send(sdu(NOTIFICATION, REQUEST_BLOCKING if blocking else REQUEST_NON_BLOCKING))
        return await self.read_reply(REPLY_NOTIFICATION)

    async def notification_done(self) -> None:
        await self.send(sdu(NOTIFICATION, CLIENT_DONE))


async def publish_like_mithril_signer(path: str | os.PathLike[str], magic: int, raw_message: bytes) -> bytes:
    """A Mithril signer's publication: new connection, handshake, submit, MsgDone; then close
    (Mithril's own publisher leaves the connection open: docs/protocol/local-protocols.md 7.4).

    Returns the raw reply to the submission.
    """
    async with await RawN2CClient.connect(path) as client:
        answer = await client.handshake(magic)
        assert answer == accept_version(magic), f"handshake answer {answer.hex()}"
        reply = await client.submit(raw_message)
        await client.submission_done()
    return reply


def split_non_blocking_reply(reply: bytes) -> tuple[list[bytes], bool]:
    """The raw messages of ``[1, [_ msg...], hasMore]`` and the flag."""
    assert reply[:3] == b"\x83\x01\x9f", reply[:3].hex()
    messages, pos = [], 3
    while reply[pos] != 0xFF:
        end = item_end(reply, pos, len(reply))
        messages.append(reply[pos:end])
        pos = end
    assert reply[pos + 1:] in (b"\xf4", b"\xf5")
    return messages, reply[pos + 1:] == b"\xf5"


async def read_everything(path: str | os.PathLike[str], magic: int) -> list[bytes]:
    """Every message the node serves a new notification client, in order (non-blocking requests)."""
    async with await RawN2CClient.connect(path) as client:
        assert await client.handshake(magic) == accept_version(magic)
        served: list[bytes] = []
        while True:
            batch, has_more = split_non_blocking_reply(await client.request(blocking=False))
            served += batch
            if not has_more:
                return served
