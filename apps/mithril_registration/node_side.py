"""The registration application inside a node (docs/mithril-registration.md 8, 9).

Started by the composition root when the configuration names a registration topic
(``MithrilRegistration``). It is a protocol 1000 client of its own node, over the node's
local socket, with the node's tracer and stake view:

- **follow**: a durable subscription (``mithril-registration``) to the topic's blocks and
  final epochs, fed to the :class:`~.agreement.RegistrationLedger` in delivery order. Each
  item is appended to a journal in the node's database directory before it is acknowledged,
  so a restart rebuilds the same ledger even after the node pruned the blocks (a registration
  round lasts a Cardano epoch, Blocklace epochs a few minutes);
- **close**: once the node's chain is in Cardano epoch ``e``, the round of registration epoch
  ``e`` (signers registered during ``e - 1``) is over: the node publishes ``close e`` once;
- **notify**: when a set is fixed, the node publishes ``agreed R digest count`` in the topic,
  which every subscriber of the topic (an aggregator's local notification) receives from every
  node; a notice of another node naming another digest is traced
  (``MithrilRegistrationDisagreement``);
- **serve**: ``GET /epoch-settings`` answers Mithril's ``EpochSettingsMessage`` for the
  chain's current epoch ``e``: ``next_signers`` the set of ``R = e``, ``current_signers`` the
  set of ``R = e - 1`` (docs/mithril-registration.md 5). Until the set of ``e`` is fixed it
  answers 503, so that a follower aggregator retries rather than copy a partial list.
  ``GET /registrations/R`` gives the fixed set of ``R`` with its digest and the equivocation
  proofs.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import trio

from clients.mithril import DmqClientError
from clients.topics import decode_item, event_draft, open_topic_connection
from dmq.codec import decode_message
from dmq.http_get import serve_get
from dmq.errors import OperatorError
from dmq.stake import StakeView
from dmq.trace import Tracer
from miniprotocols.local_topic_subscription import Durable
from topics import cbor
from topics.adapter import ITEM_EPOCH_FINAL, ITEM_MESSAGE
from topics.containment import Contained
from topics.blocklace.codec import EVENT, KIND_BLOCK, decode_body

from .agreement import AgreedSet, RegistrationLedger
from .errors import RegistrationRefused
from .events import Registered, agreed_event, close_event, decode_event
from .message import SignerRegistration
from .trace import (
    MithrilRegistrationAgreed,
    MithrilRegistrationClosed,
    MithrilRegistrationDisagreement,
    MithrilRegistrationListening,
    MithrilRegistrationProblem,
)
from .verify import VerifiedSigner, verify_registration

__all__ = ["RegistrationNode", "epoch_settings", "JOURNAL_NAME"]

BLOCKLACE = 2
SUBSCRIPTION = b"mithril-registration"
JOURNAL_NAME = "mithril-registration.journal"
#: Seconds between attempts when the node's socket or a publication fails, and between close checks.
RETRY = 1.0
_MESSAGE, _FINAL = 0, 1


def _signer_part(registration: SignerRegistration) -> dict[str, Any]:
    return {k: v for k, v in registration.to_json().items() if k != "epoch"}


def epoch_settings(epoch: int, agreed: dict[int, AgreedSet]) -> dict[str, Any] | None:
    """Mithril's ``EpochSettingsMessage`` at Cardano epoch ``epoch``; None until the set of ``epoch`` is fixed."""
    upcoming = agreed.get(epoch)
    if upcoming is None:
        return None
    current = agreed.get(epoch - 1)
    parts = lambda fixed: [] if fixed is None else [_signer_part(s.signer.registration) for s in fixed.signers]  # noqa: E731
    return {"epoch": epoch, "current_signers": parts(current), "next_signers": parts(upcoming)}


class _EveryPool(Mapping[bytes, int]):
    """A stake distribution holding every pool (at stake 0), for verdicts that leave stake out."""

    def __getitem__(self, pool: bytes) -> int:
        return 0

    def __iter__(self) -> Iterator[bytes]:
        return iter(())

    def __len__(self) -> int:
        return 0


_EVERY_POOL = _EveryPool()


class Journal:
    """Length-prefixed deterministic CBOR records, appended and fsynced; a torn tail is dropped."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def records(self) -> list[Any]:
        """The records, up to the first torn or unreadable one (the file is cut there)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out, pos = [], 0
        while pos + 4 <= len(data):
            (size,) = struct.unpack_from(">I", data, pos)
            if pos + 4 + size > len(data):
                break
            try:
                out.append(cbor.decode(data[pos + 4:pos + 4 + size]))
            except ValueError:
                break
            pos += 4 + size
        if pos != len(data):
            with open(self.path, "r+b") as f:
                f.truncate(pos)
        return out

    def append(self, records: list[Any]) -> None:
        if not records:
            return
        blob = b"".join(struct.pack(">I", len(r)) + r for r in map(cbor.encode, records))
        with open(self.path, "ab") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())


