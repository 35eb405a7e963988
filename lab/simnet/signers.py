"""The Mithril signers of a simulated registration run: their keys, registrations and send times.

Each signer is a stake pool (its cold key, a Sum6 KES key at period 0 and an operational
certificate starting there, derived from the run's seed and made once per pool) that registers
a fresh BLS key every epoch, the way a mithril-signer does
(:func:`apps.mithril_registration.build.build_registration`). A signer of registration epoch
``R`` sends during Cardano epoch ``R - 1`` (docs/mithril-registration.md 5), through one of
the nodes that may publish in the registration topic (its **home**): signer ``k`` of ``S`` is
sent ``spread * k / S`` of an epoch after it began, so the round's registrations come at a
steady rate over that part of the epoch. An **equivocating** signer registers two different
keys for one epoch through two different nodes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from apps.mithril_registration.build import GROUP_ORDER, BlsKey, Pool, build_registration
from apps.mithril_registration.message import SignerRegistration
from lab.devnet.pools import derive_seed

__all__ = ["MithrilSigner", "make_signers", "sends"]

#: The signers' pools: their seeds' role names, apart from the nodes' own pools.
_COLD, _KES, _BLS = "mithril-signer-cold", "mithril-signer-kes", "mithril-signer-bls"


@dataclass(frozen=True, slots=True)
class MithrilSigner:
    index: int
    pool: Pool
    seed: int
    equivocates: bool = False

    @property
    def pool_id(self) -> bytes:
        return self.pool.pool_id

    def registration(self, epoch: int, variant: int = 0) -> SignerRegistration:
        """This signer's registration for ``epoch`` (``variant`` 1: an equivocator's second key),
        KES-signed at period 0, where its certificate starts."""
        return build_registration(self.pool, self._key(epoch, variant), epoch=epoch, current_kes_period=0)

    def _key(self, epoch: int, variant: int) -> BlsKey:
        digest = hashlib.blake2b(derive_seed(self.seed, self.index, _BLS) + f"/{epoch}/{variant}".encode(),
                                 digest_size=32).digest()
        return BlsKey.generate(1 + int.from_bytes(digest, "big") % (GROUP_ORDER - 1))


def make_signers(count: int, equivocators: int, seed: int) -> list[MithrilSigner]:
    """``count`` signers, the last ``equivocators`` of them equivocating (about 2 ms each: one KES key)."""
    return [MithrilSigner(i, Pool.create(derive_seed(seed, i, _COLD), derive_seed(seed, i, _KES), start_kes_period=0),
                          seed, equivocates=i >= count - equivocators)
            for i in range(count)]


def sends(signers: list[MithrilSigner], homes: int, epoch_start: float, epoch_length: float,
          spread: float) -> Iterator[tuple[float, MithrilSigner, int, int]]:
    """``(virtual time, signer, home, variant)`` of every registration sent in one epoch, in time
    order: signer ``k`` at home ``k % homes``; an equivocator's second key at the next home."""
    count = len(signers)
    for k, signer in enumerate(signers):
        at = epoch_start + spread * epoch_length * k / count
        yield at, signer, k % homes, 0
        if signer.equivocates:
            yield at, signer, (k + 1) % homes, 1
