"""Small wording helpers shared by the pages: times, verdicts, lists from untrusted fields."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    try:
        return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a time no clock shows (an edited row)
        return "?"


def listed(value: Any) -> list[Any]:
    """``value`` as a list when it is one (a field of an edited file may be anything)."""
    return list(value) if isinstance(value, list | tuple) else []


def verdict_words(verdict: Mapping[str, Any]) -> str:
    """A verdict in words, as ``sessions show`` prints it."""
    drop = listed(verdict.get("drop"))
    what = f"drop {', '.join(map(str, drop))}" if drop else ""
    if verdict.get("pad"):
        what = (what + "; " if what else "") + "pad with the placeholder"
    where = f"{verdict.get('provider', '?')} @ {verdict.get('host') or '-'} / " \
            f"{verdict.get('model', '?')}"
    reason = f" ({verdict['reason']})" if verdict.get("reason") else ""
    return f"{where}: {what or 'no change'}{reason}"
