"""Every message our codecs encode, checked against the project's CDDL and the upstream vectors.

The CDDL check goes through pycddl with the schemas of ``docs/protocol/cddl``; the byte
check compares with the hex of ``vectors.json`` and docs/protocol where one exists, and the
upstream vectors themselves must match the schemas too. pycddl
cannot tell a definite from an indefinite list (the reference codecs accept only one of
them in several places): the vectors pin that, the CDDL pins the shapes.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass
from typing import Callable

import cbor2
import pytest

from handshake import (CARDANO_MAINNET_MAGIC, DMQ_MAINNET_MAGIC, HandshakeDecodeError, MsgAcceptVersion, MsgProposeVersions,
                       MsgQueryReply, MsgRefuse, NodeToClientVersionData, NodeToNodeVersionData, Refused,
                       VersionMismatch, cardano_node_to_client_versions, dmq_node_to_client_versions,
                       dmq_node_to_node_versions, encode_message)
from miniprotocols import keep_alive as ka
from miniprotocols import local_msg_notification as ln
from miniprotocols import local_msg_submission as ls
from miniprotocols import peer_sharing as ps
from miniprotocols import sig_submission_v1 as v1
from miniprotocols import sig_submission_v2 as v2
from tests.dmq.cardano_node.cddl import CddlViolation

from .schemas import schema

N2N = NodeToNodeVersionData(DMQ_MAINNET_MAGIC)
N2C = NodeToClientVersionData(DMQ_MAINNET_MAGIC)
N2N_FILE = "handshake-node-to-node"
N2C_FILE = "handshake-node-to-client"
CARDANO_FILE = "handshake-cardano-node-to-client"
REFUSE_TEXT = "version data mismatch: NodeToClientVersionData {networkMagic = NetworkMagic 1, query = False}"


@dataclass(frozen=True)
class Case:
    """One encoded message: which CDDL file and rule must accept it, and its vector if there is one."""

    name: str
    cddl: str
    rule: str
    encode: Callable  # samples -> bytes
    vector: Callable | None = None  # samples -> hex

    def __str__(self) -> str:
        return self.name


def _hex(h: str) -> Callable:
    return lambda m: h


HANDSHAKE = [
    Case("n2n propose", N2N_FILE, "msgProposeVersions",
         lambda m: encode_message(MsgProposeVersions.from_table(dmq_node_to_node_versions(DMQ_MAINNET_MAGIC))),
         _hex("8200a201841aad964a09f401f402841aad964a09f401f4")),
    Case("n2n propose initiator-only", N2N_FILE, "msgProposeVersions",
         lambda m: encode_message(MsgProposeVersions.from_table(
             dmq_node_to_node_versions(DMQ_MAINNET_MAGIC, initiator_only=True, peer_sharing=False))),
         _hex("8200a201841aad964a09f500f402841aad964a09f500f4")),
    Case("n2n accept v2", N2N_FILE, "msgAcceptVersion",
         lambda m: encode_message(MsgAcceptVersion(2, N2N.to_cbor())), _hex("830102841aad964a09f401f4")),
    Case("n2n accept v1", N2N_FILE, "msgAcceptVersion",
         lambda m: encode_message(MsgAcceptVersion(1, N2N.to_cbor()))),
    Case("n2n refuse version mismatch", N2N_FILE, "msgRefuse",
         lambda m: encode_message(MsgRefuse(VersionMismatch((1, 2)))), _hex("82028200820102")),
    Case("n2n refuse decode error", N2N_FILE, "msgRefuse",
         lambda m: encode_message(MsgRefuse(HandshakeDecodeError(2, "peerSharing is out of bound: 2")))),
    Case("n2n refuse refused", N2N_FILE, "msgRefuse",
         lambda m: encode_message(MsgRefuse(Refused(2, "version data mismatch")))),
    Case("n2n query reply", N2N_FILE, "msgQueryReply",
         lambda m: encode_message(MsgQueryReply.from_table(dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)))),
    Case("n2c propose", N2C_FILE, "msgProposeVersions",
         lambda m: encode_message(MsgProposeVersions.from_table(dmq_node_to_client_versions(DMQ_MAINNET_MAGIC))),
         lambda m: m.wire["n2c_handshake_propose_mainnet"]),
    Case("n2c accept", N2C_FILE, "msgAcceptVersion",
         lambda m: encode_message(MsgAcceptVersion(4097, N2C.to_cbor())),
         lambda m: m.wire["n2c_handshake_accept_mainnet"]),
    Case("n2c refuse version mismatch", N2C_FILE, "msgRefuse",
         lambda m: encode_message(MsgRefuse(VersionMismatch((4097,)))), _hex("8202820081191001")),
    Case("n2c refuse decode error", N2C_FILE, "msgRefuse",
         lambda m: encode_message(MsgRefuse(HandshakeDecodeError(4097, "unknown encoding: TInt 1")))),
    Case("n2c refuse refused", N2C_FILE, "msgRefuse",
         lambda m: encode_message(MsgRefuse(Refused(4097, REFUSE_TEXT)))),
    Case("n2c query reply", N2C_FILE, "msgQueryReply",
         lambda m: encode_message(MsgQueryReply.from_table(dmq_node_to_client_versions(DMQ_MAINNET_MAGIC))),
         _hex("8203a1191001821aad964a09f4")),
]

KA = "keep-alive"
KEEP_ALIVE = [
    Case("keep-alive 42", KA, "msgKeepAlive", lambda m: ka.KeepAliveCodec().encode(ka.MsgKeepAlive(42)),
         lambda m: m.wire["keep_alive_42"]),
    Case("keep-alive response 42", KA, "msgKeepAliveResponse",
         lambda m: ka.KeepAliveCodec().encode(ka.MsgKeepAliveResponse(42)),
         lambda m: m.wire["keep_alive_response_42"]),
    Case("keep-alive largest cookie", KA, "msgKeepAlive",
         lambda m: ka.KeepAliveCodec().encode(ka.MsgKeepAlive(0xFFFF)), _hex("820019ffff")),
    Case("keep-alive done", KA, "msgDone", lambda m: ka.KeepAliveCodec().encode(ka.MsgDone()), _hex("8102")),
]

LS = "local-msg-submission"
_ls = ls.LocalSubmissionCodec().encode
LOCAL_SUBMISSION = [
    Case("submit e2e message", LS, "msgSubmitMessage", lambda m: _ls(ls.MsgSubmitMessage(m.e2e.raw)),
         lambda m: "8200" + m.e2e.raw.hex()),
    Case("submit largest message", LS, "msgSubmitMessage", lambda m: _ls(ls.MsgSubmitMessage(m.largest.raw))),
    Case("accept", LS, "msgAcceptMessage", lambda m: _ls(ls.MsgAcceptMessage()),
         lambda m: m.wire["local_submission_accept"]),
    Case("reject invalid", LS, "msgRejectMessage",
         lambda m: _ls(ls.MsgRejectMessage(ls.RejectInvalid("InvalidSigId"))),
         lambda m: m.wire["reject_invalid_InvalidSigId"]),
    Case("reject already received", LS, "msgRejectMessage",
         lambda m: _ls(ls.MsgRejectMessage(ls.RejectAlreadyReceived())),
         lambda m: m.wire["reject_already_received"]),
    Case("reject expired", LS, "msgRejectMessage", lambda m: _ls(ls.MsgRejectMessage(ls.RejectExpired())),
         lambda m: m.wire["reject_expired"]),
    Case("reject other", LS, "msgRejectMessage",
         lambda m: _ls(ls.MsgRejectMessage(ls.RejectOther("custom error"))),
         lambda m: m.wire["reject_other_custom_error"]),
    Case("done", LS, "msgDone", lambda m: _ls(ls.MsgDone()), lambda m: m.wire["local_submission_done"]),
]

LN = "local-msg-notification"
_ln = ln.LocalNotificationCodec().encode
NOTIFICATION = [
    Case("request non-blocking", LN, "msgRequestMessages", lambda m: _ln(ln.MsgRequestMessages(False)),
         lambda m: m.wire["notification_request_nonblocking"]),
    Case("request blocking", LN, "msgRequestMessages", lambda m: _ln(ln.MsgRequestMessages(True)),
         lambda m: m.wire["notification_request_blocking"]),
    Case("reply non-blocking empty", LN, "msgReplyMessagesNonBlocking",
         lambda m: _ln(ln.MsgReplyMessagesNonBlocking((), False)),
         lambda m: m.wire["notification_reply_nonblocking_empty"]),
    Case("reply non-blocking one", LN, "msgReplyMessagesNonBlocking",
         lambda m: _ln(ln.MsgReplyMessagesNonBlocking((m.e2e.raw,), True)),
         lambda m: "83019f" + m.e2e.raw.hex() + "fff5"),
    Case("reply non-blocking several", LN, "msgReplyMessagesNonBlocking",
         lambda m: _ln(ln.MsgReplyMessagesNonBlocking((m.smallest.raw, m.mithril.raw, m.largest.raw), False))),
    Case("reply blocking one", LN, "msgReplyMessagesBlocking",
         lambda m: _ln(ln.MsgReplyMessagesBlocking((m.e2e.raw,))), lambda m: "82029f" + m.e2e.raw.hex() + "ff"),
    Case("reply blocking several", LN, "msgReplyMessagesBlocking",
         lambda m: _ln(ln.MsgReplyMessagesBlocking((m.mithril.raw, m.largest.raw)))),
    Case("client done", LN, "msgClientDone", lambda m: _ln(ln.MsgClientDone()),
         lambda m: m.wire["notification_client_done"]),
]

V1 = "sig-submission-v1"
_v1 = v1.SigSubmissionV1Codec().encode
SIG_V1 = [
    Case("v1 init", V1, "msgInit", lambda m: _v1(v1.MsgInit()), _hex("8106")),
    Case("v1 request ids blocking", V1, "msgRequestTxIds", lambda m: _v1(v1.MsgRequestTxIds(True, 0, 33)),
         _hex("8400f5001821")),
    Case("v1 request ids non-blocking", V1, "msgRequestTxIds", lambda m: _v1(v1.MsgRequestTxIds(False, 3, 33)),
         _hex("8400f4031821")),
    Case("v1 reply ids", V1, "msgReplyTxIds",
         lambda m: _v1(v1.MsgReplyTxIds(((m.e2e.message_id, len(m.e2e.raw)), (m.largest.message_id, 2633)))),
         lambda m: f"82019f825820{m.e2e.message_id.hex()}1902dc825820{m.largest.message_id.hex()}190a49ff"),
    Case("v1 reply ids empty", V1, "msgReplyTxIds", lambda m: _v1(v1.MsgReplyTxIds(())), _hex("82019fff")),
    Case("v1 request txs", V1, "msgRequestTxs", lambda m: _v1(v1.MsgRequestTxs((m.e2e.message_id,))),
         lambda m: f"82029f5820{m.e2e.message_id.hex()}ff"),
    Case("v1 reply txs", V1, "msgReplyTxs",
         lambda m: _v1(v1.MsgReplyTxs((m.e2e.raw, m.mithril.raw))),
         lambda m: f"82039f{m.e2e.raw.hex()}{m.mithril.raw.hex()}ff"),
    Case("v1 done", V1, "msgDone", lambda m: _v1(v1.MsgDone()), _hex("8104")),
]

V2 = "sig-submission-v2"
_v2 = v2.SigSubmissionV2Codec().encode
SIG_V2 = [
    Case("v2 request ids blocking", V2, "msgRequestSigIds", lambda m: _v2(v2.MsgRequestSigIds(True, 0, 33)),
         _hex("8401f5001821")),
    Case("v2 request ids non-blocking", V2, "msgRequestSigIds",
         lambda m: _v2(v2.MsgRequestSigIds(False, 3, 33)), _hex("8401f4031821")),
    Case("v2 reply ids", V2, "msgReplySigIds",
         lambda m: _v2(v2.MsgReplySigIds(((m.e2e.message_id, 1000),))),
         lambda m: f"82029f825820{m.e2e.message_id.hex()}1903e8ff"),
    Case("v2 reply ids empty", V2, "msgReplySigIds", lambda m: _v2(v2.MsgReplySigIds(())), _hex("82029fff")),
    Case("v2 reply no ids", V2, "msgReplyNoSigIds", lambda m: _v2(v2.MsgReplyNoSigIds()), _hex("8103")),
    Case("v2 request sigs", V2, "msgRequestSigs",
         lambda m: _v2(v2.MsgRequestSigs((m.e2e.message_id, m.mithril.message_id))),
         lambda m: f"82049f5820{m.e2e.message_id.hex()}5820{m.mithril.message_id.hex()}ff"),
    Case("v2 reply sigs", V2, "msgReplySigs",
         lambda m: _v2(v2.MsgReplySigs((m.smallest.raw, m.largest.raw))),
         lambda m: f"82059f{m.smallest.raw.hex()}{m.largest.raw.hex()}ff"),
    Case("v2 done", V2, "msgDone", lambda m: _v2(v2.MsgDone()), _hex("8106")),
]

PS = "peer-sharing"
_ps = ps.PeerSharingCodec().encode
PEER_SHARING = [
    Case("share request", PS, "msgShareRequest", lambda m: _ps(ps.MsgShareRequest(10)), _hex("82000a")),
    Case("share peers empty", PS, "msgSharePeers", lambda m: _ps(ps.MsgSharePeers(())), _hex("820180")),
    Case("share peers v4 and v6", PS, "msgSharePeers",
         lambda m: _ps(ps.MsgSharePeers((ps.PeerAddress(ipaddress.ip_address("127.0.0.1"), 3141),
                                         ps.PeerAddress(ipaddress.ip_address("2001:db8::1"), 6161)))),
         _hex("82019f83001a0100007f190c4586011a20010db8000001191811ff")),
    Case("share done", PS, "msgDone", lambda m: _ps(ps.MsgDone()), _hex("8102")),
]

SIG = "message"
MESSAGES = [
    Case("message e2e vector", SIG, "message", lambda m: m.e2e.raw),
    Case("message mithril body", SIG, "message", lambda m: m.mithril.raw),
    Case("message 90-byte body", SIG, "message", lambda m: m.smallest.raw),
    Case("message 2000-byte body", SIG, "message", lambda m: m.largest.raw),
]

ALL = HANDSHAKE + KEEP_ALIVE + LOCAL_SUBMISSION + NOTIFICATION + SIG_V1 + SIG_V2 + PEER_SHARING + MESSAGES


@pytest.fixture(scope="module")
def m(samples, vectors):
    samples.wire = vectors["wire_small"]
    return samples


@pytest.mark.parametrize("case", ALL, ids=str)
def test_encoded_message_matches_its_cddl_rule(case, m):
    assert schema(case.cddl).message_rule(case.encode(m)) == case.rule


@pytest.mark.parametrize("case", [c for c in ALL if c.vector is not None], ids=str)
def test_encoded_message_matches_its_vector(case, m):
    assert case.encode(m).hex() == case.vector(m)


def test_the_e2e_message_is_the_derived_vector(m):
    """docs/protocol/README.md 12.2: the hard check on the message encoding itself."""
    raw = m.e2e.raw
    assert len(raw) == 732
    assert raw.startswith(bytes.fromhex("855820f7ebbbce"))
    assert hashlib.sha256(raw).hexdigest() == "3507af221b442ed2d4564e5c61caf8f8f6ba6dfc997a2f065d6753d10ee9a7f7"


# -- the schemas are not vacuous --------------------------------------------------------

def _unsigned_message(body: bytes) -> bytes:
    """A message of the right shape around ``body`` (no valid id or signatures: the schema checks shapes)."""
    return cbor2.dumps([bytes(32), [body, 5, 1800000000], bytes(448), [bytes(32), 0, 0, bytes(64)], bytes(32)])


@pytest.mark.parametrize("body_size, accepted", [(89, False), (90, True), (2000, True), (2001, False)])
def test_message_schema_bounds_the_body_at_90_to_2000_bytes(body_size, accepted):
    """docs/protocol/message.md 5.1: 90..2000 (the reference's own sig.cddl still says 360, which is stale)."""
    assert schema(SIG).accepts("message", _unsigned_message(bytes(body_size))) is accepted


@pytest.mark.parametrize("name, hex_bytes", [
    ("3-byte id and body (pallas structural)", "85430102038343040506070843090a0b84430c0d0e0f10411143121314"),
    ("legacy layout (pallas structural)", "84844301020343040506070843090a0b84430c0d0e0f10411143121314"),
])
def test_message_schema_rejects_malformed_messages(name, hex_bytes):
    with pytest.raises(CddlViolation):
        schema(SIG).message_rule(bytes.fromhex(hex_bytes))


@pytest.mark.parametrize("cddl, hex_bytes", [
    (N2C_FILE, "8202820081198017"),  # a refusal listing a Cardano N2C version
    (N2C_FILE, "8301198017821aad964a09f4"),  # accepting a Cardano version on the DMQ socket
    (N2N_FILE, "83010e841aad964a09f401f4"),  # Cardano N2N v14 on a DMQ node-to-node link
    (N2N_FILE, "830102841aad964a09f402f4"),  # peerSharing 2
    (LS, "820281626e6f"),  # a bare-text reject reason (Pallas 0.34)
    (LS, "82028202626e6f"),  # a reason tag outside 0..3
    (KA, "82001a00010000"),  # a cookie beyond word16
    (V2, "8401f5001a00010000"),  # req beyond word16
])
def test_schemas_reject_what_dmq_does_not_send(cddl, hex_bytes):
    with pytest.raises(CddlViolation):
        schema(cddl).message_rule(bytes.fromhex(hex_bytes))


def test_legacy_message_inside_a_reply_is_rejected(vectors):
    legacy = bytes.fromhex(vectors["pallas_real_bytes_negative"]["old_format"])
    with pytest.raises(CddlViolation):
        schema(V2).message_rule(bytes.fromhex("82059f") + legacy + b"\xff")


@pytest.mark.parametrize("message, rule", [
    (MsgProposeVersions.from_table(cardano_node_to_client_versions(CARDANO_MAINNET_MAGIC)), "msgProposeVersions"),
    (MsgAcceptVersion(32791, NodeToClientVersionData(CARDANO_MAINNET_MAGIC).to_cbor()), "msgAcceptVersion"),
], ids=["propose V16..V23", "accept V23"])
def test_cardano_link_handshake_matches_its_schema(message, rule):
    """The link to cardano-node speaks the Cardano versions (the DMQ socket's schema refuses them: above)."""
    assert schema(CARDANO_FILE).message_rule(encode_message(message)) == rule


#: The upstream small-message vectors (``vectors.json`` -> ``wire_small``): schema and rule of each.
WIRE_SMALL_RULES = {
    "local_submission_accept": (LS, "msgAcceptMessage"),
    "local_submission_done": (LS, "msgDone"),
    "reject_invalid_InvalidSigId": (LS, "msgRejectMessage"),
    "reject_already_received": (LS, "msgRejectMessage"),
    "reject_expired": (LS, "msgRejectMessage"),
    "reject_other_custom_error": (LS, "msgRejectMessage"),
    "notification_request_nonblocking": (LN, "msgRequestMessages"),
    "notification_request_blocking": (LN, "msgRequestMessages"),
    "notification_reply_nonblocking_empty": (LN, "msgReplyMessagesNonBlocking"),
    "notification_client_done": (LN, "msgClientDone"),
    "n2c_handshake_propose_mainnet": (N2C_FILE, "msgProposeVersions"),
    "n2c_handshake_accept_mainnet": (N2C_FILE, "msgAcceptVersion"),
    "keep_alive_42": (KA, "msgKeepAlive"),
    "keep_alive_response_42": (KA, "msgKeepAliveResponse"),
}


def test_every_upstream_small_vector_has_a_schema(vectors):
    assert set(vectors["wire_small"]) - {"source"} == set(WIRE_SMALL_RULES)


@pytest.mark.parametrize("key", WIRE_SMALL_RULES)
def test_upstream_small_vectors_match_the_schemas(key, vectors):
    cddl, rule = WIRE_SMALL_RULES[key]
    assert schema(cddl).message_rule(bytes.fromhex(vectors["wire_small"][key])) == rule


def test_upstream_mithril_body_fits_the_message_schema(vectors):
    body = bytes.fromhex(vectors["mithril_body"]["body"])
    assert schema(SIG).message_rule(_unsigned_message(body)) == "message"
