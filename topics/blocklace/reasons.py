"""The Blocklace reject reasons, codes 32 to 47 (docs/topics-design.md 5.10)."""

from __future__ import annotations

from topics.reasons import adapter_reason

_A = "blocklace"

NOT_PUBLISHER = adapter_reason(_A, 32, "not_publisher")
PERMISSION_DENIED = adapter_reason(_A, 33, "permission_denied")
NO_ADVERTISEMENT = adapter_reason(_A, 34, "no_advertisement")
STALE_ADVERTISEMENT = adapter_reason(_A, 35, "stale_advertisement")
BAD_OWNER_SIGNATURE = adapter_reason(_A, 36, "bad_owner_signature")
BAD_AD_VERSION = adapter_reason(_A, 37, "bad_ad_version")
BAD_SELF_PARENT = adapter_reason(_A, 38, "bad_self_parent")
TOO_MANY_POINTERS = adapter_reason(_A, 39, "too_many_pointers")
BAD_FLOOR = adapter_reason(_A, 40, "bad_floor")
UNJUSTIFIED_EPOCH = adapter_reason(_A, 41, "unjustified_epoch")
EPOCH_CLOSED = adapter_reason(_A, 42, "epoch_closed")
EQUIVOCATOR_EXCLUDED = adapter_reason(_A, 43, "equivocator_excluded")
TOPIC_CONFLICTED = adapter_reason(_A, 44, "topic_conflicted")
BAD_CARRIED_MESSAGE = adapter_reason(_A, 45, "bad_carried_message")
INVALID_ANCESTOR = adapter_reason(_A, 46, "invalid_ancestor")
STALE_STAKE_SNAPSHOT = adapter_reason(_A, 47, "stale_stake_snapshot")


class BlocklaceReject(ValueError):
    """A Blocklace message refused with ``reason`` (a core or a Blocklace reason)."""

    def __init__(self, reason, detail: str = "") -> None:
        super().__init__(f"{reason.name}: {detail}" if detail else reason.name)
        self.reason = reason
        self.detail = detail
