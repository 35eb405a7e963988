"""The reference node's own fields for each event it also traces, so its log queries find ours.

The reference (IntersectMBO/dmq-node, on ouroboros-network and trace-dispatcher) writes each
trace's ``forMachine`` object as the log line's ``data``: ``{"kind":"TraceSubmitAccept",
"sigid":…}`` for a local submission, ``{"type":"InvalidSignature","sigid":…,"reason":…}`` for a
rejected signature, ``{"kind":"ConnectionHandler","connectionId":…,"connectionHandler":{…}}``
for a handshake. A ``jq`` filter or a log-based alert written against those lines must select
the same lines of this node, so for every namespace that is also the reference's, ``data``
starts with the reference's fields, with its names and JSON kinds (strings where it shows a
value, objects where it nests, a hash as lowercase hex), and this node's own fields follow.

Where a reference field takes a name this node also uses, the reference's value keeps the name
and this node's value moves (:attr:`ReferenceFields.renames`); the event class, which this node
wrote as ``kind``, is always in ``event``. ``docs/operations.md`` has the table of namespaces,
the reference's event and fields, and tests/e2e/test_reference_log_fields.py checks a running
node's lines against that table.

Fields the reference fills from state this node does not keep in the event (the local end of a
connection, the whole agreed version data, the signatures' bodies) are left out rather than
made up: a query on them finds nothing instead of something false.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReferenceFields", "REFERENCE_FIELDS", "address_json", "reference_fields_for"]


@dataclass(frozen=True, slots=True)
class ReferenceFields:
    """The reference's ``data`` fields for one namespace.

    ``keys`` are the field names in the reference's order; ``values(event)`` gives their values
    (JSON-ready). ``renames`` says where this node's own fields of a taken name go.
    """

    event: str                                  # the reference's constructor, for the docs' table
    keys: tuple[str, ...]
    values: Callable[[Any], tuple[Any, ...]]
    #: Own field -> the name it is written under; None: a reference field carries it already.
    renames: Mapping[str, str | None] = field(default_factory=dict)


def address_json(label: str) -> dict[str, str] | str:
    """A peer label as ouroboros-network's ``ToJSON RemoteAddress`` writes it.

    ``host:port`` (``[v6]:port``) gives ``{"address": host, "port": "port"}`` (the port as text,
    as the reference shows it); a label without a port (a Unix socket client) stays a string,
    as its ``LocalAddress`` does.
    """
    host, sep, port = label.rpartition(":")
    if not sep or not port.isdigit():
        return label
    return {"address": host.removeprefix("[").removesuffix("]"), "port": port}


def _hex(value: bytes | None) -> str | None:
    return None if value is None else bytes(value).hex()


def _validation_reason(reason: str) -> Any:
    """dmq-node's ``ToJSON SigValidationError``: two constructors as bare strings, others an object."""
    name = reason.split(" ", 1)[0]
    if name == "SigDuplicate":
        return "duplicate"
    if name == "SigExpired":
        return "expired"
    if name == "SigResultOther":
        return {"type": "other", "reason": reason.partition(" ")[2]}
    return {"type": "invalid", "reason": reason}


def _connection_id(event: Any) -> dict[str, Any]:
    return {"remoteAddress": address_json(event.peer)}


def _provenance(event: Any) -> str:
    return "Inbound" if event.link in ("n2n-in", "n2c") else "Outbound"


def _handshake_success(event: Any) -> tuple[Any, ...]:
    return ("ConnectionHandler", _connection_id(event),
            {"kind": "HandshakeSuccess", "versionNumber": event.version})


def _handshake_query(event: Any) -> tuple[Any, ...]:
    return "ConnectionHandler", _connection_id(event), {"kind": "HandshakeQuery"}


def _handshake_error(event: Any) -> tuple[Any, ...]:
    """ouroboros-network's ``ToJSON HandshakeException``: the protocol error's text under a ``kind``."""
    reason = {"kind": "HandshakeProtocolError", "reason": (event.error or "").removeprefix("handshake: ")}
    return "ConnectionHandler", _connection_id(event), {"kind": "HandshakeServerError", "reason": reason}


def _handler_error(event: Any) -> tuple[Any, ...]:
    return "ConnectionHandler", _connection_id(event), {"kind": "Error", "reason": event.error or ""}


_HANDLER = ("kind", "connectionId", "connectionHandler")


def _per_link(suffix: str, reference: ReferenceFields) -> dict[str, ReferenceFields]:
    """The same ouroboros-network trace under the node-to-node and the local connection manager."""
    return {f"Net.ConnectionManager.{side}.{suffix}": reference for side in ("Remote", "Local")}


