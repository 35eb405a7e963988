"""TCP ports: choosing free ones for the processes a tool starts, and asking who holds one.

Choosing free ports lives in ``dmq`` so that ``lab`` (the devnet) and ``spark`` (the
analysis cluster), which may not import each other, share one way of doing it.

Asking about a port is for ``dmq-node --check``: whether the node could listen on an address
(the same bind the node does, undone at once), and, for ``--check --running``, whether the
process holding a port is the running node itself, read from the kernel's socket tables
(``/proc/net/tcp``, ``/proc/<pid>/fd``) rather than guessed from what answers on the port.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

__all__ = ["free_ports", "host_port", "listen_refusal", "busy_port_problem", "listening_inodes", "process_holds"]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports free right now (all held open together while chosen, so distinct).

    A port is free only until someone else binds it; callers hand it to a process that binds at once.
    """
    held = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(probe)
            probe.bind((host, 0))
        return [probe.getsockname()[1] for probe in held]
    finally:
        for probe in held:
            probe.close()


def listen_refusal(host: str, port: int) -> OSError | None:
    """Why the node could not listen on ``host:port`` right now, or ``None`` if it could.

    Binds every address ``host`` resolves to as trio's listeners do (``SO_REUSEADDR``, IPv6
    sockets IPv6-only), so a port left in TIME_WAIT by a stopped node passes and a port another
    process listens on does not; each probe is closed before returning. Port 0 always passes.
    """
    if port == 0:
        return None
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return OSError(errno.EADDRNOTAVAIL, f"cannot resolve {host}: {exc.strerror}")
    for family, kind, proto, _, address in addresses:
        probe = socket.socket(family, kind, proto)
        try:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            probe.bind(address)
            probe.listen(1)
        except OSError as exc:
            return exc
        finally:
            probe.close()
    return None


def host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (``[::]:3141``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def busy_port_problem(what: str, host: str, port: int, error: OSError) -> str:
    """One line for a port the node cannot listen on: which one, what it is for, what to do."""
    if error.errno == errno.EADDRINUSE:
        return (f"{what} {host_port(host, port)}: already in use by another process; stop that process "
                f"or choose another port")
    return f"{what} {host_port(host, port)}: cannot listen: {error.strerror or error}"


def listening_inodes(port: int, proc: Path = Path("/proc")) -> set[int]:
    """The socket inodes listening on TCP ``port`` (any address, IPv4 or IPv6) in this network namespace."""
    found: set[int] = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = (proc / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            if len(fields) < 10 or fields[3] != "0A":  # 0A: TCP_LISTEN
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found


def process_holds(pid: int, inodes: set[int], proc: Path = Path("/proc")) -> bool:
    """Whether process ``pid`` has one of the socket ``inodes`` open.

    Raises ``PermissionError`` when this user may not look at the process's descriptors (it
    belongs to another user and this one is not root).
    """
    fd_dir = proc / str(pid) / "fd"
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / name)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            return True
    return False
