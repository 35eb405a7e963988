from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import Driver


@pytest.fixture
def make_driver(tmp_path: Path) -> Iterator:
    drivers: list[Driver] = []

    def make(name: str = "node", **adapter_args) -> Driver:
        driver = Driver(tmp_path / name, **adapter_args)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        driver.close()


@pytest.fixture
def driver(make_driver) -> Driver:
    return make_driver()
