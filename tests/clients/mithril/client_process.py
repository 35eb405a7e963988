"""A Mithril-style signer or aggregator in its own process, using only the blocking wrappers.

    client_process.py publish SOCKET BULK_CREDENTIALS INDEX KES_PERIOD BODY_HEX
    client_process.py consume SOCKET COUNT TIMEOUT

``publish`` prints the verdict line; ``consume`` prints one JSON object per message.
"""

from __future__ import annotations

import json
import sys

from clients.mithril import (
    FixedKesPeriod,
    RegisterSignatureMessageDmq,
    SigningCredentials,
    describe_result,
    network_name_of,
)
from clients.mithril.sync import consume, publish

DEVNET_MAGIC = 2147483690


def _publish(socket: str, bulk: str, index: str, period: str, body_hex: str) -> None:
    credentials = SigningCredentials.from_bulk_credentials(bulk, int(index))
    result = publish(socket, bytes.fromhex(body_hex), network=network_name_of(DEVNET_MAGIC),
                     credentials=credentials, kes_periods=FixedKesPeriod(int(period)))
    print(describe_result(result), flush=True)


def _consume(socket: str, count: str, timeout: str) -> None:
    for item in consume(socket, network=DEVNET_MAGIC, count=int(count), timeout=float(timeout),
                        parse_body=RegisterSignatureMessageDmq.from_bytes):
        print(json.dumps({
            "raw": item.message.raw.hex(),
            "party_id": item.party_id,
            "entity": repr(item.payload.signed_entity_type),
        }), flush=True)


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"publish": _publish, "consume": _consume}[command](*arguments)
