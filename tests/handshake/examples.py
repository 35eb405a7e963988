"""Byte examples shared by the handshake tests: docs/protocol/handshake.md section 4.8, written out in full."""

from __future__ import annotations

from handshake import (CARDANO_MAINNET_MAGIC, DMQ_MAINNET_MAGIC, NETWORK_MAGICS, MsgAcceptVersion,
                       MsgProposeVersions, MsgQueryReply, MsgRefuse, NodeToClientVersionData,
                       NodeToNodeVersionData, VersionMismatch, cardano_node_to_client_versions,
                       dmq_node_to_client_versions, dmq_node_to_node_versions)

N2N_DUPLEX = NodeToNodeVersionData(DMQ_MAINNET_MAGIC, initiator_only=False, peer_sharing=True)
N2N_INITIATOR_ONLY = NodeToNodeVersionData(DMQ_MAINNET_MAGIC, initiator_only=True, peer_sharing=False)
N2C_MAINNET = NodeToClientVersionData(DMQ_MAINNET_MAGIC)
CARDANO_MAINNET = NodeToClientVersionData(CARDANO_MAINNET_MAGIC)

#: (name, link attribute name in the handshake package, state the message is received in, message, hex)
WIRE_EXAMPLES = [
    ("n2n propose duplex", "DMQ_NODE_TO_NODE", "PROPOSE",
     MsgProposeVersions.from_table(dmq_node_to_node_versions(DMQ_MAINNET_MAGIC)),
     "8200a201841aad964a09f401f402841aad964a09f401f4"),
    ("n2n propose initiator-only", "DMQ_NODE_TO_NODE", "PROPOSE",
     MsgProposeVersions.from_table(dmq_node_to_node_versions(DMQ_MAINNET_MAGIC, initiator_only=True,
                                                             peer_sharing=False)),
     "8200a201841aad964a09f500f402841aad964a09f500f4"),
    ("n2n accept v2", "DMQ_NODE_TO_NODE", "CONFIRM",
     MsgAcceptVersion(2, N2N_DUPLEX.to_cbor()), "830102841aad964a09f401f4"),
    ("n2n refuse version mismatch", "DMQ_NODE_TO_NODE", "CONFIRM",
     MsgRefuse(VersionMismatch((1, 2))), "82028200820102"),
    ("n2c propose", "DMQ_NODE_TO_CLIENT", "PROPOSE",
     MsgProposeVersions.from_table(dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)), "8200a1191001821aad964a09f4"),
    ("n2c accept", "DMQ_NODE_TO_CLIENT", "CONFIRM",
     MsgAcceptVersion(4097, N2C_MAINNET.to_cbor()), "8301191001821aad964a09f4"),
    ("n2c refuse version mismatch", "DMQ_NODE_TO_CLIENT", "CONFIRM",
     MsgRefuse(VersionMismatch((4097,))), "8202820081191001"),
    ("n2c query reply", "DMQ_NODE_TO_CLIENT", "CONFIRM",
     MsgQueryReply.from_table(dmq_node_to_client_versions(DMQ_MAINNET_MAGIC)), "8203a1191001821aad964a09f4"),
    ("n2c propose preprod", "DMQ_NODE_TO_CLIENT", "PROPOSE",
     MsgProposeVersions.from_table(dmq_node_to_client_versions(NETWORK_MAGICS["preprod"].dmq)),
     "8200a1191001821a80000001f4"),
    ("n2c propose preview", "DMQ_NODE_TO_CLIENT", "PROPOSE",
     MsgProposeVersions.from_table(dmq_node_to_client_versions(NETWORK_MAGICS["preview"].dmq)),
     "8200a1191001821a80000002f4"),
    ("n2c propose devnet", "DMQ_NODE_TO_CLIENT", "PROPOSE",
     MsgProposeVersions.from_table(dmq_node_to_client_versions(NETWORK_MAGICS["devnet"].dmq)),
     "8200a1191001821a8000002af4"),
    ("cardano propose V16..V23", "CARDANO_NODE_TO_CLIENT", "PROPOSE",
     MsgProposeVersions.from_table(cardano_node_to_client_versions(CARDANO_MAINNET_MAGIC)),
     "8200a8" + "".join(f"19{v:04x}821a2d964a09f4" for v in range(0x8010, 0x8018))),
    ("cardano accept V23", "CARDANO_NODE_TO_CLIENT", "CONFIRM",
     MsgAcceptVersion(32791, CARDANO_MAINNET.to_cbor()), "8301198017821a2d964a09f4"),
]
