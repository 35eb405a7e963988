"""Adapter lookup by name: ``topics.<name>.adapter`` defines a :class:`TopicAdapter` subclass.

The node builds the adapters its carried set names. Construction passes only the keyword
arguments an adapter's constructor declares among the instance facts (network magic,
whether the node can sign, the stake lookup), so adapters keep their own defaults.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from .adapter import TopicAdapter
from .carried import TopicConfigError

__all__ = ["adapter_class", "build_adapter"]


def adapter_class(name: str) -> type[TopicAdapter]:
    try:
        module = importlib.import_module(f"topics.{name}.adapter")
    except ImportError as exc:
        raise TopicConfigError(f'"TopicsCarried": adapter {name!r} is not available in this build ({exc})') from None
    for value in vars(module).values():
        if inspect.isclass(value) and issubclass(value, TopicAdapter) and value.name == name:
            return value
    raise TopicConfigError(f'"TopicsCarried": module topics.{name}.adapter defines no adapter named {name!r}')


def build_adapter(name: str, **facts: Any) -> TopicAdapter:
    cls = adapter_class(name)
    accepted = inspect.signature(cls).parameters
    return cls(**{k: v for k, v in facts.items() if k in accepted and v is not None})
