"""Every bad configuration is one line naming the file (or flag), the key and the expected form."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmq.config import ConfigError, config_keys, read_config
from dmq.errors import OperatorError

from .conftest import write_json

FILE = "dmq.config.json"

# (key, bad value, exact message after "dmq.config.json: ")
BAD_FILE_VALUES = [
    ("PortNumber", "abc", '"PortNumber" must be an integer 0..65535, got "abc"'),
    ("PortNumber", 70000, '"PortNumber" must be an integer 0..65535, got 70000'),
    ("PortNumber", True, '"PortNumber" must be an integer 0..65535, got true'),
    ("NetworkMagic", -1, '"NetworkMagic" must be an integer 0..4294967295, got -1'),
    ("CardanoNetworkMagic", 2**32, '"CardanoNetworkMagic" must be an integer 0..4294967295, got 4294967296'),
    ("IPv4", "300.1.2.3", '"IPv4" must be an IPv4 address such as "192.0.2.1", got "300.1.2.3"'),
    ("IPv4", "::1", '"IPv4" must be an IPv4 address such as "192.0.2.1", got "::1"'),
    ("IPv6", "2001:db8::g", '"IPv6" must be an IPv6 address such as "2001:db8::1", got "2001:db8::g"'),
    ("LocalAddress", "", '"LocalAddress" must be a non-empty path string, got ""'),
    ("CardanoNodeSocket", 7, '"CardanoNodeSocket" must be a non-empty path string, got 7'),
    ("DiffusionMode", "Duplex", '"DiffusionMode" must be "InitiatorOnly" or "InitiatorAndResponder", got "Duplex"'),
    ("PeerSharing", "yes", '"PeerSharing" must be true or false, got "yes"'),
    ("LedgerPeers", 1, '"LedgerPeers" must be true or false, got 1'),
    ("TargetNumberOfRootPeers", -1, '"TargetNumberOfRootPeers" must be a non-negative integer, got -1'),
    ("TargetNumberOfActivePeers", 1.5, '"TargetNumberOfActivePeers" must be a non-negative integer, got 1.5'),
    (
        "AcceptedConnectionsLimit",
        {"hardLimit": 1},
        '"AcceptedConnectionsLimit" must be an object {"hardLimit": integer, "softLimit": integer, '
        '"delay": seconds}, got {"hardLimit": 1}',
    ),
    ("ProtocolIdleTimeout", -1, '"ProtocolIdleTimeout" must be a number of seconds >= 0, got -1'),
    ("ChurnInterval", "5s", '"ChurnInterval" must be a number of seconds >= 0, got "5s"'),
    ("MinSigDelay", "fast", '"MinSigDelay" must be a number of seconds >= 0, got "fast"'),
    ("ShelleyGenesisHash", "abc", '"ShelleyGenesisHash" must be 64 hexadecimal digits (a Blake2b-256 hash), got "abc"'),
    ("TraceOptions", [], '"TraceOptions" must be an object of trace-dispatcher options, got []'),
    (
        "TraceOptions",
        {"": {"backends": ["PrometheusSimple local host 80"]}},
        '"TraceOptions" must be a "PrometheusSimple [suffix|nosuffix] [host] port" backend, '
        'got "PrometheusSimple local host 80"',
    ),
    (
        "TraceOptions",
        {"Net": {"severity": "Verbose"}},
        '"TraceOptions" must be a severity among Debug, Info, Notice, Warning, Error, Critical, Alert, '
        'Emergency, Silence, got "Verbose"',
    ),
    (
        "TraceOptions",
        {"": {"backends": ["Stdout JsonFormat"]}},
        '"TraceOptions" must be a Stdout backend among Stdout MachineFormat, Stdout HumanFormatUncoloured, '
        'Stdout HumanFormatColoured, got "Stdout JsonFormat"',
    ),
    ("TraceOptionMetricsPrefix", 3, '"TraceOptionMetricsPrefix" must be a string, got 3'),
    ("StakeSource", 3, '"StakeSource" must be "cardano-node", "genesis" or the path of a JSON stake file, got 3'),
    ("DatabasePath", False, '"DatabasePath" must be a non-empty path string, got false'),
    ("LegacyMessageFormat", "no", '"LegacyMessageFormat" must be true or false, got "no"'),
    ("RecordTraffic", 1, '"RecordTraffic" must be a non-empty path string, got 1'),
    ("PrometheusPort", "9100", '"PrometheusPort" must be an integer 0..65535, got "9100"'),
    ("LocalSocketMode", 660, '"LocalSocketMode" must be an octal permission string such as "0660", got 660'),
    ("LocalSocketMode", "0999", '"LocalSocketMode" must be an octal permission string such as "0660", got "0999"'),
    ("TraceOnlyReactions", "true", '"TraceOnlyReactions" must be true or false, got "true"'),
    ("LocalIdleTimeout", 0, '"LocalIdleTimeout" must be a number of seconds > 0, got 0'),
]


@pytest.mark.parametrize(("key", "bad", "message"), BAD_FILE_VALUES)
def test_a_bad_value_in_the_file_names_file_key_and_form(in_tmp: Path, key: str, bad: Any, message: str) -> None:
    write_json(in_tmp / FILE, {"PortNumber": 3001, key: bad})
    with pytest.raises(ConfigError) as refused:
        read_config({})
    assert str(refused.value) == f"{FILE}: {message}"


@pytest.mark.parametrize("key", sorted(config_keys()))
def test_every_key_refuses_a_value_of_the_wrong_type(in_tmp: Path, key: str) -> None:
    write_json(in_tmp / FILE, {key: [3141]})
    with pytest.raises(ConfigError) as refused:
        read_config({})
    assert str(refused.value).startswith(f'{FILE}: "{key}" must be ')
    assert str(refused.value).endswith(", got [3141]")


# (flag key, bad text, exact message)
BAD_FLAG_VALUES = [
    ("PortNumber", "abc", '--port must be an integer 0..65535, got "abc"'),
    ("PortNumber", "-1", '--port must be an integer 0..65535, got "-1"'),
    ("IPv4", "1.2.3", '--host-addr must be an IPv4 address such as "192.0.2.1", got "1.2.3"'),
    ("IPv6", "1.2.3.4", '--host-ipv6-addr must be an IPv6 address such as "2001:db8::1", got "1.2.3.4"'),
    ("NetworkMagic", "mainnet", '--dmq-network-magic must be an integer 0..4294967295, got "mainnet"'),
    ("CardanoNetworkMagic", "4294967296", '--cardano-network-magic must be an integer 0..4294967295, got "4294967296"'),
    ("MinSigDelay", "1m", '--min-sig-delay must be a number of seconds >= 0, got "1m"'),
    ("PrometheusPort", "http", '--prometheus-port must be an integer 0..65535, got "http"'),
    ("LocalAddress", "", '--local-socket must be a non-empty path string, got ""'),
    ("ConfigFile", "", '--configuration-file must be a non-empty path string, got ""'),
]


@pytest.mark.parametrize(("key", "bad", "message"), BAD_FLAG_VALUES)
def test_a_bad_flag_value_names_the_flag(in_tmp: Path, key: str, bad: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        read_config({key: bad})
    assert str(refused.value) == message


def test_a_flag_value_wins_even_over_a_bad_file_value(in_tmp: Path) -> None:
    write_json(in_tmp / FILE, {"PortNumber": "abc"})
    assert read_config({"PortNumber": "3001"}).port_number == 3001


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"PortNumber": 3001,}', f"{FILE}: invalid JSON at line 1 column 21: Expecting property name enclosed in double quotes"),
        (b"[1, 2]", f"{FILE}: the configuration file must hold a JSON object, got an array"),
        (b'"PortNumber"', f"{FILE}: the configuration file must hold a JSON object, got a string"),
        (b"", f"{FILE}: invalid JSON at line 1 column 1: Expecting value"),
    ],
)
def test_an_invalid_file_is_one_line_naming_it(in_tmp: Path, content: bytes, message: str) -> None:
    (in_tmp / FILE).write_bytes(content)
    with pytest.raises(ConfigError) as refused:
        read_config({})
    assert str(refused.value) == message


def test_an_unreadable_file_is_named(in_tmp: Path) -> None:
    (in_tmp / "conf.d").mkdir()
    with pytest.raises(ConfigError) as refused:
        read_config({"ConfigFile": "conf.d"})
    assert str(refused.value) == "conf.d: cannot read the configuration file: Is a directory"


def test_configuration_errors_are_operator_errors() -> None:
    assert issubclass(ConfigError, OperatorError)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@given(key=st.sampled_from(sorted(config_keys())), value=json_values)
def test_any_value_for_any_key_loads_or_is_one_line_naming_the_key(key: str, value: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / FILE
        path.write_text(json.dumps({key: value}))
        try:
            config = read_config({"ConfigFile": str(path)})
        except ConfigError as exc:
            message = str(exc)
            assert message.startswith(f'{path}: "{key}" must be ') and "\n" not in message
        else:
            assert config.config_file_found
            if value is not None:
                assert config.to_json().get(key) is not None
