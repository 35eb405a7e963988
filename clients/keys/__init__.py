"""Stake pool key files for DMQ: generate a devnet pool, rotate its KES key, name its pool id."""

from .pool import (
    GeneratedPool,
    KeyToolError,
    PoolIdentity,
    PoolKeyPaths,
    RotatedKesKey,
    generate_pool,
    pool_identity,
    rotate_kes_key,
)

__all__ = [
    "GeneratedPool",
    "KeyToolError",
    "PoolIdentity",
    "PoolKeyPaths",
    "RotatedKesKey",
    "generate_pool",
    "pool_identity",
    "rotate_kes_key",
]
