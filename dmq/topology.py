"""The topology file: which peers the node keeps, in cardano-node's own format (docs/protocol/configuration.md section 11.3).

Operators already write cardano-node topology files, and the reference DMQ node reads the
same syntax (``ouroboros-network``'s ``networkTopologyFromJSON``), so this module accepts the
same documents with the same defaults: ``valency`` (or ``hotValency``) is the hot valency,
``warmValency`` defaults to it, ``advertise``/``behindFirewall``/``trustable`` default to false,
``diffusionMode`` to ``InitiatorAndResponder``, and an access point without ``port`` is a
CIP-0155 SRV domain. ``bootstrapPeers`` and ``peerSnapshotFile`` are not supported by the
reference; a file that leaves them empty (``[]``, ``null`` or ``""``) is accepted so that
cardano-node files keep working, a file that relies on them is refused rather than silently
ignored. Unlike configuration, the topology file must exist.
"""

from __future__ import annotations

import ipaddress
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from dmq.config import DiffusionMode
from dmq.errors import OperatorError
from dmq.operator_json import OperatorJsonError, json_shown, read_operator_json

__all__ = [
    "TopologyError",
    "AccessPoint",
    "LocalRootGroup",
    "PublicRootGroup",
    "Topology",
    "parse_topology",
    "load_topology",
]

_UNSUPPORTED_KEYS = ("bootstrapPeers", "peerSnapshotFile")


class TopologyError(OperatorError):
    """The topology file is missing, unreadable, or not a valid topology."""


@dataclass(frozen=True, slots=True)
class AccessPoint:
    """A peer to reach: an IP address or a DNS name with a port, or an SRV domain without one."""

    address: str
    port: int | None = None

    @property
    def is_srv(self) -> bool:
        """No port: ``address`` is a CIP-0155 SRV domain resolved to ``(host, port)`` pairs."""
        return self.port is None

    @property
    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        """The address as an IP when it is one (and a port is given), else ``None`` (a name)."""
        if self.port is None:
            return None
        try:
            return ipaddress.ip_address(self.address)
        except ValueError:
            return None

    @property
    def domain(self) -> str | None:
        """The fully qualified DNS name (trailing dot, as the reference stores it) for names."""
        if self.ip is not None:
            return None
        return self.address if self.address.endswith(".") else self.address + "."


@dataclass(frozen=True, slots=True)
class LocalRootGroup:
    """Peers the node always tries to keep, ``hot_valency`` of them active."""

    access_points: tuple[AccessPoint, ...]
    advertise: bool = False
    hot_valency: int = 1
    warm_valency: int = 1
    trustable: bool = False
    behind_firewall: bool = False
    diffusion_mode: DiffusionMode = DiffusionMode.INITIATOR_AND_RESPONDER
    #: cardano-node's per-group ``extraFlags``, kept as compact JSON (unused by the reference).
    extra_flags_json: str = "{}"


@dataclass(frozen=True, slots=True)
class PublicRootGroup:
    """Peers the node may pick from when it needs more; ``advertise`` allows peer sharing them."""

    access_points: tuple[AccessPoint, ...]
    advertise: bool = False


@dataclass(frozen=True, slots=True)
class Topology:
    local_roots: tuple[LocalRootGroup, ...] = ()
    public_roots: tuple[PublicRootGroup, ...] = ()
    #: ``None``: never use ledger peers; ``0``: always; ``n > 0``: from slot ``n`` on.
    use_ledger_after_slot: int | None = None

    def ledger_peers_enabled_at(self, slot: int) -> bool:
        """Whether ledger peers are used when the chain is at ``slot`` (``slot >= n``, as the reference)."""
        if self.use_ledger_after_slot is None:
            return False
        return slot >= self.use_ledger_after_slot

    @property
    def all_access_points(self) -> tuple[AccessPoint, ...]:
        groups = (*self.local_roots, *self.public_roots)
        return tuple(ap for group in groups for ap in group.access_points)

    def to_json(self) -> dict[str, Any]:
        """The topology in the topology file's shape, every default written out (the start-up trace)."""
        def points(group: LocalRootGroup | PublicRootGroup) -> list[dict[str, Any]]:
            return [{"address": ap.address} if ap.port is None else {"address": ap.address, "port": ap.port}
                    for ap in group.access_points]

        return {
            "localRoots": [{"accessPoints": points(g), "advertise": g.advertise, "hotValency": g.hot_valency,
                            "warmValency": g.warm_valency, "trustable": g.trustable,
                            "behindFirewall": g.behind_firewall, "diffusionMode": g.diffusion_mode.value}
                           for g in self.local_roots],
            "publicRoots": [{"accessPoints": points(g), "advertise": g.advertise} for g in self.public_roots],
            "useLedgerAfterSlot": -1 if self.use_ledger_after_slot is None else self.use_ledger_after_slot,
        }


# ---------------------------------------------------------------------------------------------


class _Bad(ValueError):
    """A value at ``where`` does not have the expected form (the loader adds the file name)."""

    def __init__(self, where: str, expected: str, got: Any) -> None:
        self.where, self.expected, self.got = where, expected, got
        super().__init__(f"{where} must be {expected}, got {_shown(got)}")


