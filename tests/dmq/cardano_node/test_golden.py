"""The query encoders and result decoders against ouroboros-consensus's golden files: bytes
written by the Haskell encoders cardano-node uses, not by this project (``golden/README.md``
says where each file comes from). Expected values are read from the files with cbor2 and
from the consensus examples they were written from, never by re-encoding with our code."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import cbor2
import pytest

from miniprotocols.local_state_query import (
    Bound,
    Era,
    EraMismatch,
    EraParams,
    EraSummary,
    Interpreter,
    QueryIfCurrent,
    SystemStart,
    decode_epoch_no,
    decode_interpreter,
    encode_interpreter,
    get_epoch_no,
    get_interpreter,
    parse_query,
    unwrap_if_current,
)
from ouroboros_mux.cbor import CborError

from .cddl import cardano_query_rules

GOLDEN = Path(__file__).parent / "golden"
#: ``Query.BlockQuery``: the golden ``Query_*`` files are the block query inside it.
BLOCK_QUERY = bytes.fromhex("8200")
PS = 10**12


def golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


# -- queries --------------------------------------------------------------------------------


@pytest.mark.parametrize("era", [era for era in Era if era is not Era.BYRON], ids=lambda era: era.display_name)
def test_get_epoch_no_is_the_consensus_encoding_in_every_shelley_era(era):
    raw = golden(f"Query_{era.display_name}_GetEpochNo")
    assert get_epoch_no(era) == BLOCK_QUERY + raw
    assert parse_query(BLOCK_QUERY + raw) == QueryIfCurrent(era, 1)
    cardano_query_rules().check(BLOCK_QUERY + raw, "dmqQuery")


def test_get_interpreter_is_the_consensus_encoding():
    assert get_interpreter() == BLOCK_QUERY + golden("Query_HardFork")


# -- QueryIfCurrent results -----------------------------------------------------------------


def test_epoch_no_result():
    raw = golden("Result_Conway_EpochNo")
    [expected] = cbor2.loads(raw)
    assert expected == 10
    assert decode_epoch_no(unwrap_if_current(raw)) == expected
    cardano_query_rules().check(raw, "epochNoResult")


@pytest.mark.parametrize("name, query_era, ledger_era", [
    ("Result_EraMismatchByron", (1, "Shelley"), (0, "Byron")),     # a Shelley query, a Byron ledger
    ("Result_EraMismatchShelley", (0, "Byron"), (1, "Shelley")),   # a Byron query, a Shelley ledger
])
def test_era_mismatch_results(name, query_era, ledger_era):
    raw = golden(name)
    assert [tuple(info) for info in cbor2.loads(raw)] == [query_era, ledger_era]
    with pytest.raises(EraMismatch) as mismatch:
        unwrap_if_current(raw)
    error = mismatch.value
    assert (error.query_era, error.query_era_name) == query_era
    assert (error.ledger_era, error.ledger_era_name) == ledger_era
    cardano_query_rules().check(raw, "epochNoResult")
    cardano_query_rules().check(raw, "stakeSnapshotsResult")


# -- GetInterpreter -------------------------------------------------------------------------


def _expected_history(items: list) -> Interpreter:
    """The history as cbor2 reads it, built field by field (bounds of 3 or 4 items)."""

    def bound(b: list) -> Bound:
        return Bound(b[0], b[1], b[2], b[3] if len(b) == 4 else None)

    eras = []
    for start, end, params in items:
        epoch_size, slot_ms, safe_zone, window = params
        assert safe_zone[0] == 0 and safe_zone[2] == [0]     # a standard safe zone
        eras.append(EraSummary(bound(start), None if end is None else bound(end),
                               EraParams(epoch_size, slot_ms, safe_zone[1], window)))
    return Interpreter(tuple(eras))


@pytest.mark.parametrize("name", ["Result_HardFork", "three-item-bounds/Result_HardFork"])
def test_interpreter_result(name):
    raw = golden(name)
    assert raw[0] == 0x9F                       # consensus writes the era list indefinite
    history = decode_interpreter(raw)
    assert history == _expected_history(cbor2.loads(raw))
    # The example chain (Test.Consensus.Cardano.Examples): Byron epochs 0..9 of 100 slots of
    # 7 s, Shelley from epoch 10 (slot 1000, 7000 s) with 100 slots of 2 s, known to epoch 11.
    byron, shelley = history.eras
    assert (byron.start.epoch, byron.end.epoch, byron.end.slot, byron.end.time_ps) == (0, 10, 1000, 7000 * PS)
    assert (byron.params.epoch_size, byron.params.slot_length_ms) == (100, 7000)
    assert (shelley.start, shelley.end.epoch, shelley.end.time_ps) == (byron.end, 11, 7200 * PS)
    assert (shelley.params.epoch_size, shelley.params.slot_length_ms) == (100, 2000)
    # When each epoch ends, as the reference computes it before sleeping.
    assert history.epoch_end(0) == 700 * PS
    assert history.epoch_end(9) == 7000 * PS               # the Byron-Shelley boundary
    assert history.epoch_end(10) == 7200 * PS              # 100 Shelley slots of 2 s later
    assert history.epoch_end(11) is None                   # past the horizon
    cardano_query_rules().check(raw, "interpreterResult")


def test_the_test_peer_writes_the_interpreter_as_consensus_does():
    raw = golden("Result_HardFork")
    assert encode_interpreter(decode_interpreter(raw)) == raw
    legacy = golden("three-item-bounds/Result_HardFork")
    assert encode_interpreter(decode_interpreter(legacy)) == legacy


def test_a_mainnet_history_with_bignum_times():
    """Mainnet's Shelley era starts 89 856 000 s after the system start: beyond 2**64 ps."""
    shelley_ps = 89_856_000 * PS
    assert shelley_ps > 2**64
    items = [
        [[0, 0, 0], [shelley_ps, 4_492_800, 208], [21_600, 20_000, [0, 4_320, [0]], 4_320]],
        [[shelley_ps, 4_492_800, 208], None, [432_000, 1_000, [0, 129_600, [0]], 129_600]],
    ]
    raw = cbor2.dumps(items)                    # cbor2 writes the big time as tag 2
    assert bytes.fromhex("c249") in raw
    history = decode_interpreter(raw)
    assert history == _expected_history(items)
    assert history.eras[1].end is None
    cardano_query_rules().check(raw, "interpreterResult")
    start = SystemStart.from_datetime(datetime(2017, 9, 23, 21, 44, 51, tzinfo=timezone.utc)).to_datetime()
    assert start + timedelta(microseconds=history.epoch_end(207) // 10**6) == \
        datetime(2020, 7, 29, 21, 44, 51, tzinfo=timezone.utc)               # the Shelley hard fork
    assert start + timedelta(microseconds=history.epoch_end(500) // 10**6) == \
        datetime(2024, 8, 2, 21, 44, 51, tzinfo=timezone.utc)
    assert history.epoch_end(10**6) is not None  # an open-ended last era has no horizon


@pytest.mark.parametrize("items, why", [
    ([], "no era"),
    ([[[0, 0], None, [100, 1000, [1], 10]]], "a bound of two items"),
    ([[[0, 0, 0], None, [100, 1000, [2], 10]]], "an unknown safe zone"),
    ([[[0, 0, 0], None, [100, 1000, [0, 5, [3]], 10]]], "an unknown safe-before-epoch"),
    ([[[0, 0, 0], None, [0, 1000, [1], 10]]], "epochs of no slots"),
    ([[[0, 0, 0], None, [100, 1000, [1]]]], "parameters of three items"),
    ([[[0, 0, 0], None]], "an era of two items"),
])
def test_malformed_histories_are_refused(items, why):
    with pytest.raises(CborError):
        decode_interpreter(cbor2.dumps(items))
