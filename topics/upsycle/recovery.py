"""Missed messages: gap candidates from seen lists, pull requests and answers (docs/topics-design.md 4.6, 2.8).

A seen id unknown to the node opens a gap candidate; if it is still unknown after D, each
member of the group gets one gap notice and, when this node can sign, a pull request goes
out. Holders answer after a random delay unless R answers were already accepted. The
publications themselves are made by the node's publisher: this module only says what is
due, so it stays sans-IO and testable in simulated time.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from topics.adapter import AdapterTxn, StoreView

from .params import UpsycleParams
from .queues import SubscriberQueues
from .state import UpsycleState
from .wire import KIND_PULL, KIND_REISSUE, encode_envelope, encode_pull_request, encode_reissue

__all__ = ["GapNotice", "Recovery", "ANSWER_DELAY"]

#: Answers wait a uniform random delay in [0, ANSWER_DELAY) seconds (docs/topics-design.md 2.8, P).
ANSWER_DELAY = 5.0
#: A requester retries a missing id after this many seconds (2.8, P).
REQUEST_RETRY = 60


@dataclass(frozen=True, slots=True)
class GapNotice:
    group: bytes
    ids: tuple[bytes, ...]


@dataclass(slots=True)
class _ScheduledAnswer:
    due: float
    request: bytes
    ident: bytes


class Recovery:
    """Gap detection over the store, plus the in-memory schedule of what this node publishes."""

    def __init__(self, state: UpsycleState, queues: SubscriberQueues, params: UpsycleParams, *,
                 can_publish: bool = False, seed: int | None = None) -> None:
        self.state = state
        self.queues = queues
        self.params = params
        #: Whether this node is signing-capable and configured to request and answer.
        self.can_publish = can_publish
        self._rng = random.Random(seed)
        self._answers: list[_ScheduledAnswer] = []
        self._requests: list[bytes] = []
        self._requested_at: dict[bytes, float] = {}

    # -- gaps --------------------------------------------------------------------------------

    def observe_seen(self, txn: AdapterTxn, group: bytes, seen: tuple[bytes, ...], now: int) -> None:
        """Open a candidate for each seen id of a group with a local member that is unknown here."""
        for ident in seen:
            if self.state.seen_until(txn, ident) is None and self.state.gap(txn, group, ident) is None:
                self.state.open_gap(txn, group, ident, now)

    def check_gaps(self, txn: AdapterTxn, now: int) -> list[GapNotice]:
        """Notify members of every candidate older than D still unknown; forget after M."""
        missing: dict[bytes, list[bytes]] = defaultdict(list)
        for opened, group, ident in self.state.gaps_opened_before(txn, now - self.params.gap_delay + 1):
            found = self.state.gap(txn, group, ident)
            if found is None:
                continue
            if self.state.seen_until(txn, ident) is not None or not self.state.has_members(txn, group):
                self.state.close_gap(txn, group, ident)
            elif found[1]:
                if opened + self.params.max_network_lifetime <= now:
                    self.state.close_gap(txn, group, ident)
            else:
                self.state.mark_notified(txn, group, ident, opened)
                missing[group].append(ident)
        notices = []
        for group, ids in missing.items():
            for start in range(0, len(ids), self.params.max_seen):
                chunk = ids[start:start + self.params.max_seen]
                notices.append(GapNotice(group, tuple(chunk)))
                for member in self.state.members(txn, group):
                    self.queues.append_gap(txn, member, group, chunk, now)
            self.request(group, ids, now)
        return notices

    def next_gap_change(self, view: StoreView, bound: float) -> float:
        """The first whole second before ``bound`` at which :meth:`check_gaps` changes something
        (the same rules, read without writing), else ``bound``. Candidates are read oldest first
        and only while one could still come due before ``bound``."""
        soonest = bound
        params = self.params
        for opened, group, ident in self.state.gaps_opened_before(view, int(min(bound, 2**63)) - params.gap_delay):
            found = self.state.gap(view, group, ident)
            if found is None:
                continue
            if self.state.seen_until(view, ident) is not None or not self.state.has_members(view, group) \
                    or not found[1]:
                due = opened + params.gap_delay  # closed or notified at the first check
            else:
                due = opened + params.max_network_lifetime  # notified already: forgotten then
            soonest = min(soonest, due)
            if opened + params.gap_delay >= soonest:
                break
        return soonest

    # -- requests ----------------------------------------------------------------------------

    def request(self, group: bytes, ids: list[bytes], now: float) -> bool:
        """Queue pull requests for ``ids`` (8 per request); False when this node cannot publish."""
        if not self.can_publish:
            return False
        fresh = [i for i in ids if now - self._requested_at.get(i, -REQUEST_RETRY) >= REQUEST_RETRY]
        for ident in fresh:
            self._requested_at[ident] = now
        for start in range(0, len(fresh), self.params.max_pull_ids):
            chunk = fresh[start:start + self.params.max_pull_ids]
            self._requests.append(encode_envelope(KIND_PULL, encode_pull_request(group, chunk)))
        return True

    def schedule_answers(self, view: StoreView, request: bytes, ids: list[bytes], now: float) -> int:
        """Plan an answer for every requested id this node holds; how many were planned."""
        if not self.can_publish:
            return 0
        planned = 0
        for ident in ids:
            if self.state.message(view, ident) is not None:
                due = now + self._rng.uniform(0.0, ANSWER_DELAY)
                self._answers.append(_ScheduledAnswer(due, request, ident))
                planned += 1
        return planned

    def publications_scheduled(self) -> bool:
        """Whether requests or answers wait to be published: otherwise only a commit, a prune
        or a local pull (each followed by the hub's wake) can schedule one."""
        return bool(self._requests or self._answers)

    def due_publications(self, view: StoreView, now: float) -> list[bytes]:
        """Bodies to publish now: queued requests, and answers whose delay has passed and
        whose (request, id) has fewer than R accepted answers."""
        out, self._requests = self._requests, []
        waiting = []
        for answer in self._answers:
            if answer.due > now:
                waiting.append(answer)
                continue
            held = self.state.request(view, answer.request)
            stored = self.state.message(view, answer.ident)
            if held is None or held[2] < now or stored is None:
                continue
            if self.state.answers(view, answer.request, answer.ident) >= self.params.answers_per_item:
                continue
            out.append(encode_envelope(KIND_REISSUE, encode_reissue(answer.request, stored.routed)))
        self._answers = waiting
        return out
