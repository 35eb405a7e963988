"""D1 to D4 and the dmsg abuse cases (docs/topics-design.md 6.6)."""

from __future__ import annotations

import hashlib

import pytest
from ecdsa import SECP256k1, SigningKey
from hypothesis import given, settings, strategies as st

from topics.dmsg.entry import Entry, DmsgReject, WINDOW, SKEW, MAX_LIFETIME, expires_at, parse_entry, sign_entry
from topics.dmsg.state import DmsgState, find_relay

NOW = 1_800_000_000


def _secret(i: int) -> bytes:
    return hashlib.sha256(b"dmsg-%d" % i).digest()


def _static(i: int) -> str:
    return SigningKey.from_string(_secret(i), curve=SECP256k1).get_verifying_key().to_string("compressed").hex()


def entry(i: int, seq: int = 0, ts: int = NOW, servers=None, address=None, sessions=3) -> bytes:
    e = Entry("0.0.1", seq, ts * 10**9, _static(i), None if servers is None else tuple(_static(s) for s in servers),
              None, address, sessions if address else None, None, None)
    return sign_entry(e, _secret(i))


def _code(raw: bytes, state: DmsgState | None = None, now: float = NOW):
    try:
        parsed = parse_entry(raw)
        if state is not None:
            state.offer(parsed, now)
    except DmsgReject as exc:
        return exc.reason.name
    return None


def test_d1_round_trip_and_any_change_rejected():
    raw = entry(1, servers=[2])
    assert parse_entry(raw).raw == raw
    for i in range(len(raw)):
        for flip in (1, 0x20):
            changed = bytearray(raw)
            changed[i] ^= flip
            if bytes(changed) == raw:
                continue
            assert _code(bytes(changed)) is not None


def test_d3_freshness_edges_and_expiry_bounds():
    state = DmsgState()
    assert _code(entry(1, ts=NOW - WINDOW, servers=[]), state) is None
    assert _code(entry(2, ts=NOW + SKEW, servers=[]), state) is None
    assert _code(entry(3, ts=NOW - WINDOW - 1, servers=[]), DmsgState()) == "not_fresh"
    assert _code(entry(4, ts=NOW + SKEW + 1, servers=[]), DmsgState()) == "from_future"
    e = parse_entry(entry(5, ts=NOW, servers=[]))
    assert expires_at(e, NOW) == NOW + WINDOW
    assert expires_at(e, NOW - 1500) <= NOW - 1500 + MAX_LIFETIME


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=12), st.randoms())
def test_d2_latest_state_for_any_order(seqs, rnd):
    raws = [entry(1, seq=s, ts=NOW - 60 + s, servers=[2]) for s in seqs]
    arrivals = raws + rnd.sample(raws, len(raws) // 2)
    rnd.shuffle(arrivals)
    state = DmsgState()
    for raw in arrivals:
        _code(raw, state)
    assert state.entries[_static(1)].sequence == max(seqs)


def test_iteration_stale_conflict_and_replay():
    state = DmsgState()
    assert _code(entry(1, seq=3, servers=[2]), state) is None
    assert _code(entry(1, seq=2, ts=NOW + 1, servers=[2]), state) == "stale"
    assert _code(entry(1, seq=3, ts=NOW + 1, servers=[2]), state) == "conflict"
    assert _code(entry(1, seq=4, ts=NOW - 1, servers=[2]), state) == "stale_timestamp"


def test_structure_codes():
    assert _code(entry(1, address="127.0.0.1:8080")) == "bad_address"
    assert _code(entry(1, address="no-port")) == "bad_address"
    assert _code(entry(1)) == "no_role"
    assert _code(entry(1, servers=list(range(2, 11)))) == "malformed"
    assert _code(entry(1, address="203.0.113.5:80", sessions=-1)) == "malformed"
    assert _code(entry(1, servers=[2]).replace(b'{"version"', b'{ "version"')) == "non_canonical"


def test_d4_lookup_picks_a_fresh_listed_server():
    state = DmsgState()
    for raw in (entry(1, servers=[10, 11, 12]), entry(10, address="203.0.113.10:8080", sessions=0),
                entry(11, address="203.0.113.11:8080", sessions=2), entry(13, address="203.0.113.13:8080")):
        assert _code(raw, state) is None
    relay = find_relay(state, _static(1), NOW)
    assert relay.static == _static(11)                      # 10 is full, 12 unknown, 13 not listed
    assert find_relay(state, _static(1), NOW + WINDOW + 1) is None
    assert find_relay(state, _static(99), NOW) is None
