"""Configuration: reference defaults, every key, precedence, the Mithril devnet shape."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import socket
from pathlib import Path

import pytest

from dmq.config import (
    DEFAULT_MIN_SIG_DELAY,
    NO_ADDRESS_MESSAGE,
    AcceptedConnectionsLimit,
    ConfigError,
    DiffusionMode,
    NodeConfig,
    PrometheusEndpoint,
    StakeSource,
    StakeSourceKind,
    TopicBucket,
    TopicKeyLimit,
    TopicPublishers,
    TopicQueueLimits,
    TopicSubscriptionLimits,
    check_cardano_node_socket,
    config_keys,
    load_config,
    read_config,
)
from dmq.networks import DEVNET, network_by_dmq_magic

from .conftest import write_json

#: docs/protocol/configuration.md 11.2 (the reference's ``defaultConfiguration``) plus the project's extension keys.
REFERENCE_DEFAULTS = {
    "PortNumber": 3141,
    "LocalAddress": "dmq-node.socket",
    "NetworkMagic": 2912307721,
    "CardanoNetworkMagic": 764824073,
    "CardanoNodeSocket": "cardano-node.socket",
    "ShelleyGenesisFile": "mainnet-shelley-genesis.json",
    "DiffusionMode": "InitiatorAndResponder",
    "PeerSharing": True,
    "LedgerPeers": False,
    "TargetNumberOfRootPeers": 60,
    "TargetNumberOfKnownPeers": 150,
    "TargetNumberOfEstablishedPeers": 30,
    "TargetNumberOfActivePeers": 20,
    "TargetNumberOfKnownBigLedgerPeers": 15,
    "TargetNumberOfEstablishedBigLedgerPeers": 10,
    "TargetNumberOfActiveBigLedgerPeers": 5,
    "AcceptedConnectionsLimit": {"hardLimit": 512, "softLimit": 384, "delay": 5},
    "ProtocolIdleTimeout": 5,
    "ChurnInterval": 3300,
    "TraceOptionMetricsPrefix": "dmq_node_",
    "MinSigDelay": 60,
    # extensions: defaults keep the reference's behaviour
    "StakeSource": "cardano-node",
    "DatabasePath": "dmq-db",
    "LegacyMessageFormat": False,
    "LegacyRejectText": False,
    "LocalSocketMode": "0660",
    # ... except these: the reference keeps an idle local connection until its client closes it,
    # and asks a peer for more ids at once after an answer of ids the node has
    "LocalIdleTimeout": 10,
    "SigSubmissionHoldAfterKnown": 150,
    "SigSubmissionHoldAfterKnownMax": 600,
    "TraceOnlyReactions": False,
    "TopicsCarried": ["raw"],
    "TopicQueueLimits": {"MaxItems": 10000, "MaxBytes": 67108864},
    "TopicSubscriptionLimits": {"DurablePerConnection": 16, "Durable": 1024, "Ephemeral": 4096,
                                "DurableQueueBytes": 16777216, "DurableBytes": 1073741824, "DiskShare": 0.5},
    "TopicKeyLimit": {"Count": 20, "WindowSeconds": 600},
}
#: Keys whose default is "not set" (omitted from ``to_json``).
UNSET_BY_DEFAULT = {"IPv4", "IPv6", "ShelleyGenesisHash", "TraceOptions", "RecordTraffic", "PrometheusPort",
                    "MithrilNetwork", "TopicKesKey", "TopicOperationalCertificate", "TopicPublishers",
                    "TopicTokenBucket", "TopicBudgets", "MithrilRegistration"}

#: A configuration file giving every key a value different from its default.
EVERY_KEY = {
    "IPv4": "192.0.2.10",
    "IPv6": "2001:db8::10",
    "PortNumber": 6161,
    "LocalAddress": "/dmq/ipc/node.socket",
    "NetworkMagic": 2147483649,
    "CardanoNetworkMagic": 1,
    "CardanoNodeSocket": "/ipc/node.socket",
    "ShelleyGenesisFile": "preprod-shelley-genesis.json",
    "ShelleyGenesisHash": "162d29c4e1cf6b8a84f2d692e67a3ac6bc7851bc3e6e4afe64d15778bed8bd86",
    "DiffusionMode": "InitiatorOnly",
    "PeerSharing": False,
    "LedgerPeers": True,
    "TargetNumberOfRootPeers": 1,
    "TargetNumberOfKnownPeers": 2,
    "TargetNumberOfEstablishedPeers": 3,
    "TargetNumberOfActivePeers": 4,
    "TargetNumberOfKnownBigLedgerPeers": 6,
    "TargetNumberOfEstablishedBigLedgerPeers": 7,
    "TargetNumberOfActiveBigLedgerPeers": 8,
    "AcceptedConnectionsLimit": {"hardLimit": 100, "softLimit": 80, "delay": 2.5},
    "ProtocolIdleTimeout": 7.5,
    "ChurnInterval": 600,
    "TraceOptions": {
        "": {"backends": ["Stdout MachineFormat", "PrometheusSimple suffix 127.0.0.1 12800"], "severity": "Info"},
        "Handshake": {"severity": "Debug"},
    },
    "TraceOptionMetricsPrefix": "dmq_aggregator.",
    "MinSigDelay": 30,
    "StakeSource": "stake.json",
    "DatabasePath": "/var/lib/dmq",
    "LegacyMessageFormat": True,
    "LegacyRejectText": True,
    "RecordTraffic": "traffic",
    "PrometheusPort": 12801,
    "LocalSocketMode": "0600",
    "LocalIdleTimeout": 2.5,
    "SigSubmissionHoldAfterKnown": 0,
    "SigSubmissionHoldAfterKnownMax": 250,
    "TraceOnlyReactions": True,
    "TopicsCarried": ["raw", "upsycle"],
    "MithrilNetwork": False,
    "TopicTokenBucket": {"Capacity": 4, "RefillSeconds": 2.5},
    "TopicBudgets": {"blocklace": {"Capacity": 16, "RefillSeconds": 5}, "dmsg": {"Capacity": 2, "RefillSeconds": 60}},
    "TopicKesKey": "kes.skey",
    "TopicOperationalCertificate": "node.cert",
    "TopicQueueLimits": {"MaxItems": 50, "MaxBytes": 4096},
    "TopicSubscriptionLimits": {"DurablePerConnection": 2, "Durable": 10, "Ephemeral": 20,
                                "DurableQueueBytes": 4096, "DurableBytes": 8192, "DiskShare": 0.25},
    "TopicKeyLimit": {"Count": 5, "WindowSeconds": 60},
    "TopicPublishers": {"UpsycleServices": ["11" * 32], "DmsgStaticKeys": ["02" + "22" * 32]},
    "MithrilRegistration": {"Topic": "33" * 32, "HttpHost": "127.0.0.1", "HttpPort": 8090},
}

EVERY_KEY_PARSED = {
    "ipv4": ipaddress.IPv4Address("192.0.2.10"),
    "ipv6": ipaddress.IPv6Address("2001:db8::10"),
    "port_number": 6161,
    "local_address": Path("/dmq/ipc/node.socket"),
    "network_magic": 2147483649,
    "cardano_network_magic": 1,
    "cardano_node_socket": Path("/ipc/node.socket"),
    "shelley_genesis_file": Path("preprod-shelley-genesis.json"),
    "shelley_genesis_hash": bytes.fromhex("162d29c4e1cf6b8a84f2d692e67a3ac6bc7851bc3e6e4afe64d15778bed8bd86"),
    "diffusion_mode": DiffusionMode.INITIATOR_ONLY,
    "peer_sharing": False,
    "ledger_peers": True,
    "target_number_of_root_peers": 1,
    "target_number_of_known_peers": 2,
    "target_number_of_established_peers": 3,
    "target_number_of_active_peers": 4,
    "target_number_of_known_big_ledger_peers": 6,
    "target_number_of_established_big_ledger_peers": 7,
    "target_number_of_active_big_ledger_peers": 8,
    "accepted_connections_limit": AcceptedConnectionsLimit(hard_limit=100, soft_limit=80, delay=2.5),
    "protocol_idle_timeout": 7.5,
    "churn_interval": 600.0,
    "trace_options_json": json.dumps(EVERY_KEY["TraceOptions"], separators=(",", ":")),
    "trace_option_metrics_prefix": "dmq_aggregator.",
    "min_sig_delay": 30.0,
    "stake_source": StakeSource(StakeSourceKind.FILE, Path("stake.json")),
    "database_path": Path("/var/lib/dmq"),
    "legacy_message_format": True,
    "legacy_reject_text": True,
    "record_traffic": Path("traffic"),
    "prometheus_port": 12801,
    "local_socket_mode": 0o600,
    "sig_submission_hold_after_known": 0.0,
    "sig_submission_hold_after_known_max": 0.25,
    "trace_only_reactions": True,
    "topics_carried": ("raw", "upsycle"),
    "mithril_network": False,
    "topic_token_bucket": TopicBucket(4, 2.5),
    "topic_budgets": (("blocklace", TopicBucket(16, 5.0)), ("dmsg", TopicBucket(2, 60.0))),
    "topic_kes_key": Path("kes.skey"),
    "topic_operational_certificate": Path("node.cert"),
    "topic_queue_limits": TopicQueueLimits(50, 4096),
    "topic_subscription_limits": TopicSubscriptionLimits(2, 10, 20, 4096, 8192, 0.25),
    "topic_key_limit": TopicKeyLimit(5, 60.0),
    "topic_publishers": TopicPublishers(frozenset({b"\x11" * 32}), frozenset({b"\x02" + b"\x22" * 32})),
}


def test_defaults_are_the_reference_table() -> None:
    defaults = NodeConfig()
    assert defaults.to_json() == REFERENCE_DEFAULTS
    assert set(config_keys()) == set(REFERENCE_DEFAULTS) | UNSET_BY_DEFAULT
    assert defaults.ipv4 is None and defaults.ipv6 is None
    assert defaults.shelley_genesis_hash is None
    assert defaults.config_file == Path("dmq.config.json")
    assert defaults.topology_file == Path("dmq.topology.json")
    assert defaults.stake_source.kind is StakeSourceKind.CARDANO_NODE
    assert defaults.min_sig_delay == DEFAULT_MIN_SIG_DELAY == 60
    assert defaults.trace_options == {}
    assert defaults.prometheus_endpoint is None


def test_a_missing_configuration_file_means_all_defaults(in_tmp: Path) -> None:
    config = read_config({})
    assert config == NodeConfig()
    assert not config.config_file_found


def test_every_key_is_parsed(in_tmp: Path) -> None:
    assert set(EVERY_KEY) == set(config_keys()), "a configuration key is missing from this test"
    write_json(in_tmp / "dmq.config.json", EVERY_KEY)
    config = read_config({})
    assert config.config_file_found
    parsed = {name: getattr(config, name) for name in EVERY_KEY_PARSED}
    assert parsed == EVERY_KEY_PARSED
    defaults = NodeConfig()
    unchanged = [name for name in EVERY_KEY_PARSED if getattr(defaults, name) == parsed[name]]
    assert unchanged == []
    assert config.trace_options == EVERY_KEY["TraceOptions"]


def test_to_json_reads_back_to_the_same_configuration(in_tmp: Path) -> None:
    write_json(in_tmp / "dmq.config.json", EVERY_KEY)
    config = read_config({})
    assert config.to_json() == EVERY_KEY
    write_json(in_tmp / "again.json", config.to_json())
    assert read_config({"ConfigFile": "again.json"}) == dataclasses.replace(config, config_file=Path("again.json"))


def test_unknown_keys_are_ignored_and_null_means_default(in_tmp: Path) -> None:
    write_json(
        in_tmp / "dmq.config.json",
        {"PeerSelectionCounters": True, "TargetOfRootPeers": 3, "PortNumber": None, "IPv4": None, "x": [1]},
    )
    assert read_config({}) == NodeConfig()


# (key, value in the file, flag text, value the flag gives)
FLAG_OVERRIDES = [
    ("IPv4", "192.0.2.1", "198.51.100.7", ipaddress.IPv4Address("198.51.100.7")),
    ("IPv6", "2001:db8::1", "::1", ipaddress.IPv6Address("::1")),
    ("PortNumber", 4000, "5000", 5000),
    ("LocalAddress", "file.socket", "flag.socket", Path("flag.socket")),
    ("NetworkMagic", 2147483650, "2147483690", 2147483690),
    ("CardanoNetworkMagic", 2, "42", 42),
    ("CardanoNodeSocket", "file/node.sock", "flag/node.sock", Path("flag/node.sock")),
    ("MinSigDelay", 30, "0.01s", 0.01),
    ("StakeSource", "pools.json", "genesis", StakeSource(StakeSourceKind.GENESIS)),
    ("DatabasePath", "file-db", "flag-db", Path("flag-db")),
    ("RecordTraffic", "file-rec", "flag-rec", Path("flag-rec")),
    ("PrometheusPort", 12800, "12900", 12900),
]


@pytest.mark.parametrize(("key", "file_value", "flag_text", "flag_value"), FLAG_OVERRIDES)
def test_file_over_defaults_and_flags_over_file(
    in_tmp: Path, key: str, file_value: object, flag_text: str, flag_value: object
) -> None:
    name = config_keys()[key]
    write_json(in_tmp / "dmq.config.json", {key: file_value})
    from_file = getattr(read_config({}), name)
    assert from_file != getattr(NodeConfig(), name)
    assert getattr(read_config({key: flag_text}), name) == flag_value
    assert flag_value != from_file


def test_the_configuration_file_flag_names_the_file(in_tmp: Path) -> None:
    write_json(in_tmp / "dmq.config.json", {"PortNumber": 1111})
    write_json(in_tmp / "etc" / "other.json", {"PortNumber": 2222})
    assert read_config({}).port_number == 1111
    config = read_config({"ConfigFile": "etc/other.json", "TopologyFile": "etc/topo.json"})
    assert config.port_number == 2222
    assert config.config_file == Path("etc/other.json")
    assert config.topology_file == Path("etc/topo.json")


def test_relative_paths_resolve_against_the_working_directory(in_tmp: Path) -> None:
    write_json(
        in_tmp / "node" / "config.dmq.json",
        {"CardanoNodeSocket": "ipc/node.sock", "StakeSource": "stake/pools.json"},
    )
    config = read_config({"ConfigFile": "node/config.dmq.json"})
    assert config.cardano_node_socket == Path("ipc/node.sock")
    assert config.stake_source.path == Path("stake/pools.json")
    config = dataclasses.replace(config, stake_source=StakeSource.parse("cardano-node"))
    (in_tmp / "node" / "ipc").mkdir()
    (in_tmp / "node" / "ipc" / "node.sock").touch()
    with pytest.raises(ConfigError):
        check_cardano_node_socket(config)  # not beside the configuration file
    (in_tmp / "ipc").mkdir()
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("ipc/node.sock")
        check_cardano_node_socket(config)  # beside the working directory


def test_mithril_devnet_configuration(in_tmp: Path, conformance_dir: Path) -> None:
    """The file ``mkfiles-dmq.sh`` writes for each devnet node, and its start command."""
    write_json(
        in_tmp / "node-pool1" / "config.dmq.json",
        {
            "NetworkMagic": 2147483690,
            "CardanoNodeSocket": "node-pool1/ipc/node.sock",
            "CardanoNetworkMagic": 42,
            "ShelleyGenesisFile": "node-pool1/shelley/genesis.json",
            "PeerSharing": True,
            "PeerSelectionCounters": True,
            "TraceOptions": {"": {"backends": ["Stdout MachineFormat"], "severity": "Debug"}},
        },
    )
    config = load_config(
        {
            "ConfigFile": "node-pool1/config.dmq.json",
            "TopologyFile": "node-pool1/topology.dmq.json",
            "LocalAddress": "node-pool1/ipc/dmq.node.sock",
            "IPv4": "127.0.0.1",
            "PortNumber": "4001",
            "MinSigDelay": "0.01s",
        }
    )
    assert network_by_dmq_magic(config.network_magic) == DEVNET
    assert config.cardano_network_magic == DEVNET.cardano
    genesis = json.loads((conformance_dir / "cardano-devnet" / "shelley-genesis.json").read_text())
    assert genesis["networkMagic"] == config.cardano_network_magic
    assert config.peer_sharing is True
    assert config.shelley_genesis_file == Path("node-pool1/shelley/genesis.json")
    assert config.local_address == Path("node-pool1/ipc/dmq.node.sock")
    assert (config.ipv4, config.port_number, config.min_sig_delay) == (ipaddress.IPv4Address("127.0.0.1"), 4001, 0.01)
    assert config.trace_options[""]["severity"] == "Debug"
    assert config.prometheus_endpoint is None


def test_no_bind_address_is_refused_with_the_reference_text(in_tmp: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config({})
    assert str(refused.value) == NO_ADDRESS_MESSAGE == (
        "no ipv4 or ipv6 address specified, use --host-addr or --host-ipv6-addr"
    )
    assert load_config({"IPv6": "::1"}).ipv6 == ipaddress.IPv6Address("::1")


def test_a_custom_min_sig_delay_is_refused_on_the_mainnet_dmq_network(in_tmp: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config({"IPv4": "127.0.0.1", "MinSigDelay": "0.01s"})
    message = str(refused.value)
    assert "2912307721" in message and "0.01s" in message and "\n" not in message
    assert load_config({"IPv4": "127.0.0.1", "MinSigDelay": "60s"}).min_sig_delay == 60
    preprod = load_config({"IPv4": "127.0.0.1", "MinSigDelay": "10", "NetworkMagic": "2147483649"})
    assert preprod.min_sig_delay == 10 and not preprod.uses_default_validation
    write_json(in_tmp / "dmq.config.json", {"MinSigDelay": 5})
    with pytest.raises(ConfigError):
        load_config({"IPv4": "127.0.0.1"})


def test_a_local_socket_path_too_long_for_a_unix_socket_is_refused(in_tmp: Path) -> None:
    long_path = "ipc/" + "s" * 120 + ".socket"
    with pytest.raises(ConfigError) as refused:
        load_config({"IPv4": "127.0.0.1", "LocalAddress": long_path})
    assert "LocalAddress" in str(refused.value) and "107" in str(refused.value)


def test_the_cardano_node_socket_is_checked_only_for_that_stake_source(in_tmp: Path) -> None:
    config = read_config({"CardanoNodeSocket": "missing/node.socket"})
    with pytest.raises(ConfigError) as refused:
        check_cardano_node_socket(config)
    message = str(refused.value)
    assert '"missing/node.socket"' in message and '"StakeSource": "genesis"' in message
    check_cardano_node_socket(dataclasses.replace(config, stake_source=StakeSource.parse("genesis")))
    check_cardano_node_socket(dataclasses.replace(config, stake_source=StakeSource.parse("pools.json")))
    (in_tmp / "missing" / "node.socket").mkdir(parents=True)
    with pytest.raises(ConfigError):
        check_cardano_node_socket(config)  # a directory is not the socket


@pytest.mark.parametrize(
    ("backend", "endpoint"),
    [
        ("PrometheusSimple 12798", PrometheusEndpoint("127.0.0.1", 12798, False)),
        ("PrometheusSimple nosuffix 12798", PrometheusEndpoint("127.0.0.1", 12798, True)),
        ("PrometheusSimple 0.0.0.0 12798", PrometheusEndpoint("0.0.0.0", 12798, False)),
        ("PrometheusSimple suffix 127.0.0.1 12800", PrometheusEndpoint("127.0.0.1", 12800, False)),
    ],
)
def test_metrics_endpoint_follows_the_trace_options_backend(in_tmp: Path, backend: str, endpoint: object) -> None:
    write_json(in_tmp / "dmq.config.json", {"TraceOptions": {"": {"backends": ["Stdout MachineFormat", backend]}}})
    assert read_config({}).prometheus_endpoint == endpoint
    assert read_config({"PrometheusPort": "9100"}).prometheus_endpoint == PrometheusEndpoint("127.0.0.1", 9100)


def test_trace_options_give_the_log_its_severities_and_format(in_tmp: Path) -> None:
    write_json(in_tmp / "dmq.config.json", {"TraceOptions": {
        "": {"severity": "Notice", "backends": ["EKGBackend", "Stdout HumanFormatUncoloured"]},
        "Net.Local.SigSubmission": {"severity": "Debug"},
        "Mempool": {"detail": "DNormal"}}})
    config = read_config({})
    assert config.trace_severities == {"": "Notice", "Net.Local.SigSubmission": "Debug"}
    assert config.trace_stdout_backend == "Stdout HumanFormatUncoloured"
    assert read_config({"ConfigFile": "absent.json"}).trace_stdout_backend is None


@pytest.mark.parametrize(
    ("text", "kind", "path"),
    [
        ("cardano-node", StakeSourceKind.CARDANO_NODE, None),
        ("genesis", StakeSourceKind.GENESIS, None),
        ("./genesis", StakeSourceKind.FILE, Path("genesis")),
        ("/srv/stake.json", StakeSourceKind.FILE, Path("/srv/stake.json")),
    ],
)
def test_stake_source_forms(text: str, kind: StakeSourceKind, path: Path | None) -> None:
    source = StakeSource.parse(text)
    assert (source.kind, source.path) == (kind, path)
    assert StakeSource.parse(str(source)) == source


def test_to_json_takes_whole_seconds_given_as_integers_in_code() -> None:
    """A configuration built in code (tests, the lab) may hold ``int`` seconds; the start-up
    line writes it as the file would, instead of failing the node's start."""
    config = dataclasses.replace(NodeConfig(), topic_key_limit=TopicKeyLimit(count=8, window_seconds=25))
    assert config.to_json()["TopicKeyLimit"] == {"Count": 8, "WindowSeconds": 25}