class RegistrationNode:
    """The application's node-side part for one registration topic."""

    def __init__(self, *, topic: bytes, socket_path: str, network_magic: int, stake_view: StakeView,
                 tracer: Tracer, current_epoch: Callable[[], int], own_pool: bytes | None, database: Path,
                 http_host: str = "127.0.0.1", http_port: int | None = None,
                 verify: Callable[..., VerifiedSigner] = verify_registration,
                 run_blocking: Callable[..., Awaitable[Any]] = trio.to_thread.run_sync) -> None:
        """``verify`` and ``run_blocking`` are what a simulated network replaces (``lab.simnet``: one
        verdict per distinct registration shared by its nodes, the blocking work in the loop's own
        thread); a running node keeps :func:`~.verify.verify_registration` and a worker thread."""
        self.topic = topic
        self.socket_path = socket_path
        self.network_magic = network_magic
        self.stake_view = stake_view
        self.tracer = tracer
        self.current_epoch = current_epoch
        self.own_pool = own_pool
        self.http_host, self.http_port = http_host, http_port
        self._verify_registration = verify
        self._run_blocking = run_blocking
        self.journal = Journal(database / JOURNAL_NAME)
        self.ledger = RegistrationLedger(verify=self._verify, stake_at=stake_view.set_stake_at,
                                         registered=self._registered)
        self.closed: set[int] = set()
        self.notified: set[int] = set()
        self.reported: set[bytes] = set()       # notices already traced as disagreeing
        self._verdicts: dict[tuple[SignerRegistration, int], Any] = {}    # computed off the event loop
        self.port: int | None = None

    # -- the ledger's inputs --------------------------------------------------------------

    def _verify(self, registration: SignerRegistration, kes_period: int) -> VerifiedSigner:
        verdict = self._verdicts.pop((registration, kes_period), None)
        if verdict is None:
            verdict = self._verdict(registration, kes_period)
        if isinstance(verdict, RegistrationRefused):
            raise verdict
        return verdict

    def _registered(self, epoch: int, pool: bytes) -> bool:
        """Whether ``pool`` has stake for registration epoch ``epoch``: in the set snapshot of
        Cardano epoch ``epoch - 1`` (the distribution Mithril stores for ``epoch``) when the stake
        view holds it, which every node does for three epochs; else in the current view (a stake
        file or a genesis, which never changes). A pool at zero stake counts as absent: the
        snapshot lookup does not tell the two apart (Mithril registers such a pool, which can
        never win a lottery)."""
        stake = self.stake_view.set_stake_at(epoch - 1, pool)
        if stake is None:
            current = self.stake_view.stake_of(pool)
            stake = 0 if current is None else current.set
        return stake > 0

    def _verdict(self, registration: SignerRegistration, kes_period: int) -> VerifiedSigner | RegistrationRefused:
        # Every check but the stake, which depends on when it is asked: the ledger asks it when
        # the set is fixed (``_registered``).
        try:
            return self._verify_registration(registration, stake_distribution=_EVERY_POOL,
                                             current_kes_period=kes_period)
        except RegistrationRefused as refused:
            return refused

    def _preverify(self, records: list[list[Any]]) -> dict[tuple[SignerRegistration, int], Any]:
        """The verdicts of the registrations in ``records``, computed in a worker thread: the proof of
        possession costs milliseconds each, which the node's event loop must not wait for."""
        verdicts: dict[tuple[SignerRegistration, int], Any] = {}
        for record in records:
            if record[0] != _MESSAGE:
                continue
            # Whatever fails here fails again, contained, when the record is taken.
            with contextlib.suppress(Exception):
                message = decode_message(record[1])
                kind, block = decode_body(message.body)
                if kind != KIND_BLOCK or block.topic != self.topic or block.payload.type != EVENT:
                    continue
                event = decode_event(block.payload.event)
                if isinstance(event, Registered):
                    key = (event.registration, message.kes_period)
                    verdicts[key] = self._verdict(*key)
        return verdicts

    def _take_contained(self, record: list[Any]) -> None:
        """Take one record; an input no check foresaw ends that record, never the node."""
        with Contained(self.tracer, "mithril-registration", "a registration topic item"):
            self._fixed(self._take(record))

    def _take(self, record: list[Any]) -> list[AgreedSet]:
        if record[0] == _MESSAGE:
            message = decode_message(record[1])
            kind, block = decode_body(message.body)
            if kind == KIND_BLOCK and block.topic == self.topic:
                self.ledger.deliver(message.message_id, message.pool_id, message.kes_period, block)
            return []
        return self.ledger.finalize(record[1], record[2])

    def _fixed(self, sets: list[AgreedSet]) -> None:
        for agreed in sets:
            self.tracer.emit(MithrilRegistrationAgreed(self.tracer.now(), agreed.epoch, agreed.blocklace_epoch,
                                                       agreed.digest, len(agreed.signers), len(agreed.excluded)))
        for ident, pool, notice in self.ledger.disagreements():
            if ident not in self.reported:
                self.reported.add(ident)
                self.tracer.emit(MithrilRegistrationDisagreement(self.tracer.now(), notice.epoch, pool, notice.digest,
                                                                 self.ledger.agreed[notice.epoch].digest))

    # -- tasks ----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        records = await self._run_blocking(self.journal.records)
        self._verdicts = await self._run_blocking(self._preverify, records)
        for record in records:
            self._take_contained(record)
        self.notified.update(self.ledger.agreed)
        async with trio.open_nursery() as nursery:
            if self.http_port is not None:
                try:
                    self.port = await nursery.start(serve_get, self._answer_json, self.http_port, self.http_host)
                except OSError as exc:
                    raise OperatorError(f"MithrilRegistration: cannot serve HTTP on {self.http_host}:"
                                         f"{self.http_port}: {exc.strerror or exc}") from None
                self.tracer.emit(MithrilRegistrationListening(self.tracer.now(), f"{self.http_host}:{self.port}"))
            nursery.start_soon(self._follow_forever)
            nursery.start_soon(self._close_and_notify_forever)
            task_status.started()

    async def _follow_forever(self) -> None:
        while True:
            try:
                await self._follow()
            except (DmqClientError, OSError) as exc:
                self.tracer.emit(MithrilRegistrationProblem(self.tracer.now(), f"following the topic: {exc}"))
            await trio.sleep(RETRY)

    async def _follow(self) -> None:
        async with open_topic_connection(self.socket_path, self.network_magic) as conn:
            sub = await conn.ask(conn.topics.subscribe([{0: BLOCKLACE, 3: [self.topic]}], 1, Durable(SUBSCRIPTION)))
            acks: list[tuple[int, int]] = []
            while True:
                reply = await conn.ask(conn.topics.next(blocking=True, acks=acks))
                items = [decode_item(raw) for raw in reply.items]
                records = [[_MESSAGE, item.payload] if item.kind == ITEM_MESSAGE else
                           [_FINAL, item.payload[1], item.payload[2]]
                           for item in items if item.kind in (ITEM_MESSAGE, ITEM_EPOCH_FINAL)]
                await self._run_blocking(self.journal.append, records)
                self._verdicts = await self._run_blocking(self._preverify, records)
                for record in records:
                    self._take_contained(record)
                acks = [(sub.sub_id, items[-1].dseq)] if items else []

    async def _close_and_notify_forever(self) -> None:
        while True:
            try:
                await self._close_and_notify()
            except (DmqClientError, OSError, ValueError) as exc:
                self.tracer.emit(MithrilRegistrationProblem(self.tracer.now(), f"publishing: {exc}"))
            await trio.sleep(RETRY)

    async def _close_and_notify(self) -> None:
        if self.own_pool is None or self.own_pool not in self.ledger.latest_electors():
            return                              # only electors close rounds and announce sets
        epoch = self.current_epoch()
        bodies: list[tuple[bytes, Callable[[], None]]] = []
        if (epoch not in self.closed and epoch not in self.ledger.agreed
                and not self.ledger.closed_by(epoch, self.own_pool)):
            bodies.append((close_event(epoch), lambda: self._closed(epoch)))
        for fixed in [a for r, a in sorted(self.ledger.agreed.items()) if r not in self.notified]:
            bodies.append((agreed_event(fixed.epoch, fixed.digest, len(fixed.signers)),
                           lambda r=fixed.epoch: self.notified.add(r)))
        if not bodies:
            return
        async with open_topic_connection(self.socket_path, self.network_magic) as conn:
            for body, done in bodies:
                await conn.ask(conn.topics.publish(event_draft(self.topic, body)))
                done()

    def _closed(self, epoch: int) -> None:
        self.closed.add(epoch)
        self.tracer.emit(MithrilRegistrationClosed(self.tracer.now(), epoch))

    # -- HTTP -----------------------------------------------------------------------------

    def _answer_json(self, path: str) -> tuple[int, str, bytes]:
        status, document = self.answer(path)
        return status, "application/json", json.dumps(document).encode()

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        """The status and JSON document of ``GET path``."""
        if path == "/epoch-settings":
            try:
                epoch = self.current_epoch()
            except ValueError as exc:       # the chain has not started
                return 503, {"error": str(exc)}
            settings = epoch_settings(epoch, self.ledger.agreed)
            if settings is None:
                return 503, {"error": f"the signers registered for epoch {epoch} are not agreed yet"}
            return 200, settings
        prefix = "/registrations/"
        if path.startswith(prefix) and path[len(prefix):].isdigit():
            fixed = self.ledger.agreed.get(int(path[len(prefix):]))
            if fixed is None:
                return 404, {"error": f"no agreed set for epoch {path[len(prefix):]}"}
            return 200, fixed.describe()
        return 404, {"error": f"unknown path {path!r}: /epoch-settings or /registrations/EPOCH"}
