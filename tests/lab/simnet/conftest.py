"""The simulation's own virtual clock: the links book their arrivals with it."""

from __future__ import annotations

import pytest

from lab.simnet.checks import VirtualClock


@pytest.fixture
def virtual_clock() -> VirtualClock:
    return VirtualClock()
