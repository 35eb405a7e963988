"""Diffusion's timings and retry rules, as one value the node passes in.

The wire-level limits (windows, byte and time limits of each state) belong to the
protocols and are not tunable; what is here is the node's own behaviour around them:
how long to wait for a TCP connect, how often to ping, how fast to retry a peer that
failed, how often to ask for more peers. The defaults are the reference node's where it
has one; tests shorten them to run in seconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from miniprotocols.keep_alive import KEEP_ALIVE_INTERVAL

from .sig_submission import BLOCKING_REPLY_TIMEOUT

__all__ = ["BackoffPolicy", "DiffusionPolicy"]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Exponential back-off with jitter between attempts to reach a failing peer.

    The n-th failure in a row waits ``min(cap, base * 2**(n-1))`` seconds, less a random
    share of up to ``jitter`` of it, so peers that failed together (a partition, a
    restart) do not all come back in the same instant. A connection that stayed up for
    ``stable_after`` seconds clears the count: the next failure starts from ``base``
    again. A peer that is not a root (learnt by peer sharing) is forgotten after
    ``forget_after`` failures in a row (the reference retries a peer five times).
    """

    base: float = 1.0
    cap: float = 60.0
    jitter: float = 0.5
    stable_after: float = 30.0
    forget_after: int = 5

    def __post_init__(self) -> None:
        if self.base <= 0 or self.cap < self.base:
            raise ValueError(f"back-off needs 0 < base <= cap, got base {self.base}, cap {self.cap}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter is a fraction in [0, 1), got {self.jitter}")
        if self.forget_after < 1:
            raise ValueError(f"forget_after must be at least 1, got {self.forget_after}")

    def delay(self, failures: int, rng: random.Random) -> float:
        """Seconds to wait after ``failures`` (>= 1) failures in a row."""
        if failures < 1:
            raise ValueError(f"a back-off follows at least one failure, got {failures}")
        ceiling = min(self.cap, self.base * 2.0 ** min(failures - 1, 60))
        return ceiling * (1.0 - self.jitter * rng.random())


@dataclass(frozen=True, slots=True)
class DiffusionPolicy:
    """The node's diffusion timings (seconds)."""

    #: A TCP connect to a peer must complete within this (the handshake has its own 10 s).
    connect_timeout: float = 10.0
    #: Pause between keep-alive round trips (the reference's 10 s).
    keep_alive_interval: float = KEEP_ALIVE_INTERVAL
    #: V2 outbound: how long a blocking request waits before ``MsgReplyNoSigIds`` (reference 17 s, < 20 s).
    blocking_reply_timeout: float = BLOCKING_REPLY_TIMEOUT
    #: Least time between two peer-sharing requests on one connection (reference retry: 900 s).
    peer_share_interval: float = 900.0
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    #: Seed of the governor's jitter (None: from the system); tests fix it.
    seed: int | None = None
    #: Node-to-node versions offered and accepted. Both by default, like the reference; ``{1}``
    #: makes the node behave as a release that only knows V1, to run a mixed-version network.
    versions: frozenset[int] = frozenset({1, 2})

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "keep_alive_interval", "blocking_reply_timeout", "peer_share_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.versions or not self.versions <= {1, 2}:
            raise ValueError(f"node-to-node versions are a non-empty subset of {{1, 2}}, got {set(self.versions)}")
        if self.blocking_reply_timeout >= 20.0:
            raise ValueError("the V2 outbound must answer a blocking request before the peer's 20 s limit, "
                             f"got {self.blocking_reply_timeout}")
