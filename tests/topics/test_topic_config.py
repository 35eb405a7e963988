"""The topic keys of the configuration: their forms, and one-line refusals of bad values."""

from __future__ import annotations

import json

import pytest

from dmq.config import (
    ConfigError,
    TopicBucket,
    TopicKeyLimit,
    TopicPublishers,
    TopicQueueLimits,
    TopicSubscriptionLimits,
    read_config,
)

GOOD = {
    "TopicQueueLimits": ({"MaxItems": 3, "MaxBytes": 48}, "topic_queue_limits", TopicQueueLimits(3, 48)),
    "TopicKeyLimit": ({"Count": 1, "WindowSeconds": 0.5}, "topic_key_limit", TopicKeyLimit(1, 0.5)),
    "TopicSubscriptionLimits": ({"Durable": 5, "DiskShare": 0.01}, "topic_subscription_limits",
                                TopicSubscriptionLimits(durable=5, disk_share=0.01)),
    "TopicBudgets": ({"dmsg": {"Capacity": 2, "RefillSeconds": 0.5}}, "topic_budgets",
                     (("dmsg", TopicBucket(2, 0.5)),)),
    "TopicPublishers": ({"UpsycleServices": ["AB" * 32]}, "topic_publishers",
                        TopicPublishers(frozenset({b"\xab" * 32}), None)),
}
BAD = [
    ("TopicQueueLimits", {"MaxItems": 2, "MaxBytes": 4096}),
    ("TopicQueueLimits", {"MaxItems": 10}),
    ("TopicQueueLimits", {"MaxItems": 10, "MaxBytes": 47}),
    ("TopicKeyLimit", {"Count": 0, "WindowSeconds": 600}),
    ("TopicSubscriptionLimits", {"Durable": 0}),
    ("TopicSubscriptionLimits", {"DiskShare": 0}),
    ("TopicSubscriptionLimits", {"DiskShare": 1.5}),
    ("TopicSubscriptionLimits", {"DurableQueueBytes": 4096, "DurableBytes": 1024}),
    ("TopicSubscriptionLimits", {"Durables": 10}),
    ("TopicKeyLimit", {"Count": 20, "WindowSeconds": 0}),
    ("TopicBudgets", {"dmsg": {"Capacity": 0, "RefillSeconds": 10}}),
    ("TopicBudgets", {"Blocklace": {"Capacity": 8, "RefillSeconds": 10}}),
    ("TopicBudgets", [{"Capacity": 8, "RefillSeconds": 10}]),
    ("TopicPublishers", {"UpsycleServices": ["ab" * 31]}),
    ("TopicPublishers", {"DmsgStaticKeys": ["ab" * 32]}),
    ("TopicPublishers", {"DmsgKeys": []}),
    ("TopicPublishers", ["ab" * 32]),
]


def _read(tmp_path, key, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({key: value}))
    return read_config({"ConfigFile": str(path)})


@pytest.mark.parametrize("key", GOOD)
def test_good_values(tmp_path, key):
    value, field, parsed = GOOD[key]
    config = _read(tmp_path, key, value)
    assert getattr(config, field) == parsed
    again = _read(tmp_path, key, config.to_json()[key])
    assert getattr(again, field) == parsed


@pytest.mark.parametrize(("key", "value"), BAD)
def test_bad_values_are_one_line_naming_the_key(tmp_path, key, value):
    with pytest.raises(ConfigError) as refused:
        _read(tmp_path, key, value)
    text = str(refused.value)
    assert "\n" not in text and f'"{key}" must be an object' in text


def test_defaults_are_the_specification_numbers():
    config = read_config({"ConfigFile": "/nonexistent/config.json"})
    assert config.topic_queue_limits == TopicQueueLimits(10_000, 64 << 20)
    assert config.topic_key_limit == TopicKeyLimit(20, 600.0)
    assert config.topic_subscription_limits == TopicSubscriptionLimits(16, 1024, 4096, 16 << 20, 1 << 30, 0.5)
    assert config.topic_publishers is None
    assert config.topic_token_bucket is None and config.topic_budgets is None   # the per-topic defaults
