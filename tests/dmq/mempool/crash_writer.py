"""Child process of the crash test: submit messages forever, print each acknowledgement.

Usage: ``python -m tests.dmq.mempool.crash_writer <store-dir> <submitters>``. Prints ``ready``,
then one ``<index> <message-id-hex>`` line per message, only after ``submit`` returned (the
message is acknowledged, so it must survive the SIGKILL the parent sends at a random time).
"""

from __future__ import annotations

import os
import sys

import trio

from dmq.clock import SystemClock
from dmq.mempool import open_durable_mempool

from .messages import decode, make_message


async def main(path: str, submitters: int) -> None:
    clock = SystemClock()
    async with open_durable_mempool(path, clock, decode=decode) as mempool:
        first_seed = mempool.next_index * 1000

        async def submitter(number: int) -> None:
            round_ = 0
            while True:
                seed = first_seed + round_ * submitters + number
                message = make_message(seed, int(clock.now()) + 1800, body_size=90 + seed % 1900)
                (index,) = await mempool.submit([message])
                # One write(2) per line: a kill can never leave half a line behind a whole one.
                os.write(1, f"{index} {message.message_id.hex()}\n".encode())
                round_ += 1

        os.write(1, b"ready\n")
        async with trio.open_nursery() as nursery:
            for number in range(submitters):
                nursery.start_soon(submitter, number)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]))
