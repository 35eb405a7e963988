"""UPSYCLE multicast routing over DMQ (TOPICS.md section 4)."""

from .adapter import PullStatus, UpsycleAdapter
from .params import TAG, UpsycleParams

__all__ = ["UpsycleAdapter", "UpsycleParams", "PullStatus", "TAG"]
