"""Choosing free TCP ports for the processes a tool starts on one host (devnets, Spark clusters).

Lives in ``dmq`` so that ``lab`` (the devnet) and ``spark`` (the analysis cluster), which may
not import each other, share one way of doing it.
"""

from __future__ import annotations

import socket

__all__ = ["free_ports"]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct TCP ports free right now (all held open together while chosen, so distinct).

    A port is free only until someone else binds it; callers hand it to a process that binds at once.
    """
    held = []
    try:
        for _ in range(count):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(probe)
            probe.bind((host, 0))
        return [probe.getsockname()[1] for probe in held]
    finally:
        for probe in held:
            probe.close()
