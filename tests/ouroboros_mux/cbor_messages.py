"""Hypothesis strategies for CBOR messages as raw bytes, in the shapes the protocols use.

Definite and indefinite arrays, maps and strings, nesting, and big byte strings that
span many SDUs: everything the framer must find the end of without decoding.
"""

from __future__ import annotations

import cbor2
from hypothesis import strategies as st

from ouroboros_mux.cbor import write_head as _head


def definite_array(items: list[bytes]) -> bytes:
    return _head(4, len(items)) + b"".join(items)


def indefinite_array(items: list[bytes]) -> bytes:
    return b"\x9f" + b"".join(items) + b"\xff"


def indefinite_map(pairs: list[tuple[bytes, bytes]]) -> bytes:
    return b"\xbf" + b"".join(k + v for k, v in pairs) + b"\xff"


def indefinite_bytes(chunks: list[bytes]) -> bytes:
    return b"\x5f" + b"".join(_head(2, len(c)) + c for c in chunks) + b"\xff"


def big_bytes(size: int) -> bytes:
    """A definite byte string with a non-repeating-looking body, so misplaced slices show."""
    body = (bytes(range(251)) * (size // 251 + 1))[:size]
    return _head(2, size) + body


_scalars = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64 - 1),
    st.binary(max_size=200),
    st.text(max_size=30),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
).map(cbor2.dumps)

_leaves = st.one_of(_scalars, st.lists(st.binary(max_size=60), max_size=4).map(indefinite_bytes))

#: Raw CBOR items of moderate size, nested in definite and indefinite containers.
nested_messages = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=5).map(definite_array),
        st.lists(children, max_size=5).map(indefinite_array),
        st.lists(st.tuples(children, children), max_size=3).map(indefinite_map),
    ),
    max_leaves=12,
)

#: Any message: mostly nested ones, sometimes a byte string spanning several SDUs.
messages = st.one_of(
    nested_messages,
    nested_messages,
    nested_messages,
    st.integers(min_value=1, max_value=150_000).map(big_bytes),
    st.integers(min_value=1, max_value=30_000).map(lambda n: definite_array([b"\x0b", big_bytes(n), b"\xf5"])),
)
