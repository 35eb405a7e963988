"""Version data decoding (with the reference's failure texts), agreement rules and network magics."""

from __future__ import annotations

import pytest

from handshake import (DMQ_MAINNET_MAGIC, NETWORK_MAGICS, NodeToClientVersionData, NodeToNodeVersionData,
                       VersionDataError, VersionDataMismatch, acceptable, network_magics)
from handshake.term_text import haskell_string, show_term


def test_network_magics_of_wire_4_6():
    table = {name: (m.dmq, m.cardano) for name, m in NETWORK_MAGICS.items()}
    assert table == {
        "mainnet": (2912307721, 764824073),
        "preprod": (2147483649, 1),
        "preview": (2147483650, 2),
        "devnet": (2147483690, 42),
    }
    # The Mithril convention the table follows: DMQ magic = Cardano magic + 2**31.
    assert all(m.dmq == m.cardano + 2**31 for m in NETWORK_MAGICS.values())
    with pytest.raises(KeyError, match="unknown network 'sanchonet': expected one of mainnet"):
        network_magics("sanchonet")


@pytest.mark.parametrize("hex_data, expected", [
    ("841aad964a09f401f4", NodeToNodeVersionData(DMQ_MAINNET_MAGIC, False, True, False)),
    ("841aad964a09f500f5", NodeToNodeVersionData(DMQ_MAINNET_MAGIC, True, False, True)),
    ("8400f400f4", NodeToNodeVersionData(0, False, False, False)),
    ("841affffffff f401f4".replace(" ", ""), NodeToNodeVersionData(2**32 - 1, False, True, False)),
    # cborg reads any integer width.
    ("841b00000000ad964a09f401f4", NodeToNodeVersionData(DMQ_MAINNET_MAGIC, False, True, False)),
])
def test_n2n_data_decodes(hex_data, expected):
    assert NodeToNodeVersionData.from_cbor(bytes.fromhex(hex_data)) == expected


@pytest.mark.parametrize("hex_data, text", [
    ("9f1aad964a09f401f4ff", "unknown encoding: TListI [TInt 2912307721,TBool False,TInt 1,TBool False]"),
    ("831aad964a09f401", "unknown encoding: TList [TInt 2912307721,TBool False,TInt 1]"),
    ("841aad964a09f4f5f4", "unknown encoding: TList [TInt 2912307721,TBool False,TBool True,TBool False]"),
    ("841aad964a0901 01f4".replace(" ", ""), "unknown encoding: TList [TInt 2912307721,TInt 1,TInt 1,TBool False]"),
    ("a0", "unknown encoding: TMap []"),
    ("841bffffffffffffffff f401f4".replace(" ", ""),
     "unknown encoding: TList [TInteger 18446744073709551615,TBool False,TInt 1,TBool False]"),
    ("841b0000000100000000f401f4", "networkMagic out of bound: 4294967296"),
    ("8420f401f4", "networkMagic out of bound: -1"),
    ("841aad964a09f402f4", "peerSharing is out of bound: 2"),
    ("841aad964a09f420f4", "peerSharing is out of bound: -1"),
    # The magic is checked before peer sharing, as in the reference.
    ("8420f402f4", "networkMagic out of bound: -1"),
])
def test_n2n_data_failures_carry_the_reference_texts(hex_data, text):
    with pytest.raises(VersionDataError) as info:
        NodeToNodeVersionData.from_cbor(bytes.fromhex(hex_data))
    assert info.value.text == text


@pytest.mark.parametrize("hex_data, text", [
    ("9f1aad964a09f4ff", "unknown encoding: TListI [TInt 2912307721,TBool False]"),
    ("811aad964a09", "unknown encoding: TList [TInt 2912307721]"),
    ("821aad964a09f6", "unknown encoding: TList [TInt 2912307721,TNull]"),
    ("82c249010000000000000000f4", "unknown encoding: TList [TInteger 18446744073709551616,TBool False]"),
    ("05", "unknown encoding: TInt 5"),
    ("821b0000000100000000f4", "networkMagic out of bound: 4294967296"),
    ("8238fff4", "networkMagic out of bound: -256"),
])
def test_n2c_data_failures_carry_the_reference_texts(hex_data, text):
    with pytest.raises(VersionDataError) as info:
        NodeToClientVersionData.from_cbor(bytes.fromhex(hex_data))
    assert info.value.text == text


def test_encoding_is_shortest_form():
    assert NodeToClientVersionData(0).to_cbor().hex() == "8200f4"
    assert NodeToClientVersionData(42, query=True).to_cbor().hex() == "82182af5"
    assert NodeToClientVersionData(1000).to_cbor().hex() == "821903e8f4"
    assert NodeToNodeVersionData(70000, True, False, True).to_cbor().hex() == "841a00011170f500f5"


def test_local_data_outside_32_bits_is_refused_at_construction():
    with pytest.raises(ValueError, match="outside 0..4294967295"):
        NodeToClientVersionData(2**32)


IO, IR = True, False  # initiator_only flag values: InitiatorOnly, InitiatorAndResponder

