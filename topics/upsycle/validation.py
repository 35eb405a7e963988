"""The validation rules of docs/topics-design.md 4.3 to 4.7, one pure function per envelope kind.

Each returns the first failing :class:`~topics.adapter.Reject`, a :class:`~topics.adapter.Defer`
(an answer that overtook its request), or None. Nothing here writes: the adapter store is
read through the framework's view only, so a reject leaves no trace (invariant C4).
"""

from __future__ import annotations

from topics.adapter import Defer, Reject, StoreView
from topics.reasons import (
    ANSWER_QUOTA,
    BAD_SIGNATURE,
    CONFLICT,
    DUPLICATE_INNER,
    EXPIRY_EXCEEDS_BOUND,
    EXPIRY_EXCEEDS_INNER,
    INNER_EXPIRED,
    RATE_LIMITED,
    STALE,
    UNSOLICITED,
)

from .identity import verify
from .params import UpsycleParams
from .state import UpsycleState
from .wire import PeerAdvertisement, PullRequest, Reissue, RoutedMessage

__all__ = ["check_routed", "check_pull_request", "check_reissue", "check_advertisement", "ANSWER_WAIT"]

#: How long an answer that overtook its request waits for it (docs/topics-design.md 2.8, P).
ANSWER_WAIT = 30.0


def _lifetime(inner_expiry: int, ttl: int, expires_at: int, now: float, params: UpsycleParams) -> Reject | None:
    if inner_expiry <= now:
        return Reject(INNER_EXPIRED, f"inner expiry {inner_expiry} is not after {int(now)}")
    if expires_at > inner_expiry:
        return Reject(EXPIRY_EXCEEDS_INNER, f"expiresAt {expires_at} after the inner expiry {inner_expiry}")
    bound = now + max(ttl, params.lifetime_floor) + params.skew
    if expires_at > bound:
        return Reject(EXPIRY_EXCEEDS_BOUND, f"expiresAt {expires_at} after {int(bound)}")
    return None


def _signature(message: RoutedMessage) -> Reject | None:
    if not verify(message.signer, message.signed_bytes, message.sig):
        who = "group" if message.is_multicast else "source"
        return Reject(BAD_SIGNATURE, f"the {who} signature does not verify")
    return None


def check_routed(message: RoutedMessage, expires_at: int, now: float, view: StoreView,
                 state: UpsycleState, params: UpsycleParams) -> Reject | None:
    """Kind 0: lifetimes, then the inner-id index, then the source or group signature."""
    found = _lifetime(message.inner_expiry, message.ttl, expires_at, now, params)
    if found is not None:
        return found
    if state.seen_until(view, message.id) is not None:
        return Reject(DUPLICATE_INNER, f"inner id {message.id.hex()} already accepted")
    return _signature(message)


def check_pull_request(request: PullRequest, pool: bytes, expires_at: int, now: float, view: StoreView,
                       state: UpsycleState, params: UpsycleParams) -> Reject | None:
    """Kind 1: the request lifetime and the per-pool, per-group request quota."""
    bound = now + params.request_lifetime + params.skew
    if expires_at > bound:
        return Reject(EXPIRY_EXCEEDS_BOUND, f"a pull request lives at most {params.request_lifetime} s")
    recent = state.requests_since(view, pool, request.group, int(now) - params.request_window)
    if recent >= params.requests_per_window:
        return Reject(RATE_LIMITED, f"{recent} requests for this group from this pool in {params.request_window} s",
                      retry_after=params.request_window)
    return None


def check_reissue(answer: Reissue, expires_at: int, now: float, view: StoreView, state: UpsycleState,
                  params: UpsycleParams) -> Reject | Defer | None:
    """Kind 2: the named request is held and unexpired, asked for this item, quota not reached."""
    carried = answer.message
    held = state.request(view, answer.request)
    if held is None:
        return Defer([answer.request], max_wait=ANSWER_WAIT)
    group, ids, request_expires, _ = held
    if request_expires < now:
        return Reject(UNSOLICITED, "the answered request has expired")
    if not carried.is_multicast or carried.grp != group:
        return Reject(UNSOLICITED, "the carried message is not of the requested group")
    if carried.id not in ids:
        return Reject(UNSOLICITED, "the carried message was not requested")
    if state.answers(view, answer.request, carried.id) >= params.answers_per_item:
        return Reject(ANSWER_QUOTA, f"{params.answers_per_item} answers already accepted for this item")
    found = _lifetime(carried.inner_expiry, carried.ttl, expires_at, now, params)
    return found if found is not None else _signature(carried)


def check_advertisement(ad: PeerAdvertisement, expires_at: int, now: float, view: StoreView,
                        state: UpsycleState, params: UpsycleParams) -> Reject | None:
    """Kind 3: lifetimes, signature by ``id``, then revision order against the held one."""
    found = _lifetime(ad.inner_expiry, ad.ttl, expires_at, now, params)
    if found is not None:
        return found
    if not verify(ad.id, ad.preimage, ad.sig):
        return Reject(BAD_SIGNATURE, "the advertisement signature does not verify")
    held = state.advertisement(view, ad.id)
    if held is not None:
        held_raw, _, held_rev, _, _ = held
        if ad.rev < held_rev:
            return Reject(STALE, f"revision {ad.rev} is older than the held {held_rev}")
        if ad.rev == held_rev:
            if ad.raw == held_raw:
                return Reject(DUPLICATE_INNER, "this advertisement is already held")
            return Reject(CONFLICT, f"revision {ad.rev} is held with other content")
    return None
