"""One-line descriptions of events for terminal progress (``bannerfall demo``)."""
from __future__ import annotations

from typing import Any, Iterable

#: event types worth a line, by game; others are summarised by type only when listed here
_SKIP = {"deal", "reinforce", "dealt", "pool", "submitted", "prompt"}


def describe_events(game: str, events: Iterable[dict[str, Any]], names: dict[int, str]) -> list[str]:
    lines = []
    for e in events:
        kind = e.get("type", "?")
        if kind in _SKIP:
            continue
        who = e.get("seat")
        prefix = f"{names.get(who, f'seat {who}')}: " if isinstance(who, int) else ""
        detail = {k: v for k, v in e.items() if k not in ("type", "v", "seat") and not isinstance(v, (list, dict))}
        extra = " ".join(f"{k}={v}" for k, v in list(detail.items())[:6])
        lines.append(f"{prefix}{kind} {extra}".rstrip())
    return lines
