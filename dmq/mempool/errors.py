"""Typed failures of the mempool and its store.

Callers react differently to each: a duplicate is a validation outcome (``SigDuplicate``),
a write failure means nothing was acknowledged, a store in an unknown format is an operator
problem at start-up, and a corrupt record is reported and skipped so one bad page never
keeps a node down.
"""

from __future__ import annotations

__all__ = [
    "MempoolError",
    "DuplicateMessageError",
    "MempoolWriteError",
    "MempoolNotRunningError",
    "MempoolStoreFormatError",
    "CorruptRecordWarning",
]


class MempoolError(Exception):
    """Base class of every mempool failure."""


class DuplicateMessageError(MempoolError):
    """An appended message has an id already held (or repeated inside the batch).

    The validation pipeline checks ``contains`` first (docs/protocol/validation.md 6.1 step 2), so reaching this
    means a caller skipped the duplicate check; nothing of the batch was appended.
    """

    def __init__(self, message_id: bytes) -> None:
        super().__init__(f"message {message_id.hex()} is already in the mempool; nothing of the batch was appended")
        self.message_id = message_id


class MempoolWriteError(MempoolError):
    """The write transaction holding these messages failed: none of them was acknowledged.

    The messages were withdrawn from the mempool again, so a retry is not a duplicate.
    """


class MempoolNotRunningError(MempoolError):
    """``submit`` was awaited while no writer task is running (see ``DurableMempool.run``)."""


class MempoolStoreFormatError(MempoolError):
    """The LMDB directory holds data this version does not understand; refusing to touch it."""


class CorruptRecordWarning(RuntimeWarning):
    """A stored record failed its checksum or could not be decoded at load; it was dropped and deleted."""
