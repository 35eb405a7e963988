"""Fixtures of the sig-submission tests: both versions, by their dialects."""

from __future__ import annotations

import pytest

from miniprotocols import sig_submission_v1, sig_submission_v2
from ouroboros_mux.channel import memory_channel_pair

from .helpers import mux_channel_pair


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def dialect(request):
    return {1: sig_submission_v1.DIALECT, 2: sig_submission_v2.DIALECT}[request.param]


@pytest.fixture(params=["memory", "mux"])
def channels(request, nursery):
    """How a test connects a pulling and a serving peer: ``channels(dialect)`` is ``(pulling's, serving's)``.

    ``memory``: in-memory channels, each peer runs in its own task. ``mux``: two real muxes over an
    in-memory byte stream, each peer run from its mux reader where it can be.
    """
    if request.param == "memory":
        return lambda dialect: memory_channel_pair(11)
    return lambda dialect: mux_channel_pair(dialect, nursery)
