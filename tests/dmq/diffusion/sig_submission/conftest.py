"""Both sig-submission versions, by the same fixture as the protocol's own tests."""

from tests.miniprotocols.sig_submission.conftest import dialect  # noqa: F401  (a fixture)
