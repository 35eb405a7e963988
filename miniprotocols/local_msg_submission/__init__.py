"""Local message submission, mini-protocol 14 (docs/protocol/local-protocols.md 7)."""

from .client import LocalMsgSubmissionClient
from .codec import LocalSubmissionCodec, decode_reason, encode_reason
from .server import Submit, serve
from .spec import LOCAL_MSG_SUBMISSION
from .types import (
    ACCEPTED,
    PROTOCOL_NUM,
    Accepted,
    InvalidMessageBytes,
    LocalSubmissionState,
    MsgAcceptMessage,
    MsgDone,
    MsgRejectMessage,
    MsgSubmitMessage,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
    RejectOther,
    RejectReason,
    RejectText,
    SubmitResult,
)

__all__ = [
    "PROTOCOL_NUM",
    "LOCAL_MSG_SUBMISSION",
    "LocalSubmissionState",
    "MsgSubmitMessage",
    "MsgAcceptMessage",
    "MsgRejectMessage",
    "MsgDone",
    "RejectInvalid",
    "RejectAlreadyReceived",
    "RejectExpired",
    "RejectOther",
    "RejectText",
    "RejectReason",
    "Accepted",
    "ACCEPTED",
    "SubmitResult",
    "InvalidMessageBytes",
    "LocalSubmissionCodec",
    "encode_reason",
    "decode_reason",
    "LocalMsgSubmissionClient",
    "Submit",
    "serve",
]
