"""The latest fresh entry per static key, and the relay look-up of docs/topics-design.md 6.4.

:class:`DmsgState` is sans-IO: :meth:`offer` applies 6.2 (freshness, iteration) and keeps
the entry with the highest sequence per key until ``T + W``; the highest sequence seen stays
for ``W + 1 hour`` so that a replayed older entry is still ``stale``. :func:`find_relay`
is the client side of 6.4: B's fresh client record names its delegated servers; the relay
is a fresh server record among them with sessions available, preferring A's own servers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .entry import WINDOW, DmsgReject, Entry, check_fresh, check_iteration

__all__ = ["DmsgState", "find_relay"]

SEQ_MEMORY = WINDOW + 3600


@dataclass
class DmsgState:
    window: int = WINDOW
    entries: dict[str, Entry] = field(default_factory=dict)
    highest: dict[str, tuple[int, float]] = field(default_factory=dict)   # key -> (sequence, forget at)

    def offer(self, entry: Entry, now: float) -> None:
        """Accept ``entry`` or raise :class:`DmsgReject`; the state is unchanged on a reject."""
        self.prune(now)
        check_fresh(entry, now, self.window)
        held = self.entries.get(entry.static)
        seen = self.highest.get(entry.static)
        check_iteration(entry, held, None if seen is None else seen[0])
        self.entries[entry.static] = entry
        self.highest[entry.static] = (entry.sequence, entry.seconds + SEQ_MEMORY)

    def prune(self, now: float) -> None:
        for key in [k for k, e in self.entries.items() if now > e.seconds + self.window]:
            del self.entries[key]
        for key in [k for k, (_, until) in self.highest.items() if now > until]:
            del self.highest[key]

    def fresh(self, key: str, now: float) -> Entry | None:
        entry = self.entries.get(key)
        return entry if entry is not None and now <= entry.seconds + self.window else None


def find_relay(state: DmsgState, target: str, now: float, own_servers: tuple[str, ...] = ()) -> Entry | None:
    """A fresh server entry listed in the target's fresh client entry with sessions > 0."""
    client = state.fresh(target, now)
    if client is None or client.delegated is None:
        return None
    usable = [s for s in (state.fresh(k, now) for k in client.delegated)
              if s is not None and s.address is not None and s.sessions > 0]
    usable.sort(key=lambda s: (s.static not in own_servers, -s.sessions, s.static))
    return usable[0] if usable else None


__all__ += ["DmsgReject"]