#: Namespace -> the reference's fields there. Sources (IntersectMBO/dmq-node, ouroboros-network):
#: ``DMQ/NodeToClient/LocalMsgSubmission.hs`` (``TraceSubmitAccept``, ``TraceSubmitFailure``),
#: ``DMQ/Protocol/SigSubmission/Type.hs`` (``SigValidationTrace``, ``ToJSON SigValidationError``),
#: ``DMQ/NodeToClient/LocalMsgNotification.hs`` (``TraceMsgNotificationServerReply``),
#: ``DMQ/SigSubmissionV2/Outbound.hs`` via ``DMQ/Tracer.hs``, ``DMQ/NodeToClient/
#: LocalStateQueryClient/Types.hs``; ouroboros-network's ``tracing/Ouroboros/Network/Tracing/``
#: ``ConnectionManager.hs``, ``Server.hs``, ``TxSubmission/Inbound.hs``, dmq-node's ``DMQ/Tracer.hs`` (``Startup.*``),
#: ``PeerSelection/Governor/TracePeerSelection.hs`` and ``orphan-instances`` (addresses).
REFERENCE_FIELDS: dict[str, ReferenceFields] = {
    "Net.Local.SigSubmission.Server.TraceSubmitAccept": ReferenceFields(
        "TraceSubmitAccept", ("kind", "sigid"), lambda e: ("TraceSubmitAccept", _hex(e.message_id))),
    "Net.Local.SigSubmission.Server.TraceSubmitFailure": ReferenceFields(
        "TraceSubmitFailure", ("kind", "sigid", "error"),
        lambda e: ("TraceSubmitFailure", _hex(e.message_id), e.reason)),
    "Net.Sig.Validation.SigValidation": ReferenceFields(
        "InvalidSignature", ("type", "sigid", "reason"),
        lambda e: ("InvalidSignature", _hex(e.message_id), _validation_reason(e.reason)),
        renames={"reason": "error"}),
    "Net.SigSubmission.Inbound.AddedToMempool": ReferenceFields(
        "TraceTxInboundAddedToMempool", ("kind", "count", "dt"),
        lambda e: ("TraceTxInboundAddedToMempool", 1, e.verify_ns / 1e9)),
    "Net.Local.MsgNotification.Server.TraceMsgNotificationServerReply": ReferenceFields(
        "TraceMsgNotificationServerReply", ("type", "hasMore", "msgids"),
        lambda e: ("Reply", e.has_more, [_hex(i) for i in e.message_ids]),
        renames={"has_more": None, "message_ids": None}),
    "Net.SigSubmission.V2.Outbound.TraceSigSubmissionOutboundSendMsgReplySigs": ReferenceFields(
        "TraceSigSubmissionOutboundSendMsgReplySigs", ("kind",),
        lambda e: ("TraceSigSubmissionOutboundSendMsgReplySigs",)),
    **_per_link("ConnectionHandler.HandshakeSuccess", ReferenceFields(
        "TrConnectionHandler TrHandshakeSuccess", _HANDLER, _handshake_success)),
    **_per_link("ConnectionHandler.HandshakeQuery", ReferenceFields(
        "TrConnectionHandler TrHandshakeQuery", _HANDLER, _handshake_query)),
    **_per_link("ConnectionHandler.HandshakeServerError", ReferenceFields(
        "TrConnectionHandler TrHandshakeServerError", _HANDLER, _handshake_error)),
    **_per_link("ConnectionHandler.Error", ReferenceFields(
        "TrConnectionHandler TrConnectionHandlerError", _HANDLER, _handler_error)),
    **_per_link("TerminatedConnection", ReferenceFields(
        "TrTerminatedConnection", ("kind", "provenance", "remoteAddress"),
        lambda e: ("TerminatedConnection", _provenance(e), address_json(e.peer)))),
    "Net.ConnectionManager.Remote.ConnectError": ReferenceFields(
        "TrConnectError", ("kind", "remoteAddress", "reason"),
        lambda e: ("ConnectError", address_json(e.peer), e.error)),
    "Net.Server.Remote.Started": ReferenceFields(
        "TrServerStarted", ("kind", "addresses"), lambda e: ("AcceptPolicyTrace", [address_json(e.endpoint)])),
    "Net.Server.Local.Started": ReferenceFields(
        "TrServerStarted", ("kind", "addresses"), lambda e: ("AcceptPolicyTrace", [e.endpoint])),
    "Net.Server.Remote.AcceptPolicy.ConnectionHardLimit": ReferenceFields(
        "ServerTraceAcceptConnectionHardLimit", ("kind", "softLimit"),
        lambda e: ("ServerTraceAcceptConnectionHardLimit", str(e.hard_limit))),
    "Net.Server.Remote.AcceptPolicy.ConnectionRateLimiting": ReferenceFields(
        "ServerTraceAcceptConnectionRateLimiting", ("kind", "delay", "numberOfConnection"),
        lambda e: ("ServerTraceAcceptConnectionRateLimiting", f"{e.delay:g}s", str(e.connections)),
        renames={"delay": "delaySeconds"}),
    "Net.PeerShare.Protocol.PeerShareResult": ReferenceFields(
        "MsgSharePeers", ("kind",), lambda e: ("MsgSharePeers",)),
    "Net.PeerSelection.Selection.ForgetColdPeers": ReferenceFields(
        "TraceForgetColdPeers", ("kind", "selectedPeers"),
        lambda e: ("ForgetColdPeers", [address_json(e.peer)])),
    "Net.Local.LocalStateQuery.NextEpoch": ReferenceFields(
        "NextEpoch", ("kind",), lambda e: ("NextEpoch",)),
    "Startup.Configuration": ReferenceFields(
        "DMQConfiguration", ("kind", "config"), lambda e: ("Configuration", e.config),
        renames={"config": None}),
    "Startup.Topology": ReferenceFields(
        "DMQTopology", ("kind",), lambda e: ("Topology",)),
}


def reference_fields_for(namespace: str) -> ReferenceFields | None:
    return REFERENCE_FIELDS.get(namespace)
