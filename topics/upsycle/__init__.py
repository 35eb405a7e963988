"""UPSYCLE multicast routing over DMQ (docs/topics-design.md section 4)."""

from .adapter import PullStatus, UpsycleAdapter
from .params import TAG, UpsycleParams

__all__ = ["UpsycleAdapter", "UpsycleParams", "PullStatus", "TAG"]
