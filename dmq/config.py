"""The node's configuration: the reference node's keys and defaults, plus the project's extensions.

An operator must be able to swap the Haskell ``dmq-node`` for this one with the same files and
flags (docs/architecture.md principle 8), so the JSON keys, their defaults and the precedence
(command-line flags over the configuration file over defaults) follow
``DMQ/Configuration.hs`` of the reference node (docs/protocol/configuration.md section 11). The project's own keys are
additions with safe defaults; none renames a reference key.

Every key is declared once, as metadata on its :class:`NodeConfig` field: the JSON key, the
command-line flag that overrides it and the form its value must take. Loading, error messages
and :meth:`NodeConfig.to_json` all read that one table.

As in the reference: a missing configuration file means all defaults, unknown keys are
ignored, ``null`` means "not set", and relative paths stay relative to the working directory
(they are not resolved against the configuration file's folder).
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import math
import re
from dataclasses import MISSING, dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import Any, Mapping

from dmq.errors import OperatorError
from dmq.operator_json import OperatorJsonError, json_shown, read_operator_json
from dmq.networks import (
    CARDANO_MAINNET_MAGIC,
    DMQ_MAINNET_MAGIC,
    MAX_NETWORK_MAGIC,
    NETWORK_MAGICS,
    network_by_cardano_magic,
    network_by_dmq_magic,
)
from dmq.trace import SEVERITIES, SILENCE, STDOUT_BACKENDS

__all__ = [
    "ConfigError",
    "DiffusionMode",
    "AcceptedConnectionsLimit",
    "StakeSourceKind",
    "StakeSource",
    "TopicBucket",
    "TopicQueueLimits",
    "TopicKeyLimit",
    "TopicSubscriptionLimits",
    "TopicPublishers",
    "MithrilRegistration",
    "PrometheusEndpoint",
    "NodeConfig",
    "DEFAULT_CONFIG_FILE",
    "DEFAULT_TOPOLOGY_FILE",
    "DEFAULT_MIN_SIG_DELAY",
    "NO_ADDRESS_MESSAGE",
    "MAX_UNIX_SOCKET_PATH_BYTES",
    "config_keys",
    "read_config",
    "load_config",
    "check_node_startup",
    "node_startup_problems",
    "check_cardano_node_socket",
    "TRACING_KEYS",
    "configuration_doubts",
    "unknown_key_doubts",
    "magic_doubts",
    "unused_key_doubts",
]

DEFAULT_CONFIG_FILE = "dmq.config.json"
DEFAULT_TOPOLOGY_FILE = "dmq.topology.json"
#: The reference's ``minSigDelay``; any other value is refused on the mainnet DMQ network.
DEFAULT_MIN_SIG_DELAY = 60.0
#: The reference node's exact text when neither bind address is configured.
NO_ADDRESS_MESSAGE = "no ipv4 or ipv6 address specified, use --host-addr or --host-ipv6-addr"
#: ``sun_path`` holds 108 bytes on Linux, one of which is the terminating NUL.
MAX_UNIX_SOCKET_PATH_BYTES = 107
#: Where a ``PrometheusSimple`` backend or ``PrometheusPort`` listens when no host is given.
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"

_PORT_RANGE = (0, 65535)
_WORD32_RANGE = (0, MAX_NETWORK_MAGIC)
_INT_RANGE = (0, 2**63 - 1)


class ConfigError(OperatorError):
    """The configuration (file, flags or their combination) cannot start a node."""


class DiffusionMode(str, Enum):
    """Whether the node accepts inbound node-to-node connections (JSON value = reference text)."""

    INITIATOR_ONLY = "InitiatorOnly"
    INITIATOR_AND_RESPONDER = "InitiatorAndResponder"


@dataclass(frozen=True, slots=True)
class AcceptedConnectionsLimit:
    """Inbound connection limits: above ``soft_limit`` accepts are delayed, at ``hard_limit`` refused."""

    hard_limit: int = 512
    soft_limit: int = 384
    delay: float = 5.0


class StakeSourceKind(str, Enum):
    CARDANO_NODE = "cardano-node"
    GENESIS = "genesis"
    FILE = "file"


@dataclass(frozen=True, slots=True)
class StakeSource:
    """Where the stake map comes from.

    ``cardano-node`` (the reference's only source) queries the local cardano-node; ``genesis``
    takes the stake pools of ``ShelleyGenesisFile`` (a devnet without a chain to query); any
    other value is the path of a JSON stake file.
    """

    kind: StakeSourceKind
    path: Path | None = None

    @classmethod
    def parse(cls, text: str) -> StakeSource:
        if text == StakeSourceKind.CARDANO_NODE.value:
            return cls(StakeSourceKind.CARDANO_NODE)
        if text == StakeSourceKind.GENESIS.value:
            return cls(StakeSourceKind.GENESIS)
        if not text:
            raise ValueError("empty stake source")
        return cls(StakeSourceKind.FILE, Path(text))

    def __str__(self) -> str:
        if self.kind is not StakeSourceKind.FILE:
            return self.kind.value
        text = str(self.path)
        # A stake file named like a keyword must keep a "./" to read back as a file.
        return f"./{text}" if text in {kind.value for kind in StakeSourceKind} else text


@dataclass(frozen=True, slots=True)
class PrometheusEndpoint:
    """Where the metrics are served, and whether metric names drop their type suffixes."""

    host: str
    port: int
    no_suffix: bool = False


# ---------------------------------------------------------------------------------------------
# Value forms: how a key's JSON value (or a flag's text) becomes a typed value, and back.


class _Invalid(ValueError):
    """A value does not have the form its key requires (the loader adds file and key).

    A form may name a more precise expectation and the offending part of a larger value.
    """

    def __init__(self, expected: str | None = None, got: Any = MISSING) -> None:
        super().__init__(expected)
        self.expected = expected
        self.got = got


class _Form:
    #: Completes "must be ...": what the operator has to write.
    expected: str = ""

    def from_json(self, value: Any) -> Any:
        raise NotImplementedError

    def from_text(self, text: str) -> Any:
        """A command-line flag's text; by default the same as a JSON string."""
        return self.from_json(text)

    def to_json(self, value: Any) -> Any:
        return value


class _Integer(_Form):
    def __init__(self, low: int, high: int, expected: str) -> None:
        self.low, self.high, self.expected = low, high, expected

    def from_json(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid
        if not self.low <= value <= self.high:
            raise _Invalid
        return value

    def from_text(self, text: str) -> int:
        if not re.fullmatch(r"\s*\+?[0-9]+\s*", text):
            raise _Invalid
        return self.from_json(int(text))


class _Seconds(_Form):
    """A duration in seconds; flags also take Haskell's ``DiffTime`` form (``0.01s``)."""

    expected = "a number of seconds >= 0"

    def from_json(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Invalid
        if not math.isfinite(value) or value < 0:
            raise _Invalid
        return float(value)

    def from_text(self, text: str) -> float:
        number = text.strip().removesuffix("s")
        try:
            return self.from_json(float(number))
        except ValueError:
            raise _Invalid from None

    def to_json(self, value: float) -> int | float:
        return int(value) if float(value).is_integer() else value  # a value built in code may be an int


class _Milliseconds(_Seconds):
    """A duration given in milliseconds (>= 0), held in seconds: a wait shorter than a second."""

    expected = "a number of milliseconds >= 0"

    def from_json(self, value: Any) -> float:
        return super().from_json(value) / 1000.0

    def from_text(self, text: str) -> float:
        try:
            return self.from_json(float(text.strip().removesuffix("ms")))
        except ValueError:
            raise _Invalid from None

    def to_json(self, value: float) -> int | float:
        return super().to_json(round(value * 1000.0, 6))


class _PositiveSeconds(_Seconds):
    """A duration that must pass before something happens: zero would make it happen at once."""

    expected = "a number of seconds > 0"

    def from_json(self, value: Any) -> float:
        seconds = super().from_json(value)
        if seconds == 0:
            raise _Invalid
        return seconds


class _Boolean(_Form):
    expected = "true or false"

    def from_json(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise _Invalid
        return value


class _Text(_Form):
    expected = "a string"

    def from_json(self, value: Any) -> str:
        if not isinstance(value, str):
            raise _Invalid
        return value


class _FilePath(_Form):
    expected = "a non-empty path string"

    def from_json(self, value: Any) -> Path:
        if not isinstance(value, str) or not value or "\0" in value:
            raise _Invalid
        return Path(value)

    def to_json(self, value: Path) -> str:
        return str(value)


class _Address(_Form):
    def __init__(self, version: int) -> None:
        self.version = version
        self.expected = "an IPv4 address such as \"192.0.2.1\"" if version == 4 else (
            "an IPv6 address such as \"2001:db8::1\""
        )

    def from_json(self, value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        if not isinstance(value, str):
            raise _Invalid
        try:
            return ipaddress.IPv4Address(value) if self.version == 4 else ipaddress.IPv6Address(value)
        except ValueError:
            raise _Invalid from None

    def to_json(self, value: Any) -> str:
        return str(value)


class _Choice(_Form):
    def __init__(self, enum: type[Enum]) -> None:
        self.enum = enum
        self.expected = " or ".join(f'"{member.value}"' for member in enum)

    def from_json(self, value: Any) -> Enum:
        try:
            return self.enum(value)
        except ValueError:
            raise _Invalid from None

    def to_json(self, value: Enum) -> str:
        return value.value


class _Hash32(_Form):
    expected = "64 hexadecimal digits (a Blake2b-256 hash)"

    def from_json(self, value: Any) -> bytes:
        if not isinstance(value, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", value):
            raise _Invalid
        return bytes.fromhex(value)

    def to_json(self, value: bytes) -> str:
        return value.hex()


class _FileMode(_Form):
    """Permission bits as an octal string: a JSON number 660 would silently mean 0o1224."""

    expected = 'an octal permission string such as "0660"'

    def from_json(self, value: Any) -> int:
        if not isinstance(value, str) or not re.fullmatch(r"0?[0-7]{3}", value):
            raise _Invalid
        return int(value, 8)

    def to_json(self, value: int) -> str:
        return f"{value:04o}"


class _StakeSourceForm(_Form):
    expected = '"cardano-node", "genesis" or the path of a JSON stake file'

    def from_json(self, value: Any) -> StakeSource:
        if not isinstance(value, str):
            raise _Invalid
        try:
            return StakeSource.parse(value)
        except ValueError:
            raise _Invalid from None

    def to_json(self, value: StakeSource) -> str:
        return str(value)


class _ConnectionsLimit(_Form):
    expected = 'an object {"hardLimit": integer, "softLimit": integer, "delay": seconds}'

    def from_json(self, value: Any) -> AcceptedConnectionsLimit:
        if not isinstance(value, dict) or not {"hardLimit", "softLimit", "delay"} <= value.keys():
            raise _Invalid
        word32 = _Integer(*_WORD32_RANGE, "")
        return AcceptedConnectionsLimit(
            hard_limit=word32.from_json(value["hardLimit"]),
            soft_limit=word32.from_json(value["softLimit"]),
            delay=_Seconds().from_json(value["delay"]),
        )

    def to_json(self, value: AcceptedConnectionsLimit) -> dict[str, Any]:
        return {
            "hardLimit": value.hard_limit,
            "softLimit": value.soft_limit,
            "delay": _Seconds().to_json(value.delay),
        }


class _Names(_Form):
    expected = 'a list of names, e.g. ["raw", "upsycle"]'

    def from_json(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise _Invalid
        return tuple(dict.fromkeys(value))

    def from_text(self, text: str) -> tuple[str, ...]:
        return self.from_json([part.strip() for part in text.split(",") if part.strip()])

    def to_json(self, value: tuple[str, ...]) -> list[str]:
        return list(value)


@dataclass(frozen=True, slots=True)
class TopicBucket:
    """The per-pool token bucket of topic networks (docs/topics-design.md 2.1.4, P numbers)."""

    capacity: int = 8
    refill_seconds: float = 10.0


class _TopicBucketForm(_Form):
    expected = 'an object {"Capacity": integer >= 1, "RefillSeconds": seconds > 0}'

    def from_json(self, value: Any) -> TopicBucket:
        if not isinstance(value, dict) or not {"Capacity", "RefillSeconds"} <= value.keys():
            raise _Invalid
        capacity = _COUNT.from_json(value["Capacity"])
        refill = _Seconds().from_json(value["RefillSeconds"])
        if capacity < 1 or not refill > 0:
            raise _Invalid
        return TopicBucket(capacity, refill)

    def to_json(self, value: TopicBucket) -> dict[str, Any]:
        return {"Capacity": value.capacity, "RefillSeconds": _Seconds().to_json(value.refill_seconds)}


class _TopicBudgetsForm(_Form):
    """Per-topic buckets: ``{"blocklace": {"Capacity": 8, "RefillSeconds": 25}, ...}``, kept as
    sorted ``(topic, bucket)`` pairs (the configuration stays frozen and hashable)."""

    expected = ('an object {"<topic>": {"Capacity": integer >= 1, "RefillSeconds": seconds > 0}, ...} '
                "naming raw or an adapter")

    def from_json(self, value: Any) -> tuple[tuple[str, TopicBucket], ...]:
        if not isinstance(value, dict) or not all(isinstance(k, str) and re.fullmatch("[a-z][a-z0-9_]*", k)
                                                  for k in value):
            raise _Invalid
        bucket = _TopicBucketForm()
        out = []
        for name, policy in sorted(value.items()):
            try:
                out.append((name, bucket.from_json(policy)))
            except _Invalid:
                raise _Invalid(f'{bucket.expected} for "{name}"', policy) from None
        return tuple(out)

    def to_json(self, value: tuple[tuple[str, TopicBucket], ...]) -> dict[str, Any]:
        return {name: _TopicBucketForm().to_json(policy) for name, policy in value}


@dataclass(frozen=True, slots=True)
class TopicQueueLimits:
    """Caps of every protocol 1000 subscription queue (docs/topics-design.md 3.4, ``[4, n]`` items dropped)."""

    max_items: int = 10_000
    max_bytes: int = 64 << 20


class _TopicQueueLimitsForm(_Form):
    expected = 'an object {"MaxItems": integer >= 3, "MaxBytes": integer >= 48}'

    def from_json(self, value: Any) -> TopicQueueLimits:
        if not isinstance(value, dict) or not {"MaxItems", "MaxBytes"} <= value.keys():
            raise _Invalid
        limits = TopicQueueLimits(_COUNT.from_json(value["MaxItems"]), _COUNT.from_json(value["MaxBytes"]))
        if limits.max_items < 3 or limits.max_bytes < 48:
            raise _Invalid
        return limits

    def to_json(self, value: TopicQueueLimits) -> dict[str, Any]:
        return {"MaxItems": value.max_items, "MaxBytes": value.max_bytes}


@dataclass(frozen=True, slots=True)
class TopicSubscriptionLimits:
    """What local clients may make a topic node hold (docs/topics.md "Caps on local clients")."""

    durable_per_connection: int = 16
    durable: int = 1024
    ephemeral: int = 4096
    durable_queue_bytes: int = 16 << 20
    durable_bytes: int = 1 << 30
    disk_share: float = 0.5


_SUBSCRIPTION_LIMITS = (("DurablePerConnection", "durable_per_connection", 1), ("Durable", "durable", 1),
                        ("Ephemeral", "ephemeral", 1), ("DurableQueueBytes", "durable_queue_bytes", 48),
                        ("DurableBytes", "durable_bytes", 48))


class _TopicSubscriptionLimitsForm(_Form):
    expected = ('an object of any of "DurablePerConnection", "Durable", "Ephemeral" (integers >= 1), '
                '"DurableQueueBytes", "DurableBytes" (integers >= 48, the total at least a queue\'s) '
                'and "DiskShare" (a fraction > 0 and <= 1)')

    def from_json(self, value: Any) -> TopicSubscriptionLimits:
        known = {key for key, _, _ in _SUBSCRIPTION_LIMITS} | {"DiskShare"}
        if not isinstance(value, dict) or not value.keys() <= known:
            raise _Invalid
        given: dict[str, Any] = {}
        for key, name, least in _SUBSCRIPTION_LIMITS:
            if key in value:
                number = _COUNT.from_json(value[key])
                if number < least:
                    raise _Invalid
                given[name] = number
        if "DiskShare" in value:
            share = value["DiskShare"]
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise _Invalid
            given["disk_share"] = float(share)
        limits = TopicSubscriptionLimits(**given)
        if limits.durable_bytes < limits.durable_queue_bytes:
            raise _Invalid
        return limits

    def to_json(self, value: TopicSubscriptionLimits) -> dict[str, Any]:
        out: dict[str, Any] = {key: getattr(value, name) for key, name, _ in _SUBSCRIPTION_LIMITS}
        out["DiskShare"] = value.disk_share
        return out


@dataclass(frozen=True, slots=True)
class TopicKeyLimit:
    """Publications per local publisher key and window (docs/topics-design.md 2.7, P: 20 per 10 minutes)."""

    count: int = 20
    window_seconds: float = 600.0


class _TopicKeyLimitForm(_Form):
    expected = 'an object {"Count": integer >= 1, "WindowSeconds": seconds > 0}'

    def from_json(self, value: Any) -> TopicKeyLimit:
        if not isinstance(value, dict) or not {"Count", "WindowSeconds"} <= value.keys():
            raise _Invalid
        limit = TopicKeyLimit(_COUNT.from_json(value["Count"]), _Seconds().from_json(value["WindowSeconds"]))
        if limit.count < 1 or not limit.window_seconds > 0:
            raise _Invalid
        return limit

    def to_json(self, value: TopicKeyLimit) -> dict[str, Any]:
        return {"Count": value.count, "WindowSeconds": _Seconds().to_json(value.window_seconds)}


@dataclass(frozen=True, slots=True)
class TopicPublishers:
    """Allow-lists of local publishers (docs/topics-design.md 2.7); None: any local client."""

    upsycle_services: frozenset[bytes] | None = None
    dmsg_static_keys: frozenset[bytes] | None = None


class _TopicPublishersForm(_Form):
    expected = ('an object {"UpsycleServices": [64 hex digits, ...], "DmsgStaticKeys": [66 hex digits, ...]}, '
                "each list optional")
    _SIZES = {"UpsycleServices": 32, "DmsgStaticKeys": 33}

    def from_json(self, value: Any) -> TopicPublishers:
        if not isinstance(value, dict) or not value.keys() <= self._SIZES.keys():
            raise _Invalid
        lists = {name: self._keys(value[name], size) if value.get(name) is not None else None
                 for name, size in self._SIZES.items()}
        return TopicPublishers(lists["UpsycleServices"], lists["DmsgStaticKeys"])

    @staticmethod
    def _keys(value: Any, size: int) -> frozenset[bytes]:
        if not isinstance(value, list) or not all(isinstance(v, str) and re.fullmatch(f"[0-9a-fA-F]{{{2 * size}}}", v)
                                                  for v in value):
            raise _Invalid
        return frozenset(bytes.fromhex(v) for v in value)

    def to_json(self, value: TopicPublishers) -> dict[str, Any]:
        out = {}
        for name, keys in (("UpsycleServices", value.upsycle_services), ("DmsgStaticKeys", value.dmsg_static_keys)):
            if keys is not None:
                out[name] = sorted(k.hex() for k in keys)
        return out


@dataclass(frozen=True, slots=True)
class MithrilRegistration:
    """The Mithril signer registration application (docs/mithril-registration.md 8): its topic, and
    where ``/epoch-settings`` is served (``http_port`` None: not served; 0: any free port)."""

    topic: bytes
    http_host: str = "127.0.0.1"
    http_port: int | None = None


class _MithrilRegistrationForm(_Form):
    expected = 'an object {"Topic": 64 hex digits, "HttpPort": 0..65535, "HttpHost": text}, HttpPort and HttpHost optional'

    def from_json(self, value: Any) -> MithrilRegistration:
        if not isinstance(value, dict) or "Topic" not in value or not value.keys() <= {"Topic", "HttpPort", "HttpHost"}:
            raise _Invalid
        topic, host, port = value["Topic"], value.get("HttpHost", "127.0.0.1"), value.get("HttpPort")
        if not isinstance(topic, str) or not re.fullmatch("[0-9a-fA-F]{64}", topic) or not isinstance(host, str):
            raise _Invalid
        return MithrilRegistration(bytes.fromhex(topic), host, None if port is None else _PORT.from_json(port))

    def to_json(self, value: MithrilRegistration) -> dict[str, Any]:
        out: dict[str, Any] = {"Topic": value.topic.hex(), "HttpHost": value.http_host}
        if value.http_port is not None:
            out["HttpPort"] = value.http_port
        return out


class _TraceOptions(_Form):
    """Kept as compact JSON text: the tracing layer interprets it, the configuration stays frozen."""

    expected = "an object of trace-dispatcher options"

    def from_json(self, value: Any) -> str:
        if not isinstance(value, dict):
            raise _Invalid
        for options in value.values():
            severity = options.get("severity") if isinstance(options, dict) else None
            if severity is not None and severity not in _TRACE_SEVERITIES:
                raise _Invalid(f"a severity among {', '.join(_TRACE_SEVERITIES)}", got=severity)
        for backend in _backends(value):
            if backend.startswith("Stdout") and backend not in STDOUT_BACKENDS:
                raise _Invalid(f"a Stdout backend among {', '.join(STDOUT_BACKENDS)}", got=backend)
            try:
                _prometheus_simple(backend)
            except _Invalid:
                raise _Invalid(
                    'a "PrometheusSimple [suffix|nosuffix] [host] port" backend', got=backend
                ) from None
        return json.dumps(value, separators=(",", ":"))

    def to_json(self, value: str) -> Any:
        return json.loads(value)


_TRACE_SEVERITIES = (*SEVERITIES, SILENCE)


def _backends(trace_options: Mapping[str, Any]) -> list[str]:
    """Every backend string of every namespace, root namespace ``""`` first."""
    names = sorted(trace_options, key=lambda name: name != "")
    found: list[str] = []
    for name in names:
        options = trace_options[name]
        backends = options.get("backends") if isinstance(options, dict) else None
        if isinstance(backends, list):
            found.extend(b for b in backends if isinstance(b, str))
    return found


def _prometheus_simple(backend: str) -> PrometheusEndpoint | None:
    """Parse trace-dispatcher's ``PrometheusSimple [suffix|nosuffix] [host] port`` backend."""
    words = backend.split()
    if not words or words[0] != "PrometheusSimple":
        return None
    modifiers = {"suffix": False, "nosuffix": True}
    no_suffix, host = False, DEFAULT_PROMETHEUS_HOST
    if len(words) == 3:
        if words[1] in modifiers:
            no_suffix = modifiers[words[1]]
        else:
            host = words[1]
    elif len(words) == 4:
        if words[1] not in modifiers:
            raise _Invalid
        no_suffix, host = modifiers[words[1]], words[2]
    elif len(words) != 2:
        raise _Invalid
    port_text = words[-1]
    if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise _Invalid
    return PrometheusEndpoint(host=host, port=int(port_text), no_suffix=no_suffix)


_PORT = _Integer(*_PORT_RANGE, "an integer 0..65535")
_MAGIC = _Integer(*_WORD32_RANGE, f"an integer 0..{MAX_NETWORK_MAGIC}")
_COUNT = _Integer(*_INT_RANGE, "a non-negative integer")


def _key(
    key: str | None,
    form: _Form,
    default: Any = MISSING,
    *,
    flag: str | None = None,
    default_factory: Any = MISSING,
) -> Any:
    """A configuration field: its JSON key (``None`` for flag-only settings), form and flag."""
    metadata = {"key": key, "form": form, "flag": flag}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """Everything the node reads at start-up; ``NodeConfig()`` is the reference's defaults."""

    # --- node-to-node and node-to-client endpoints
    ipv4: ipaddress.IPv4Address | None = _key("IPv4", _Address(4), None, flag="--host-addr")
    ipv6: ipaddress.IPv6Address | None = _key("IPv6", _Address(6), None, flag="--host-ipv6-addr")
    port_number: int = _key("PortNumber", _PORT, 3141, flag="--port")
    local_address: Path = _key("LocalAddress", _FilePath(), Path("dmq-node.socket"), flag="--local-socket")

    # --- files named on the command line only
    config_file: Path = _key(None, _FilePath(), Path(DEFAULT_CONFIG_FILE), flag="--configuration-file")
    topology_file: Path = _key(None, _FilePath(), Path(DEFAULT_TOPOLOGY_FILE), flag="--topology-file")

    # --- networks and the cardano-node link
    network_magic: int = _key("NetworkMagic", _MAGIC, DMQ_MAINNET_MAGIC, flag="--dmq-network-magic")
    cardano_network_magic: int = _key(
        "CardanoNetworkMagic", _MAGIC, CARDANO_MAINNET_MAGIC, flag="--cardano-network-magic"
    )
    cardano_node_socket: Path = _key(
        "CardanoNodeSocket", _FilePath(), Path("cardano-node.socket"), flag="--cardano-node-socket"
    )
    shelley_genesis_file: Path = _key(
        "ShelleyGenesisFile", _FilePath(), Path("mainnet-shelley-genesis.json")
    )
    shelley_genesis_hash: bytes | None = _key("ShelleyGenesisHash", _Hash32(), None)

    # --- diffusion
    diffusion_mode: DiffusionMode = _key(
        "DiffusionMode", _Choice(DiffusionMode), DiffusionMode.INITIATOR_AND_RESPONDER
    )
    peer_sharing: bool = _key("PeerSharing", _Boolean(), True)
    ledger_peers: bool = _key("LedgerPeers", _Boolean(), False)
    target_number_of_root_peers: int = _key("TargetNumberOfRootPeers", _COUNT, 60)
    target_number_of_known_peers: int = _key("TargetNumberOfKnownPeers", _COUNT, 150)
    target_number_of_established_peers: int = _key("TargetNumberOfEstablishedPeers", _COUNT, 30)
    target_number_of_active_peers: int = _key("TargetNumberOfActivePeers", _COUNT, 20)
    target_number_of_known_big_ledger_peers: int = _key("TargetNumberOfKnownBigLedgerPeers", _COUNT, 15)
    target_number_of_established_big_ledger_peers: int = _key(
        "TargetNumberOfEstablishedBigLedgerPeers", _COUNT, 10
    )
    target_number_of_active_big_ledger_peers: int = _key("TargetNumberOfActiveBigLedgerPeers", _COUNT, 5)
    accepted_connections_limit: AcceptedConnectionsLimit = _key(
        "AcceptedConnectionsLimit", _ConnectionsLimit(), default_factory=AcceptedConnectionsLimit
    )
    protocol_idle_timeout: float = _key("ProtocolIdleTimeout", _Seconds(), 5.0)
    churn_interval: float = _key("ChurnInterval", _Seconds(), 3300.0)

    # --- tracing (trace-dispatcher settings, kept for the tracing layer)
    trace_options_json: str | None = _key("TraceOptions", _TraceOptions(), None)
    trace_option_metrics_prefix: str = _key("TraceOptionMetricsPrefix", _Text(), "dmq_node_")

    # --- validation
    #: The per-pool rate limit; the reference's hidden ``--min-sig-delay`` (devnets use ``0.01s``).
    min_sig_delay: float = _key("MinSigDelay", _Seconds(), DEFAULT_MIN_SIG_DELAY, flag="--min-sig-delay")

    # --- project extensions (absent from the reference; defaults keep its behaviour)
    #: Where the stake map comes from; only ``cardano-node`` needs ``CardanoNodeSocket``.
    stake_source: StakeSource = _key(
        "StakeSource",
        _StakeSourceForm(),
        default_factory=lambda: StakeSource(StakeSourceKind.CARDANO_NODE),
        flag="--stake-source",
    )
    #: The LMDB store directory (mempool persistence, counters, topic state).
    database_path: Path = _key("DatabasePath", _FilePath(), Path("dmq-db"), flag="--database-path")
    #: Opt-in handling of the pre-0.5 message format (docs/protocol/message.md 5.5) still sent by released Mithril
    #: signers; false keeps the reference behaviour (a legacy message is a decode failure).
    legacy_message_format: bool = _key("LegacyMessageFormat", _Boolean(), False)
    #: Reject legacy-format messages with a bare text, the only reason pallas-network 0.34
    #: (Mithril 2543.x, 2603.x) decodes, instead of the structured reason of the reference,
    #: which pallas 0.35 (Mithril 2617.0) needs: the two send identical bytes otherwise, so the
    #: operator picks (docs/protocol/local-protocols.md 7.2). Current-format messages always get the structured reason.
    legacy_reject_text: bool = _key("LegacyRejectText", _Boolean(), False)
    #: A directory to record traffic into for the capacity pipeline; ``None`` records nothing.
    record_traffic: Path | None = _key("RecordTraffic", _FilePath(), None, flag="--record-traffic")
    #: A Prometheus port on 127.0.0.1 without writing trace-dispatcher options; ``None``: off.
    prometheus_port: int | None = _key("PrometheusPort", _PORT, None, flag="--prometheus-port")
    #: Permission bits of the node-to-client socket: owner and group only, so that only the
    #: operator's Mithril signer and aggregator can submit and read messages.
    local_socket_mode: int = _key("LocalSocketMode", _FileMode(), 0o660)
    #: Seconds a local connection may stay with no mini-protocol instance running (after the
    #: last one finished, or from the handshake on) or stay in its handshake, before the node
    #: closes it. The reference keeps such connections until the client closes them, and
    #: Mithril's publisher never does (docs/protocol/local-protocols.md 7.4); a client with a
    #: notification request open, or waiting between requests, is never cut.
    local_idle_timeout: float = _key("LocalIdleTimeout", _PositiveSeconds(), 10.0)
    #: Milliseconds a pulling peer waits before asking a peer for more ids when its last
    #: answer announced only messages the node already has (docs/protocol/node-to-node.md 9.9):
    #: such a peer is behind the node's others, and its next ids come together instead of one
    #: round each. 150 ms takes about a third off the CPU a message costs a node with 20 peers
    #: for a few tens of milliseconds a hop; 0: ask at once, as the reference does.
    sig_submission_hold_after_known: float = _key("SigSubmissionHoldAfterKnown", _Milliseconds(), 0.15)
    #: Milliseconds of the longest such wait: a peer whose answers keep announcing only known
    #: messages waits twice as long after each, up to this, and at once again after an answer with
    #: something to fetch (docs/protocol/node-to-node.md 9.9). At or below
    #: ``SigSubmissionHoldAfterKnown``, the wait does not grow.
    sig_submission_hold_after_known_max: float = _key("SigSubmissionHoldAfterKnownMax", _Milliseconds(), 0.6)
    #: Treat ``SigTooFrequent`` and ``SigExpiresAtTooFarInTheFuture`` from peers as trace-only
    #: instead of disconnecting (docs/protocol/validation.md 6.2 allows it; clock jitter otherwise drops honest peers).
    trace_only_reactions: bool = _key("TraceOnlyReactions", _Boolean(), False)
    #: What this instance carries (docs/topics-design.md 2.1): "raw" and/or adapter names. Adapters are
    #: refused on a Mithril magic (``MithrilNetworkMagics``).
    topics_carried: tuple[str, ...] = _key("TopicsCarried", _Names(), ("raw",), flag="--topics")
    #: Whether this instance's magic carries Mithril traffic (then raw only). Not set: the
    #: DMQ magics of the named networks (mainnet, preprod, preview, devnet) are Mithril's.
    mithril_network: bool | None = _key("MithrilNetwork", _Boolean(), None)
    #: One token bucket for every topic of a pool, in place of the per-topic defaults
    #: (``topics.bucket.DEFAULT_BUDGETS``); not set: those defaults. Replaces ``MinSigDelay``
    #: on topic networks.
    topic_token_bucket: TopicBucket | None = _key("TopicTokenBucket", _TopicBucketForm(), None)
    #: Buckets of named topics (``raw`` or an adapter), over ``TopicTokenBucket`` and the defaults.
    topic_budgets: tuple[tuple[str, TopicBucket], ...] | None = _key("TopicBudgets", _TopicBudgetsForm(), None)
    #: Caps of protocol 1000 subscription queues; overflow is reported by ``[4, n]`` items.
    topic_queue_limits: TopicQueueLimits = _key("TopicQueueLimits", _TopicQueueLimitsForm(),
                                                default_factory=TopicQueueLimits)
    #: Caps on what local clients make the node hold: durable subscriptions per connection and
    #: in total, their queued bytes per queue and in total, ephemeral subscriptions in total,
    #: and the share of the disk the database may take.
    topic_subscription_limits: TopicSubscriptionLimits = _key(
        "TopicSubscriptionLimits", _TopicSubscriptionLimitsForm(), default_factory=TopicSubscriptionLimits)
    #: Client publications per publisher key (UPSYCLE source, group or service, dmsg static key).
    topic_key_limit: TopicKeyLimit = _key("TopicKeyLimit", _TopicKeyLimitForm(), default_factory=TopicKeyLimit)
    #: Allow-lists of local publishers; not set: any local client (docs/topics-design.md 2.7).
    topic_publishers: TopicPublishers | None = _key("TopicPublishers", _TopicPublishersForm(), None)
    #: The pool's KES signing key and operational certificate, for publication by the node
    #: (protocol 1000 ``MsgPublish``); without them the node answers ``no_signer``.
    topic_kes_key: Path | None = _key("TopicKesKey", _FilePath(), None, flag="--topic-kes-key")
    topic_operational_certificate: Path | None = _key(
        "TopicOperationalCertificate", _FilePath(), None, flag="--topic-operational-certificate")
    #: The Mithril signer registration application: its Blocklace topic and HTTP endpoint; not set: off.
    mithril_registration: MithrilRegistration | None = _key("MithrilRegistration", _MithrilRegistrationForm(), None)

    # --- provenance, not configuration: whether ``config_file`` existed (defaults were used if not)
    config_file_found: bool = field(default=False, compare=False)
    #: Keys of the configuration file that no field reads, as written (ignored, as by the reference).
    unknown_keys: tuple[str, ...] = field(default=(), compare=False)

    @property
    def trace_options(self) -> dict[str, Any]:
        """The ``TraceOptions`` object as written (a fresh copy; empty when absent)."""
        return json.loads(self.trace_options_json) if self.trace_options_json else {}

    @property
    def trace_severities(self) -> dict[str, str]:
        """Namespace -> least severity logged, from ``TraceOptions`` (``""`` is the root)."""
        return {name: options["severity"] for name, options in self.trace_options.items()
                if isinstance(options, dict) and "severity" in options}

    @property
    def trace_stdout_backend(self) -> str | None:
        """The ``Stdout ...`` backend of ``TraceOptions``, the root's first; ``None``: none named."""
        return next((b for b in _backends(self.trace_options) if b in STDOUT_BACKENDS), None)

    @property
    def prometheus_endpoint(self) -> PrometheusEndpoint | None:
        """Where to serve metrics: ``PrometheusPort`` if set, else the first ``PrometheusSimple``
        backend of ``TraceOptions`` (how the reference is told), else nowhere."""
        if self.prometheus_port is not None:
            return PrometheusEndpoint(DEFAULT_PROMETHEUS_HOST, self.prometheus_port)
        for backend in _backends(self.trace_options):
            endpoint = _prometheus_simple(backend)
            if endpoint is not None:
                return endpoint
        return None

    @property
    def is_mithril_network(self) -> bool:
        """Whether the instance carries Mithril traffic, so raw bodies only (docs/topics-design.md 2.1).

        The mainnet DMQ magic always does; others follow ``MithrilNetwork`` when set, else
        the named networks' magics do.
        """
        if self.network_magic == DMQ_MAINNET_MAGIC:
            return True
        if self.mithril_network is not None:
            return self.mithril_network
        return any(n.dmq == self.network_magic for n in NETWORK_MAGICS.values())

    @property
    def has_topics(self) -> bool:
        """Whether any adapter is carried (the topic pipeline and protocol 1000 run)."""
        return any(name != "raw" for name in self.topics_carried)

    @property
    def uses_default_validation(self) -> bool:
        return self.min_sig_delay == DEFAULT_MIN_SIG_DELAY

    def to_json(self) -> dict[str, Any]:
        """The configuration as a configuration file would state it (for the start-up trace).

        Loading the result gives back an equal ``NodeConfig``; unset optional keys are omitted.
        """
        out: dict[str, Any] = {}
        for f in fields(self):
            key = f.metadata.get("key")
            value = getattr(self, f.name)
            if key is None or value is None:
                continue
            out[key] = f.metadata["form"].to_json(value)
        return out


def config_keys() -> dict[str, str]:
    """JSON key -> field name, for every key the configuration file may hold."""
    return {f.metadata["key"]: f.name for f in fields(NodeConfig) if f.metadata.get("key")}


# ---------------------------------------------------------------------------------------------
# Loading


def _read_file(path: Path) -> tuple[dict[str, Any], bool]:
    """The configuration object, or ``({}, False)`` when the file does not exist (reference)."""
    try:
        _, document = read_operator_json(path, "configuration")
    except FileNotFoundError:
        return {}, False
    except OperatorJsonError as exc:
        raise ConfigError(str(exc)) from None
    return document, True


def read_config(cli_args: Mapping[str, str | None] | None = None) -> NodeConfig:
    """Merge defaults, the configuration file and the command line, checking every value's form.

    ``cli_args`` maps JSON keys (``"PortNumber"``), or ``"ConfigFile"`` / ``"TopologyFile"``
    for the two flag-only settings, to the flags' raw text; ``None`` means "flag not given".
    This is what tools that do not listen (``dmq publish`` …) use; :func:`load_config` adds the
    start-up checks of the node itself.
    """
    cli = {name: text for name, text in (cli_args or {}).items() if text is not None}
    by_key = {f.metadata["key"] or _flag_only_name(f.name): f for f in fields(NodeConfig) if "form" in f.metadata}
    unknown = sorted(set(cli) - by_key.keys())
    if unknown:
        raise ValueError(f"unknown configuration keys on the command line: {', '.join(unknown)}")

    values: dict[str, Any] = {}
    for name, f in by_key.items():
        if f.metadata["key"] is None and name in cli:
            values[f.name] = _from_flag(f, cli[name])

    config_path = values.get("config_file", Path(DEFAULT_CONFIG_FILE))
    document, found = _read_file(config_path)

    for name, f in by_key.items():
        key = f.metadata["key"]
        if key is None:
            continue
        if name in cli:
            values[f.name] = _from_flag(f, cli[name])
        elif document.get(key) is not None:
            try:
                values[f.name] = f.metadata["form"].from_json(document[key])
            except _Invalid as exc:
                expected, got = _explain(exc, f.metadata["form"], document[key])
                raise ConfigError(f'{config_path}: "{key}" must be {expected}, got {got}') from None
    file_keys = {f.metadata["key"] for f in by_key.values()}
    unknown = tuple(key for key in document if key not in file_keys)
    return replace(NodeConfig(), config_file_found=found, unknown_keys=unknown, **values)


def _flag_only_name(field_name: str) -> str:
    """``config_file`` -> ``ConfigFile``: the name flag-only settings take in ``cli_args``."""
    return "".join(part.capitalize() for part in field_name.split("_"))


def _from_flag(f: Any, text: str) -> Any:
    try:
        return f.metadata["form"].from_text(text)
    except _Invalid as exc:
        expected, got = _explain(exc, f.metadata["form"], text)
        raise ConfigError(f"{f.metadata['flag'] or f.metadata['key']} must be {expected}, got {got}") from None


def _explain(exc: _Invalid, form: _Form, value: Any) -> tuple[str, str]:
    expected = exc.expected or form.expected
    return expected, json_shown(value if exc.got is MISSING else exc.got)


def node_startup_problems(config: NodeConfig) -> list[ConfigError]:
    """Every start-up refusal of the reference that needs no I/O (docs/protocol/configuration.md section 11.4).

    The node stops at the first (:func:`check_node_startup`); ``dmq-node --check`` lists them all.
    """
    problems: list[ConfigError] = []
    if config.ipv4 is None and config.ipv6 is None:
        problems.append(ConfigError(NO_ADDRESS_MESSAGE))
    if not config.uses_default_validation and config.network_magic == DMQ_MAINNET_MAGIC:
        problems.append(ConfigError(
            f"min-sig-delay {_Seconds().to_json(config.min_sig_delay)}s (--min-sig-delay or \"MinSigDelay\") "
            f"is refused on the mainnet DMQ network (NetworkMagic {DMQ_MAINNET_MAGIC}); "
            f"remove it, or use another --dmq-network-magic"
        ))
    adapters = [name for name in config.topics_carried if name != "raw"]
    if adapters and config.is_mithril_network:
        problems.append(ConfigError(
            f'"TopicsCarried": adapter {adapters[0]!r} cannot run on NetworkMagic {config.network_magic}, '
            f"a Mithril network (raw only); give the topic network its own magic"
        ))
    socket_bytes = len(bytes(config.local_address))
    if socket_bytes > MAX_UNIX_SOCKET_PATH_BYTES:
        problems.append(ConfigError(
            f'"LocalAddress" / --local-socket {str(config.local_address)!r} is {socket_bytes} bytes long; '
            f"a Unix socket path may have at most {MAX_UNIX_SOCKET_PATH_BYTES}: use a shorter or relative path"
        ))
    return problems


def check_node_startup(config: NodeConfig) -> None:
    """Raise the first of :func:`node_startup_problems`, as the reference refuses to start."""
    problems = node_startup_problems(config)
    if problems:
        raise problems[0]


def load_config(cli_args: Mapping[str, str | None] | None = None) -> NodeConfig:
    """The configuration a node starts with: :func:`read_config` plus :func:`check_node_startup`."""
    config = read_config(cli_args)
    check_node_startup(config)
    return config


def check_cardano_node_socket(config: NodeConfig) -> None:
    """Whether the cardano-node socket file is there; only that stake source needs it.

    The reference exits when it is absent. This node starts and waits for it (after a reboot
    cardano-node replays its chain for minutes first), so ``dmq-node --check`` shows this as a note.
    """
    if config.stake_source.kind is not StakeSourceKind.CARDANO_NODE:
        return
    path = config.cardano_node_socket
    if path.exists() and not path.is_dir():
        return
    raise ConfigError(
        f'CardanoNodeSocket "{path}": file does not exist; start cardano-node or point '
        f'"CardanoNodeSocket" / --cardano-node-socket at its socket '
        f'(on a devnet without cardano-node, set "StakeSource": "genesis")'
    )


# ---------------------------------------------------------------------------------------------
# Doubts: settings the node accepts (the reference does too) but that are most likely mistakes.
# A start logs each as a warning and goes on (a private network may use any magic, and the
# reference ignores keys it does not know); ``dmq-node --check`` fails on them.

#: Keys the reference's tracing library (trace-dispatcher) reads from the same file; this node
#: ignores them, and they are no mistake.
TRACING_KEYS = frozenset({
    "UseTraceDispatcher", "TraceOptionForwarder", "TraceOptionNodeName", "TraceOptionPeerFrequency",
    "TraceOptionResourceFrequency", "TraceOptionLedgerMetricsFrequency",
})


def unknown_key_doubts(config: NodeConfig) -> list[str]:
    """A line per configuration-file key that nothing reads, with the nearest known key (a misspelling
    such as ``NetworkMagik`` would otherwise leave the node on the default magic without a word)."""
    known = [*config_keys(), *TRACING_KEYS]
    by_folded = {key.casefold(): key for key in known}
    doubts = []
    for key in config.unknown_keys:
        if key in TRACING_KEYS:
            continue
        near = difflib.get_close_matches(key.casefold(), list(by_folded), n=1, cutoff=0.6)
        hint = f'; did you mean "{by_folded[near[0]]}"?' if near else ""
        doubts.append(f'{config.config_file}: unknown key "{key}" is ignored{hint}')
    return doubts


def magic_doubts(config: NodeConfig) -> list[str]:
    """The two magics checked against the named networks' pairs (docs/protocol/handshake.md 4.6).

    A Cardano magic where the DMQ magic belongs (``NetworkMagic: 2`` for preview) makes every
    Mithril client refuse the handshake; a DMQ magic of one network with cardano-node of another
    validates messages against the wrong stake. The Cardano magic is only used, so only judged,
    with ``StakeSource: cardano-node``.
    """
    doubts = []
    dmq, cardano = config.network_magic, config.cardano_network_magic
    dmq_network, cardano_network = network_by_dmq_magic(dmq), network_by_cardano_magic(cardano)
    misplaced = network_by_cardano_magic(dmq)
    if dmq_network is None and misplaced is not None:
        doubts.append(f'"NetworkMagic" / --dmq-network-magic {dmq} is the Cardano magic of {misplaced.network}; '
                      f"the DMQ magic of {misplaced.network} (what Mithril proposes) is {misplaced.dmq}")
    if config.stake_source.kind is not StakeSourceKind.CARDANO_NODE:
        return doubts
    misplaced = network_by_dmq_magic(cardano)
    if cardano_network is None and misplaced is not None:
        doubts.append(f'"CardanoNetworkMagic" / --cardano-network-magic {cardano} is the DMQ magic of '
                      f"{misplaced.network}; cardano-node of {misplaced.network} speaks {misplaced.cardano}")
    elif dmq_network is not None and cardano != dmq_network.cardano:
        other = f" ({cardano_network.network})" if cardano_network is not None else ""
        doubts.append(f'"NetworkMagic" {dmq} is the DMQ magic of {dmq_network.network}, but "CardanoNetworkMagic" '
                      f"{cardano}{other} is not {dmq_network.network}'s Cardano magic ({dmq_network.cardano}): "
                      "the two magics belong to different networks")
    return doubts


def unused_key_doubts(config: NodeConfig) -> list[str]:
    """Settings nothing will read with the rest of the configuration: the topic signer's files
    on a node carrying only ``raw`` (only topic publications are signed by the node)."""
    if config.has_topics:
        return []
    return [f'"{key}" / {flag} {path} is set, but nothing uses it: only topic publications are signed by the '
            f'node and "TopicsCarried" is {json.dumps(list(config.topics_carried))}; remove it or carry a topic'
            for key, flag, path in (("TopicKesKey", "--topic-kes-key", config.topic_kes_key),
                                    ("TopicOperationalCertificate", "--topic-operational-certificate",
                                     config.topic_operational_certificate))
            if path is not None]


def configuration_doubts(config: NodeConfig) -> list[str]:
    """Every doubt about ``config``, one line each (empty: nothing looks wrong)."""
    return [*unknown_key_doubts(config), *magic_doubts(config), *unused_key_doubts(config)]
