"""A signer's side: publish a registration through the signer's own node (docs/mithril-registration.md 8.1).

The node's pool signs the block (the node is its pool's Blocklace creator); the registration
inside is the signer's, authenticated by its own KES signature and operational certificate,
so any publisher of the topic may carry it.
"""

from __future__ import annotations

from typing import Any

from clients.topics import event_draft

from .events import registration_event
from .message import SignerRegistration

__all__ = ["publish_registration"]


async def publish_registration(conn: Any, topic: bytes, registration: SignerRegistration) -> Any:
    """Publish ``registration`` in ``topic`` over ``conn`` (a :class:`clients.topics.TopicConnection`);
    the node's ``MsgPublished``. Raises :class:`~.errors.RegistrationRefused` before sending
    anything when a key does not decode or the party id names another pool."""
    return await conn.ask(conn.topics.publish(event_draft(topic, registration_event(registration))))
