"""The node already running on a local socket: who it is, and whether a port is its own.

``dmq-node --check --running`` checks the configuration of a node that is running (the usual
moment: an edited file, before ``systemctl restart``). Its local socket and its ports are then
busy, held by the node the restart will stop, and must not count as problems; a port held by
any other process still must. Two facts decide, neither guessed from what merely answers:

* the socket is the node's when it answers a node-to-client handshake version query, and
  the kernel names the process listening on it (``SO_PEERCRED`` of the connection);
* a port is the node's when that same process holds the socket listening on it
  (:func:`dmq.ports.process_holds`).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from dmq.errors import OperatorError
from dmq.ports import listening_inodes, process_holds

__all__ = ["RunningNode", "find_running_node", "QUERY_TIMEOUT"]

#: Seconds a running node has to answer the version query (it answers in milliseconds).
QUERY_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class RunningNode:
    """A DMQ node answering on ``socket``, run by process ``pid``."""

    socket: Path
    pid: int
    versions: tuple[int, ...]

    def holds_port(self, port: int) -> bool:
        """Whether this node's process listens on TCP ``port``; ``PermissionError`` when this user may not tell."""
        return process_holds(self.pid, listening_inodes(port))


def _peer_pid(sock: socket.socket) -> int:
    """The process id of the listening end of a connected Unix socket (Linux ``SO_PEERCRED``)."""
    if not hasattr(socket, "SO_PEERCRED"):
        raise OperatorError("--running needs Linux: this system cannot name the process behind a Unix socket")
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, _uid, _gid = struct.unpack("3i", credentials)
    return pid


async def _query(path: Path, magic: int) -> RunningNode:
    import trio

    from handshake.driver import run_client
    from handshake.errors import HandshakeError, HandshakeQueryResult
    from handshake.links import DMQ_NODE_TO_CLIENT, dmq_node_to_client_versions
    from ouroboros_mux.bearer import connect_unix
    from ouroboros_mux.errors import ConnectFailed, MuxError

    where = f"--running: local socket {path}"
    try:
        with trio.fail_after(QUERY_TIMEOUT):
            bearer = await connect_unix(path)
            pid = _peer_pid(bearer.stream.socket)
            await run_client(bearer, dmq_node_to_client_versions(magic, query=True), DMQ_NODE_TO_CLIENT)
            await bearer.aclose()  # accepted a query proposal, which no DMQ node does
    except HandshakeQueryResult as answer:
        return RunningNode(path, pid, tuple(sorted(answer.versions)))
    except ConnectFailed as exc:
        raise OperatorError(f"{where}: no node is running on it ({exc.reason.strerror or exc.reason}); "
                            "check a stopped node without --running") from None
    except (HandshakeError, MuxError, OSError, trio.TooSlowError) as exc:
        raise OperatorError(f"{where}: the process listening on it does not answer as a DMQ node "
                            f"({exc or type(exc).__name__})") from None
    raise OperatorError(f"{where}: the process listening on it accepted a version query as a connection; "
                        "it is not a DMQ node")


def find_running_node(path: Path, magic: int) -> RunningNode:
    """The DMQ node answering on ``path``, or one line saying why there is none."""
    import trio

    return trio.run(_query, Path(path), magic)