#: (local mode, local peer sharing, remote mode, remote peer sharing) -> (agreed mode, agreed peer sharing)
N2N_AGREEMENT = [
    (IR, True, IR, True, IR, True),
    (IR, True, IR, False, IR, False),
    (IR, False, IR, True, IR, False),
    (IR, False, IR, False, IR, False),
    (IR, True, IO, True, IO, False),
    (IR, True, IO, False, IO, False),
    (IR, False, IO, True, IO, False),
    (IR, False, IO, False, IO, False),
    (IO, True, IR, True, IO, False),
    (IO, True, IR, False, IO, False),
    (IO, False, IR, True, IO, False),
    (IO, False, IR, False, IO, False),
    (IO, True, IO, True, IO, False),
    (IO, True, IO, False, IO, False),
    (IO, False, IO, True, IO, False),
    (IO, False, IO, False, IO, False),
]


@pytest.mark.parametrize("local_mode, local_ps, remote_mode, remote_ps, mode, ps", N2N_AGREEMENT)
def test_n2n_mode_and_peer_sharing_agreement(local_mode, local_ps, remote_mode, remote_ps, mode, ps):
    local = NodeToNodeVersionData(DMQ_MAINNET_MAGIC, local_mode, local_ps)
    remote = NodeToNodeVersionData(DMQ_MAINNET_MAGIC, remote_mode, remote_ps)
    agreed = acceptable(local, remote)
    assert (agreed.initiator_only, agreed.peer_sharing) == (mode, ps)
    assert agreed.duplex is (not mode)
    assert agreed.network_magic == DMQ_MAINNET_MAGIC


@pytest.mark.parametrize("local_query, remote_query", [(False, False), (False, True), (True, False), (True, True)])
def test_query_is_agreed_when_either_side_asks(local_query, remote_query):
    n2c = acceptable(NodeToClientVersionData(7, local_query), NodeToClientVersionData(7, remote_query))
    n2n = acceptable(NodeToNodeVersionData(7, query=local_query), NodeToNodeVersionData(7, query=remote_query))
    assert n2c.query is n2n.query is (local_query or remote_query)


def test_magic_mismatch_text_shows_both_sides_like_the_reference():
    with pytest.raises(VersionDataMismatch) as info:
        acceptable(NodeToNodeVersionData(DMQ_MAINNET_MAGIC), NodeToNodeVersionData(2147483649, True, False, True))
    assert info.value.text == (
        "version data mismatch: NodeToNodeVersionData {networkMagic = NetworkMagic 2912307721, "
        "diffusionMode = InitiatorAndResponderDiffusionMode, peerSharing = PeerSharingEnabled, query = False} "
        "/= NodeToNodeVersionData {networkMagic = NetworkMagic 2147483649, "
        "diffusionMode = InitiatorOnlyDiffusionMode, peerSharing = PeerSharingDisabled, query = True}")
    with pytest.raises(VersionDataMismatch) as info:
        acceptable(NodeToClientVersionData(1), NodeToClientVersionData(2))
    assert info.value.text == ("version data mismatch: NodeToClientVersionData {networkMagic = NetworkMagic 1, "
                               "query = False} /= NodeToClientVersionData {networkMagic = NetworkMagic 2, query = False}")


def test_data_of_different_links_cannot_be_combined():
    with pytest.raises(TypeError):
        acceptable(NodeToClientVersionData(1), NodeToNodeVersionData(1))


@pytest.mark.parametrize("hex_term, shown", [
    ("3b7fffffffffffffff", "TInt (-9223372036854775808)"),
    ("3b8000000000000000", "TInteger (-9223372036854775809)"),
    ("4300014a", r'TBytes "\NUL\SOHJ"'),
    ("5f4101ff", r'TBytesI "\SOH"'),
    ("6568c3a93122", r'TString "h\233\&1\""'),
    ("bf0102ff", "TMapI [(TInt 1,TInt 2)]"),
    ("d818410a", r'TTagged 24 (TBytes "\n")'),
    ("f7", "TSimple 23"),
    ("f94100", "THalf 2.5"),
    ("fa3dcccccd", "TFloat 0.1"),
    ("fb3f847ae147ae147b", "TDouble 1.0e-2"),
    ("fbc0c3880000000000", "TDouble (-10000.0)"),
    ("fb416312d000000000", "TDouble 1.0e7"),
    ("9f8001ff", "TListI [TList [],TInt 1]"),
])
def test_terms_are_shown_as_haskell_shows_cborg_terms(hex_term, shown):
    assert show_term(bytes.fromhex(hex_term)) == shown


@pytest.mark.parametrize("text, shown", [
    ("custom", '"custom"'),
    ("", '""'),
    ('say "hi"', r'"say \"hi\""'),
    ("back\\slash", r'"back\\slash"'),
    ("it's", '"it\'s"'),
    ("tab\tnew\nline\r", r'"tab\tnew\nline\r"'),
    ("\x07\x08\x0b\x0c", r'"\a\b\v\f"'),
    ("\x00\x01\x1b\x1f\x7f", r'"\NUL\SOH\ESC\US\DEL"'),
    ("\x0eH", r'"\SO\&H"'),
    ("\x0eI", r'"\SOI"'),
    ("\x0e", r'"\SO"'),
    ("é", r'"\233"'),
    ("é1", r'"\233\&1"'),
    ("é9", r'"\233\&9"'),
    ("éa", r'"\233a"'),
    ("λx", r'"\955x"'),
    ("€", r'"\8364"'),
    ("😀", r'"\128512"'),
    ("\u0080", r'"\128"'),
    ("a\x7f1", r'"a\DEL1"'),
    ("\x7f\\", r'"\DEL\\"'),
])
def test_haskell_string_matches_ghc_show(text, shown):
    """The one ``show`` of a String/Text: handshake refusals, reject reasons and validation texts."""
    assert haskell_string(text) == shown
