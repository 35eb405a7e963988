"""docs/operations.md stays true where it states a format: its stake file example is one the node
reads, with the meaning the text gives it."""

from __future__ import annotations

import json
import re

from dmq.clock import ManualClock
from dmq.stake import Eligibility, PoolStake, StakeView, parse_pool_id
from tests.conftest import ROOT

DOC = ROOT / "docs" / "operations.md"


def _stake_file_example() -> str:
    section = DOC.read_text().split("\n## Stake file\n", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"^```json\n(.*?)^```", section, flags=re.M | re.S)
    return example


def test_the_stake_file_example_is_read_as_documented(tmp_path):
    path = tmp_path / "stake.json"
    path.write_text(_stake_file_example())
    view = StakeView.from_json(path, ManualClock(now=0.0))
    assert view.ready and view.epoch == 512
    assert (view.max_kes_evolutions, view.slots_per_kes_period) == (62, 129600)
    detailed, shorthand = (parse_pool_id(key) for key in json.loads(path.read_text())["pools"])
    assert view.pools[detailed] == PoolStake(3_000_000, 2_000_000, 1_000_000)
    assert view.pools[shorthand] == PoolStake(1_000_000, 1_000_000, 1_000_000)
    assert view.eligibility(bytes(28)) is Eligibility.UNRECOGNIZED