def _shown(value: Any) -> str:
    return "nothing" if isinstance(value, _Absent) else json_shown(value)


class _Absent:
    """Marks a required key that is missing (so the message says "got nothing")."""


_ABSENT = _Absent()


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(where, "an object", value)
    return value


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(where, "an array", value)
    return value


def _optional(obj: Mapping[str, Any], key: str, default: Any) -> Any:
    """Aeson's ``.:?``: an absent key and ``null`` both mean "use the default"."""
    value = obj.get(key)
    return default if value is None else value


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _Bad(where, "true or false", value)
    return value


def _valency(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Bad(where, "a non-negative integer", value)
    return value


def _access_point(value: Any, where: str) -> AccessPoint:
    obj = _object(value, where)
    address = obj.get("address", _ABSENT)
    if not isinstance(address, str) or not address:
        raise _Bad(f"{where}.address", "a non-empty IP address or DNS name", address)
    port = obj.get("port")
    if port is None:
        return AccessPoint(address)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise _Bad(f"{where}.port", "an integer 0..65535 (or absent for an SRV domain)", port)
    point = AccessPoint(address, port)
    if point.ip is not None and point.ip.is_unspecified:
        raise _Bad(f"{where}.address", "a destination address (not 0.0.0.0 or ::)", address)
    return point


def _access_points(obj: Mapping[str, Any], where: str) -> tuple[AccessPoint, ...]:
    items = _array(obj.get("accessPoints", _ABSENT), f"{where}.accessPoints")
    return tuple(_access_point(item, f"{where}.accessPoints[{i}]") for i, item in enumerate(items))


def _local_root(value: Any, where: str) -> LocalRootGroup:
    obj = _object(value, where)
    valency_key = "hotValency" if obj.get("valency") is None and obj.get("hotValency") is not None else "valency"
    hot = _valency(obj.get(valency_key, _ABSENT), f"{where}.{valency_key}")
    warm = _valency(_optional(obj, "warmValency", hot), f"{where}.warmValency")
    mode = _optional(obj, "diffusionMode", DiffusionMode.INITIATOR_AND_RESPONDER.value)
    try:
        diffusion_mode = DiffusionMode(mode)
    except ValueError:
        raise _Bad(f"{where}.diffusionMode", '"InitiatorOnly" or "InitiatorAndResponder"', mode) from None
    extra_flags = _object(_optional(obj, "extraFlags", {}), f"{where}.extraFlags")
    return LocalRootGroup(
        access_points=_access_points(obj, where),
        advertise=_boolean(_optional(obj, "advertise", False), f"{where}.advertise"),
        hot_valency=hot,
        warm_valency=warm,
        trustable=_boolean(_optional(obj, "trustable", False), f"{where}.trustable"),
        behind_firewall=_boolean(_optional(obj, "behindFirewall", False), f"{where}.behindFirewall"),
        diffusion_mode=diffusion_mode,
        extra_flags_json=json.dumps(extra_flags, separators=(",", ":")),
    )


def _public_root(value: Any, where: str) -> PublicRootGroup:
    obj = _object(value, where)
    return PublicRootGroup(
        access_points=_access_points(obj, where),
        advertise=_boolean(_optional(obj, "advertise", False), f"{where}.advertise"),
    )


def _use_ledger_after_slot(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad("useLedgerAfterSlot", "a slot number (> 0 after it, 0 always, < 0 never)", value)
    if value < 0:
        return None
    return math.floor(value)


def _refuse_unsupported(document: Mapping[str, Any]) -> None:
    used = [key for key in _UNSUPPORTED_KEYS if document.get(key) not in (None, [], "")]
    if used:
        names = " and ".join(f'"{key}"' for key in used)
        raise _Bad(
            names,
            "absent, null or empty (the DMQ node supports neither bootstrap peers nor peer snapshots;"
            " list peers in localRoots and publicRoots)",
            document[used[0]],
        )


def parse_topology(document: Any) -> Topology:
    """A topology from an already-decoded JSON document; ``ValueError`` on a wrong shape.

    :func:`load_topology` is the operator-facing entry point (it names the file in errors).
    """
    root = _object(document, "the topology")
    _refuse_unsupported(root)
    local = _array(root.get("localRoots", _ABSENT), "localRoots")
    public = _array(root.get("publicRoots", _ABSENT), "publicRoots")
    return Topology(
        local_roots=tuple(_local_root(item, f"localRoots[{i}]") for i, item in enumerate(local)),
        public_roots=tuple(_public_root(item, f"publicRoots[{i}]") for i, item in enumerate(public)),
        use_ledger_after_slot=_use_ledger_after_slot(root.get("useLedgerAfterSlot")),
    )


def load_topology(path: str | Path) -> Topology:
    """Read and check a topology file; any problem is one :class:`TopologyError` line naming it."""
    path = Path(path)
    try:
        _, document = read_operator_json(path, "topology", expect_object=False)
    except FileNotFoundError:
        raise TopologyError(
            f"{path}: topology file not found; create it (cardano-node topology format) "
            f"or name it with -t/--topology-file"
        ) from None
    except OperatorJsonError as exc:
        raise TopologyError(str(exc)) from None
    try:
        return parse_topology(document)
    except _Bad as exc:
        raise TopologyError(f"{path}: {exc}") from None
