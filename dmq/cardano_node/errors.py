"""Why the link to cardano-node could not deliver a stake snapshot.

None of these stops the node: the link traces the error, keeps the last stake map and
tries again after a back-off. They are typed so that the trace and the status say exactly
what went wrong (which socket, which era), and so tests can tell the cases apart. The
protocol-level failures keep their own types: ``AcquireFailed`` (the node refused to
acquire the volatile tip) and ``EraMismatch`` (a hard fork between two queries), both from
:mod:`miniprotocols.local_state_query`.
"""

from __future__ import annotations

import os

from miniprotocols.local_state_query import era_name

__all__ = ["CardanoLinkError", "CardanoNodeUnreachable", "UnsupportedEra", "MalformedResult"]


class CardanoLinkError(Exception):
    """The cardano-node link failed in a way specific to it (not a mux or protocol error)."""


class CardanoNodeUnreachable(CardanoLinkError):
    """No connection could be opened to cardano-node's socket."""

    def __init__(self, path: str | os.PathLike[str], reason: OSError) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        if isinstance(reason, FileNotFoundError):
            why = "the socket file does not exist (is cardano-node running, and is CardanoNodeSocket its socket?)"
        elif isinstance(reason, ConnectionRefusedError):
            why = "connection refused (the file is there but cardano-node is not listening on it)"
        elif isinstance(reason, PermissionError):
            why = "permission denied (run the DMQ node as a user allowed to open cardano-node's socket)"
        else:
            why = reason.strerror or str(reason)
        super().__init__(f"cardano-node socket {self.path}: {why}")


class UnsupportedEra(CardanoLinkError):
    """The ledger is in an era without stake pools (Byron), as the reference refuses too."""

    def __init__(self, era: int) -> None:
        super().__init__(f"cardano-node's ledger is in era {era_name(era)} ({era}), "
                         f"which has no stake pools; waiting for the chain to reach Shelley or later")
        self.era = era


class MalformedResult(CardanoLinkError):
    """cardano-node answered a query with bytes that do not have the documented shape."""

    def __init__(self, query: str, detail: str, raw: bytes) -> None:
        shown = raw[:48].hex() + ("..." if len(raw) > 48 else "")
        super().__init__(f"malformed {query} result from cardano-node: {detail} (bytes {shown})")
        self.query = query
        self.detail = detail
        self.raw = raw
