"""The numbers both sig-submission versions share (``dmq-node: DMQ/Policy.hs``, docs/protocol/node-to-node.md 9.2).

They are part of the wire contract, not tuning knobs: a reference peer closes the
connection when a request breaks the 132-id window, its per-state byte limits and the
mux ingress limit are derived from 33 ids of at most 2 800 bytes, and it checks the
announced sizes with a tolerance of 32 bytes. The reference notes that changing any of
them "might require a new node-to-node protocol version".
"""

from __future__ import annotations

__all__ = [
    "PROTOCOL_NUM",
    "MAX_SIG_SIZE",
    "MAX_IDS_PER_REQUEST",
    "MAX_UNACKNOWLEDGED_IDS",
    "BYTES_IN_FLIGHT_PER_PEER",
    "BODIES_BYTE_LIMIT",
    "INGRESS_LIMIT",
    "BLOCKING_STATE_TIME_LIMIT",
    "SHORT_WAIT",
    "MAX_WORD16",
    "MAX_WORD32",
    "ID_SIZE",
]

#: Mini-protocol number of sig submission on node-to-node connections, both versions.
PROTOCOL_NUM = 11
#: ``maxSigSize``: the largest message the limits are sized for.
MAX_SIG_SIZE = 2800
#: ``maxSigIdsInflight``: most ids asked for in one request; the reference never asks for more.
MAX_IDS_PER_REQUEST = 33
#: ``maxUnacknowledgedTxIds``: the serving window, ``unacked - ack + req <= 132``.
MAX_UNACKNOWLEDGED_IDS = 4 * MAX_IDS_PER_REQUEST
#: ``txsSizeInflightPerPeer``: announced bytes of bodies requested and not yet received.
BYTES_IN_FLIGHT_PER_PEER = MAX_SIG_SIZE * MAX_IDS_PER_REQUEST
#: Byte limit of the bodies reply state: ``maxSigSize * (maxSigIdsInflight + 2)``.
BODIES_BYTE_LIMIT = MAX_SIG_SIZE * (MAX_IDS_PER_REQUEST + 2)
#: Mux ingress limit of protocol 11: ``txsSizeInflightPerPeer`` plus 10 % (docs/protocol/mux.md 2.4).
INGRESS_LIMIT = BYTES_IN_FLIGHT_PER_PEER + BYTES_IN_FLIGHT_PER_PEER // 10
#: Time limit of the V2 blocking ids state; the serving peer must answer before it.
BLOCKING_STATE_TIME_LIMIT = 20.0
#: The reference's ``shortWait``: the limit of the non-blocking ids and bodies states.
SHORT_WAIT = 10.0

MAX_WORD16 = 0xFFFF
MAX_WORD32 = 0xFFFFFFFF
#: Message ids are Blake2b-256 digests.
ID_SIZE = 32
