"""The local operations around the hooks: classification, retained and state starts,
node-local groups, PULL statuses and network recovery through request and answer."""

from __future__ import annotations

from topics.adapter import Start
from topics.upsycle import PullStatus
from topics.upsycle.params import UpsycleParams
from topics.upsycle.wire import decode_envelope, encode_advertisement

from .harness import NOW, advert_body, exp_minutes, inner_ids, key, multicast, pull_body, routed_body, unicast


def test_classify_gives_the_topic_key(driver) -> None:
    group, dst = key(1), key(2)
    assert driver.adapter.classify(routed_body(multicast(group))) == group.public
    assert driver.adapter.classify(routed_body(unicast(key(3), dst.public))) == dst.public
    assert driver.adapter.classify(pull_body(group.public, [bytes(32)])) == group.public
    assert driver.adapter.classify(b"\x00\x10" + bytes(100)) is None


def test_retained_and_state_starts(driver) -> None:
    group, member, peer = key(1), key(2), key(7)
    driver.join(member, group)
    first, second = multicast(group, b"1"), multicast(group, b"2")
    driver.offer(routed_body(first))
    driver.clock.advance(1)
    driver.offer(routed_body(second))
    ad = encode_advertisement(peer.sign, peer.public, (1, b"\x7f\x00\x00\x01", 1), {}, [group.public], 1, 600,
                              exp_minutes(NOW + 3600))
    driver.offer(advert_body(ad.raw))
    with driver.store.read() as view:
        retained = list(driver.adapter.deliver([{0: 1, 1: [group.public]}], Start.RETAINED, view, driver.now))
        other = list(driver.adapter.deliver([{0: 1, 1: [key(9).public]}], Start.RETAINED, view, driver.now))
        state = list(driver.adapter.deliver([{0: 1, 9: [3]}], Start.STATE, view, driver.now))
    assert [d.dedup for d in retained] == [first.id, second.id] and other == []
    assert len(state) == 1 and state[0].body[1][1] == peer.public


def test_node_local_group_is_never_wrapped(driver) -> None:
    group, a, b, outsider = key(1), key(2), key(3), key(4)
    driver.join(a, group, local=True)
    driver.join(b, group)
    message = multicast(group, b"local only")
    with driver.store.write() as txn:
        assert driver.adapter.publish_local(txn, decode_envelope(routed_body(message)), driver.now) == message.id
        other = multicast(key(5), b"not local")
        assert driver.adapter.publish_local(txn, decode_envelope(routed_body(other)), driver.now) is None
    for member in (a, b):
        items = driver.read(member)
        assert [(i.body[0], i.body[2]) for i in items] == [(5, message.raw)]
    assert driver.read(outsider) == []


def test_pull_statuses(make_driver) -> None:
    driver = make_driver(can_publish=True, params=UpsycleParams(requests_per_window=1))
    group, member, stranger = key(1), key(2), key(3)
    driver.join(member, group)
    held = multicast(group, b"held")
    soon = multicast(group, b"soon", exp=exp_minutes(NOW + 60))
    driver.offer(routed_body(held))
    driver.offer(routed_body(soon))
    unknown, another = bytes([1]) * 32, bytes([2]) * 32
    assert driver.pull(stranger, group, [held.id]) == [(held.id, PullStatus.NOT_MEMBER)]
    driver.clock.advance(120)
    statuses = driver.pull(member, group, [held.id, soon.id, unknown])
    assert statuses == [(held.id, PullStatus.QUEUED), (soon.id, PullStatus.EXPIRED), (unknown, PullStatus.REQUESTED)]
    assert driver.pull(member, group, [another]) == [(another, PullStatus.RATE_LIMITED)]
    requests = [decode_envelope(body).content for body in driver.due()]
    assert [(r.group, r.ids) for r in requests] == [(group.public, (unknown,))]
    # The expired one is past its queue deadline too; the pulled one comes again.
    assert inner_ids(driver.read(member)) == [held.id, held.id]


def test_missed_message_recovered_through_request_and_answer(make_driver) -> None:
    """A member's node misses a message, detects it from a seen list, requests it; a node
    holding it answers; the answer delivers it once."""
    holder = make_driver("holder", can_publish=True, seed=1)
    requester = make_driver("requester", can_publish=True, seed=2)
    group, member, watcher = key(1), key(2), key(3)
    requester.join(member, group)
    holder.join(watcher, group)
    missed = multicast(group, b"missed")
    later = multicast(group, b"later", seen=(missed.id,))
    holder.offer(routed_body(missed))
    for node in (holder, requester):
        node.offer(routed_body(later))
    for node in (holder, requester):
        node.clock.advance(UpsycleParams().gap_delay)
    # Nothing scheduled before the gap is noticed: the node's due loop would not even ask.
    assert not requester.adapter.publications_scheduled() and not holder.adapter.publications_scheduled()
    notices = requester.prune()
    assert [n.ids for n in notices] == [(missed.id,)]
    assert requester.adapter.publications_scheduled()  # the request the prune queued
    [request_body] = requester.due()
    assert not requester.adapter.publications_scheduled()
    request = requester.offer(request_body, pool=2)
    assert request.accepted
    holder.offer(request_body, pool=2)
    assert holder.adapter.publications_scheduled()  # the answer, after its random delay
    holder.clock.advance(5)
    [answer_body] = holder.due()
    assert not holder.adapter.publications_scheduled()
    assert requester.offer(answer_body, pool=1).accepted
    ids = inner_ids(requester.read(member))
    assert ids == [later.id, missed.id]
    gap_items = [i.body[1] for i in requester.read(member) if i.body[0] == 2]
    assert gap_items == [{0: group.public, 1: [missed.id]}]


def _content(driver) -> dict:
    """Every database of the adapter, for comparing before and after a prune."""
    with driver.store.read() as view:
        return {db: list(view.scan(db)) for db in driver.adapter.databases}


def _next_prune(driver):
    with driver.store.read() as view:
        return driver.adapter.next_prune(view)


def test_no_prune_before_next_prune_changes_anything(make_driver) -> None:
    """Skipping the prune until ``next_prune`` loses nothing; once everything is gone it is None."""
    driver = make_driver(can_publish=True, seed=1)
    assert _next_prune(driver) is None  # nothing held: the node never needs to prune
    group, member = key(1), key(2)
    driver.join(member, group)
    missed = multicast(group, b"missed", exp=exp_minutes(NOW + 600))
    driver.offer(routed_body(multicast(group, b"later", seen=(missed.id,), exp=exp_minutes(NOW + 600))))
    driver.offer(routed_body(unicast(key(3), member.public, b"direct", ttl=120, exp=exp_minutes(NOW + 900))))
    assert driver.offer(pull_body(group.public, [missed.id]), pool=2, expires_at=NOW + 100).accepted
    checked = 0
    for _ in range(200):
        when = _next_prune(driver)
        if when is None:
            break
        if when > driver.now + 1:
            driver.clock.advance(when - 1 - driver.now)
            before = _content(driver)
            driver.prune()
            assert _content(driver) == before, f"the prune at {driver.now} changed something before {when}"
            checked += 1
        driver.clock.advance(max(when, driver.now + 1) - driver.now)
        driver.prune()
    assert _next_prune(driver) is None
    assert checked >= 2
