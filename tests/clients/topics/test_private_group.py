"""Private groups without a network: keys, revocation, causal delivery, the add-wins set."""

from __future__ import annotations

from pathlib import Path

import pytest
from nacl.public import PrivateKey
from nacl.signing import SigningKey

from clients.topics.causal import CausalBuffer
from clients.topics.group_keys import NotReadable, body_kind, decrypt_body
from clients.topics.orset import AddWinsSet, add_op, remove_op
from clients.topics.private_group import GroupMember, GroupOwner, NotAMember
from topics.upsycle.identity import verify, signed_part
from topics.upsycle.wire import decode_routed

NOW = 1_800_000_000.0


def clock() -> float:
    return NOW


def group(n: int = 3):
    owner = GroupOwner(SigningKey(bytes([7]) * 32), bytes([9]) * 32, clock)
    members = [GroupMember(PrivateKey(bytes([20 + i]) * 32), owner.owner_public, owner.grp, clock) for i in range(n)]
    return owner, members


def everyone(members, routed):
    return [m.receive(decode_routed(routed.raw)) for m in members]


def test_members_read_bodies_that_carry_no_plaintext_and_are_group_signed():
    owner, members = group()
    everyone(members, owner.set_members([m.public for m in members]))
    routed, own = members[0].publish(b"secret plan")
    assert [d.value for d in own] == [b"secret plan"]
    assert b"secret plan" not in routed.raw
    assert verify(owner.grp, signed_part(routed.raw), routed.sig)
    assert [[d.value for d in got] for got in everyone(members[1:], routed)] == [[b"secret plan"]] * 2


def test_revocation_starts_an_epoch_the_revoked_member_cannot_read():
    owner, (a, b, c) = group()
    everyone([a, b, c], owner.set_members([a.public, b.public, c.public]))
    everyone([a, b, c], owner.revoke(b.public))
    assert (a.epoch, b.epoch, b.revoked, a.revoked) == (2, 2, True, False)
    routed, _ = a.publish(b"after revocation")
    assert c.receive(decode_routed(routed.raw))[0].value == b"after revocation"
    assert b.receive(decode_routed(routed.raw)) == [] and b.unreadable == [routed.id]
    # no key it ever held opens the new epoch's body
    _, value = body_kind(routed.body)
    for old in b.keys.values():
        with pytest.raises(NotReadable):
            decrypt_body([1, 2, value[2]], {2: old})
    with pytest.raises(NotAMember):
        b.publish(b"still here?")


def test_a_membership_record_not_signed_by_the_owner_is_ignored():
    owner, (a,) = group(1)
    forger = GroupOwner(SigningKey(bytes([8]) * 32), owner.grp_seed, clock)
    a.receive(decode_routed(forger.set_members([a.public]).raw))
    assert a.epoch == 0 and a.keys == {} and len(a.unreadable) == 1


def test_data_of_an_epoch_announced_later_waits_for_its_record():
    owner, (a, b) = group(2)
    first = owner.set_members([a.public, b.public])
    a.receive(decode_routed(first.raw))
    routed, _ = a.publish(b"early")
    assert b.receive(decode_routed(routed.raw)) == []
    assert [d.value for d in b.receive(decode_routed(first.raw))] == [b"early"]


def test_causal_buffer_holds_until_dependencies_then_releases_by_rule():
    buffer = CausalBuffer(limit=2, max_wait=10)
    assert buffer.offer(b"c", (b"b",), "c", 0) == []
    assert buffer.offer(b"b", (b"a",), "b", 0) == []
    assert [d.id for d in buffer.offer(b"a", (), "a", 1)] == [b"a", b"b", b"c"]
    assert buffer.heads() == [b"c"]
    # a dependency that never arrives: released after max_wait with it listed as missing
    assert buffer.offer(b"e", (b"lost",), "e", 2) == []
    assert buffer.expire(11) == []
    (released,) = buffer.expire(12)
    assert (released.id, released.missing) == (b"e", (b"lost",))
    # over the limit, the oldest held message is released the same way
    for i, id in enumerate((b"x", b"y", b"z")):
        out = buffer.offer(id, (b"never",), id, 20 + i)
    assert [(d.id, d.missing) for d in out] == [(b"x", (b"never",))] and list(buffer.held) == [b"y", b"z"]
    assert buffer.offer(b"a", (), "a", 30) == []                # duplicates are ignored


def test_add_wins_set_converges_in_any_order_and_concurrent_add_wins():
    ops = [(b"t1", add_op("x")), (b"t2", add_op("x")), (b"t3", remove_op([b"t1"])), (b"t4", add_op("y")),
           (b"t5", remove_op([b"t4"]))]
    values = set()
    for order in (ops, ops[::-1], ops[2:] + ops[:2]):
        replica = AddWinsSet()
        for tag, op in order:
            replica.apply(tag, op)
        values.add(replica.value())
    assert values == {frozenset({"x"})}       # t2 was not observed by the remove of t1


def test_the_example_in_the_user_guide_runs_as_written():
    guide = (Path(__file__).parents[3] / "docs" / "topics.md").read_text()
    section = guide[guide.index("## Private groups"):]
    example = section[section.index("```python\n") + 10:section.index("```\n", section.index("```python"))]
    exec(compile(example, "docs/topics.md", "exec"), {})


def test_a_saved_member_goes_on_where_it_stopped():
    owner, (a, b) = group(2)
    everyone([a, b], owner.set_members([a.public, b.public]))
    first, _ = a.publish(b"first")
    second, _ = a.publish(b"second")
    assert b.receive(decode_routed(second.raw)) == []          # waits for first
    again = GroupMember.load(b.key, b.save(), clock)
    assert (again.epoch, again.keys, again.grp_seed) == (1, b.keys, b.grp_seed)
    assert again.receive(decode_routed(second.raw)) == []      # seen already
    assert [d.value for d in again.receive(decode_routed(first.raw))] == [b"first", b"second"]
    reply, _ = again.publish(b"reply")
    assert [d.deps for d in a.receive(decode_routed(reply.raw))] == [(second.id,)]
