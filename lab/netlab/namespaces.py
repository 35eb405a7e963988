"""Network namespaces, veth pairs and the bridge joining them; and their complete removal.

Layout of a run (``<run>`` is ``dmqlab-<pid>-<token>``):

* ``<run>-br``: a namespace holding only the bridge ``br0`` and the bridge side ``p<i>`` of
  every node's veth pair. It has no address, no route and no other interface.
* ``<run>-n<i>``: node ``i``'s namespace, holding ``lo`` and ``eth0`` (the other side of the
  pair) with the node's address from :mod:`.addresses`, and only the on-link route that
  address implies: no default route.

Why no packet can leave: every interface a run makes is created directly inside its own
namespaces (never in the root namespace), and none of them is joined to a physical device or
to the root namespace. A packet from a node can only go to ``br0`` and from there to another
node's ``eth0``; nothing in the bridge namespace routes (it has no address, and a new
namespace starts with forwarding off). The root namespace's interfaces, routes, forwarding
and firewall are not touched; the one kernel-wide setting a large run changes, the neighbour
table's size limits (:class:`NeighbourTable`), is put back at the end.

Everything a run made goes when its namespaces are deleted (deleting a namespace deletes its
interfaces, and a veth pair goes with either side). :meth:`Lab.teardown` ends any process left
in them first. :func:`remove_leftovers` does the same for the namespaces of an earlier run
whose process no longer exists (it crashed or was killed with SIGKILL), found by the prefix
and the process id in the name; the namespaces of a live run are left alone.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import trio

from dmq.errors import OperatorError

from .addresses import PREFIX_LENGTH, node_address

__all__ = ["PREFIX", "NamespacesUnavailable", "NamespaceError", "Lab", "check_available", "remove_leftovers",
           "existing_namespaces", "NeighbourTable"]

PREFIX = "dmqlab-"
BRIDGE = "br0"
NODE_INTERFACE = "eth0"
_NETNS_DIRECTORY = Path("/var/run/netns")
_CLONE_NEWNET = 0x40000000
_NEIGHBOUR_SETTINGS = Path("/proc/sys/net/ipv4/neigh/default")


class NamespacesUnavailable(OperatorError):
    """This process cannot make network namespaces (not root, no ``ip``, or the kernel refuses)."""


class NamespaceError(OperatorError):
    """An ``ip`` or ``tc`` command failed while building or changing the lab."""


def _ip(*arguments: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(arguments), input=stdin, capture_output=True, text=True)
    if check and result.returncode != 0:
        command = " ".join(arguments)
        raise NamespaceError(f"{command} failed: {' '.join((result.stderr or result.stdout).split())}")
    return result


def existing_namespaces() -> list[str]:
    """The names of every network namespace ``ip netns`` knows."""
    listed = _ip("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def _unavailable(reason: str) -> NamespacesUnavailable:
    return NamespacesUnavailable(f"network namespaces are unavailable ({reason}); "
                                 "`dmq devnet` runs the same nodes on loopback without privileges")


def check_available() -> None:
    """Raise :class:`NamespacesUnavailable` (one line) unless a namespace can be made and removed."""
    if shutil.which("ip") is None:
        raise _unavailable("the `ip` command of iproute2 is not installed")
    if os.geteuid() != 0:
        raise _unavailable("they need root")
    probe = f"{PREFIX}{os.getpid()}-probe"
    made = _ip("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        raise _unavailable(f"`ip netns add` failed: {' '.join(made.stderr.split())}")
    _ip("ip", "netns", "del", probe, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_and_delete(namespace: str) -> None:
    pids = _ip("ip", "netns", "pids", namespace, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    _ip("ip", "netns", "del", namespace, check=False)


def remove_leftovers() -> list[str]:
    """Delete the namespaces of earlier runs whose process is gone; returns their names."""
    removed = []
    for name in existing_namespaces():
        if not name.startswith(PREFIX):
            continue
        owner = name[len(PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            _kill_and_delete(name)
            removed.append(name)
    return removed


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _socket_in(namespace: str) -> socket.socket:
    """A TCP socket of ``namespace``'s network stack, made from this thread.

    A network namespace is a per-thread attribute, and a socket belongs for life to the
    namespace it was made in: the thread enters the namespace, makes the socket and comes back,
    so the run itself never leaves the root namespace.
    """
    with open(_NETNS_DIRECTORY / namespace, "rb") as target, open("/proc/thread-self/ns/net", "rb") as home:
        _setns(target.fileno())
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            _setns(home.fileno())


@dataclass
class NeighbourTable:
    """The kernel's IPv4 neighbour (ARP) table limits, raised for the run and put back after.

    The table is one for the whole kernel, shared by every namespace, and its limits can be set
    in the root namespace only (new namespaces do not even show them). Each node learns the
    address of every peer it talks to, so a run of N nodes holds up to N x N entries: 100 nodes
    pass the default hard limit (``gc_thresh3``, 1024) many times over, and past it the kernel
    refuses new neighbours ("neighbour table overflow") and connections time out. Only limits
    below what the run needs are raised; :meth:`restore` writes back exactly what was there.
    """

    #: setting -> (the value found, the value written)
    changed: dict[str, tuple[int, int]] = field(default_factory=dict)

    def ensure(self, entries: int) -> None:
        wanted = {"gc_thresh2": entries, "gc_thresh3": 2 * entries}
        for name, value in wanted.items():
            path = _NEIGHBOUR_SETTINGS / name
            try:
                current = int(path.read_text())
                if current < value:
                    path.write_text(f"{value}\n")
                    self.changed[name] = (self.changed.get(name, (current, 0))[0], value)
            except (OSError, ValueError):
                continue

    def restore(self) -> None:
        """Put back each limit this run raised, unless something else (another run) changed it since."""
        for name, (found, written) in reversed(list(self.changed.items())):
            path = _NEIGHBOUR_SETTINGS / name
            try:
                if int(path.read_text()) == written:
                    path.write_text(f"{found}\n")
            except (OSError, ValueError):
                pass
        self.changed.clear()


@dataclass
class Lab:
    """One run's namespaces: :meth:`build` makes them, :meth:`teardown` removes every one."""

    nodes: int
    run_id: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}")
    made: list[str] = field(default_factory=list)

    @property
    def bridge_namespace(self) -> str:
        return f"{self.run_id}-br"

    def namespace(self, index: int) -> str:
        return f"{self.run_id}-n{index}"

    @staticmethod
    def port(index: int) -> str:
        """The bridge-side end of node ``index``'s veth pair (in the bridge namespace)."""
        return f"p{index}"

    def build(self) -> None:
        """Namespaces, bridge, veth pairs, addresses; partly built is torn down by the caller."""
        names = [self.bridge_namespace] + [self.namespace(i) for i in range(self.nodes)]
        for name in names:
            _ip("ip", "netns", "add", name)
            self.made.append(name)
        # Both ends are created inside their namespaces: no interface ever appears in the root one.
        _ip("ip", "-batch", "-", stdin="".join(
            f"link add {self.port(i)} netns {self.bridge_namespace} type veth peer name {NODE_INTERFACE} "
            f"netns {self.namespace(i)}\n" for i in range(self.nodes)))
        bridge_commands = [f"link add {BRIDGE} type bridge", f"link set {BRIDGE} up"]
        for i in range(self.nodes):
            bridge_commands += [f"link set {self.port(i)} master {BRIDGE}", f"link set {self.port(i)} up"]
        _ip("ip", "-n", self.bridge_namespace, "-batch", "-", stdin="\n".join(bridge_commands) + "\n")
        for i in range(self.nodes):
            _ip("ip", "-n", self.namespace(i), "-batch", "-", stdin=(
                "link set lo up\n"
                f"addr add {node_address(i)}/{PREFIX_LENGTH} dev {NODE_INTERFACE}\n"
                f"link set {NODE_INTERFACE} up\n"))

    def exec_prefix(self, index: int, hostname: str | None = None) -> list[str]:
        """What runs a command in node ``index``'s namespace (``ip netns exec`` execs it: same pid).

        With ``hostname``, the command also gets a UTS namespace of its own with that host name,
        as a process on its own host would: a node names itself in its log and its traffic
        recording by host name (and port, the same for every node here). ``unshare`` and the
        shell exec too, so the pid is still the command's.
        """
        prefix = ["ip", "netns", "exec", self.namespace(index)]
        if hostname is not None:
            prefix += ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname]
        return prefix

    def set_connected(self, index: int, connected: bool) -> None:
        """Take node ``index``'s bridge port down (cut off from every other node) or up again."""
        _ip("ip", "-n", self.bridge_namespace, "link", "set", self.port(index), "up" if connected else "down")

    def limit_rate(self, index: int, mbit: float) -> None:
        """A token bucket on the node's sending side: ``mbit`` Mbit/s, 32 kbit burst."""
        _ip("tc", "-n", self.namespace(index), "qdisc", "replace", "dev", NODE_INTERFACE, "root", "tbf",
            "rate", f"{mbit:g}mbit", "burst", "32kbit", "latency", "400ms")

    def established(self, index: int) -> int:
        """Established TCP connections in node ``index``'s namespace (to or from other nodes)."""
        listed = _ip("ss", "-N", self.namespace(index), "-H", "-t", "state", "established", check=False).stdout
        return sum(1 for line in listed.splitlines() if line.strip())

    async def open_tcp_stream(self, index: int, port: int, host: str = "127.0.0.1") -> trio.SocketStream:
        """A TCP connection made inside namespace ``index`` (to a node's local metrics port, say)."""
        made = await trio.to_thread.run_sync(_socket_in, self.namespace(index))
        sock = trio.socket.from_stdlib_socket(made)
        try:
            await sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        return trio.SocketStream(sock)

    def teardown(self) -> list[str]:
        """Remove every namespace of this run (ending processes left in them); the names left over."""
        for name in reversed(self.made):
            _kill_and_delete(name)
        present = set(existing_namespaces())
        left = [name for name in present if name.startswith(f"{self.run_id}-")]
        for name in left:
            _kill_and_delete(name)
        self.made.clear()
        return sorted(name for name in existing_namespaces() if name.startswith(f"{self.run_id}-"))
