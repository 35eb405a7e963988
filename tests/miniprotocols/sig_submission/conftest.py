"""Fixtures of the sig-submission tests: both versions, by their dialects."""

from __future__ import annotations

import pytest

from miniprotocols import sig_submission_v1, sig_submission_v2


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def dialect(request):
    return {1: sig_submission_v1.DIALECT, 2: sig_submission_v2.DIALECT}[request.param]
