"""Building a node's topic service from its configuration (docs/topics-design.md 2.1, 2.7).

Called by the composition root (:mod:`dmq.cli.wiring`) only when the configuration carries an
adapter; a raw-only instance keeps the reference's behaviour and classifies nothing (docs/topics-design.md 2.1).
Errors are one line naming the key (``OperatorError``).
"""

from __future__ import annotations

from typing import Any

from dmq.config import NodeConfig
from dmq.errors import OperatorError
from dmq.keyfiles import KeyFileError
from dmq.stake import load_shelley_genesis

from .bucket import BucketPolicy, TokenBucket, budgets_for
from .carried import RAW, CarriedSet, TopicConfigError, carried_set
from .classify import ADAPTER_TAGS
from .registry import build_adapter
from .service import TopicService, build_topic_service
from .signer import NodeSigner, SigningError
from .disk import DiskGuard
from .subscriptions import QueueLimits

__all__ = ["topic_service_for", "signer_for", "TopicSignerError"]


class TopicSignerError(OperatorError):
    """The signer files of a topic node cannot be used."""


def signer_for(config: NodeConfig, clock: Any) -> NodeSigner | None:
    """The node's signer from ``TopicKesKey`` and ``TopicOperationalCertificate`` (both or none)."""
    kes, cert = config.topic_kes_key, config.topic_operational_certificate
    if kes is None and cert is None:
        return None
    if kes is None or cert is None:
        raise TopicSignerError('"TopicKesKey" and "TopicOperationalCertificate" go together: set both or neither')
    from dmq.kes_period import GenesisClockKesPeriod, KesPeriodUnavailable

    try:
        genesis = load_shelley_genesis(config.shelley_genesis_file)
        periods = GenesisClockKesPeriod.from_genesis(genesis, clock)
        return NodeSigner.from_files(kes, cert, periods, clock)
    except (KeyFileError, SigningError, KesPeriodUnavailable) as exc:
        raise TopicSignerError(f'"TopicKesKey" / "TopicOperationalCertificate": {exc}') from None


def _policy(bucket: Any) -> BucketPolicy:
    return BucketPolicy(bucket.capacity, bucket.refill_seconds)


def _budgets(config: NodeConfig, carried: CarriedSet) -> TokenBucket:
    """The pool buckets of every carried topic: ``TopicBudgets`` entries, else ``TopicTokenBucket``
    for all, else the defaults of :mod:`topics.bucket`."""
    configured = {name: _policy(b) for name, b in config.topic_budgets or ()}
    known = {RAW, *ADAPTER_TAGS}
    for name in configured:
        if name not in known:
            raise TopicConfigError(f'"TopicBudgets": unknown topic {name!r}; known: {", ".join(sorted(known))}')
    every = None if config.topic_token_bucket is None else _policy(config.topic_token_bucket)
    policies = budgets_for(sorted(carried.names), configured, every)
    return TokenBucket(every or BucketPolicy(), policies)


def topic_service_for(config: NodeConfig, mempool: Any, validator: Any, tracer: Any, *, clock: Any,
                      stake_view: Any, allow_legacy: bool, reactions: Any) -> TopicService:
    known = [name for name in config.topics_carried if name != "raw"]
    mithril = {config.network_magic} if config.is_mithril_network else set()
    carried = carried_set(config.topics_carried, config.network_magic, mithril_magics=mithril, known=known)
    signer = signer_for(config, clock)
    publishers = config.topic_publishers
    adapters = [build_adapter(name, network_magic=config.network_magic, can_publish=signer is not None,
                              stake_of=stake_view.set_stake_at,
                              stake_epochs=lambda: stake_view.snapshot_epochs,
                              services=publishers and publishers.upsycle_services,
                              allowed_keys=publishers and publishers.dmsg_static_keys)
                for name in sorted(carried.adapters)]
    bucket = _budgets(config, carried)
    queues = QueueLimits(config.topic_queue_limits.max_items, config.topic_queue_limits.max_bytes)
    key_limit = (config.topic_key_limit.count, config.topic_key_limit.window_seconds)
    caps = config.topic_subscription_limits
    store = mempool.store
    disk = DiskGuard(store.env, store.open_db, store.path, caps.disk_share)
    return build_topic_service(mempool, validator, tracer, adapters=adapters, carried=carried,
                               network_magic=config.network_magic, bucket=bucket, signer=signer,
                               allow_legacy=allow_legacy, reactions=reactions, queue_limits=queues,
                               per_key=key_limit, caps=caps, disk=disk)
