"""What a session's request view shows: one row per request from the request log, and the chart.

Owns reading the log for one session (``requestlog.RequestLog``; malformed lines are skipped and
counted there), the per-request rows (route row, carriers and counts, pads, verdicts applied and
learned, repairs, provider reports, status, timings) and the geometry of the prompt-tokens chart
(an inline SVG drawn by the template: points, compaction marks and the context window line).
Every field of a record came from a file anyone with access to the home can edit: the values are
passed through as data and the templates escape them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thoughtline.cli.logs import _status as status_word
from thoughtline.requestlog import RequestLog
from thoughtline.ui.words import listed, verdict_words, when

#: The chart's drawing area, in SVG user units.
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 720, 240, 64, 28, 16, 16


#: Record fields every API's records share (``turn._log``); any other field is the codec's own
#: summary of what it sent (e.g. blocks per kind, items left out) and is shown generically.
_SHARED = frozenset({
    "time", "session", "route", "api", "provider", "host", "model", "status", "outcome",
    "attempt", "stream", "duration_ms", "retries", "assistant_turns", "carriers", "native",
    "pads", "body_extras", "verdicts", "repairs", "reports", "prompt_tokens", "tenant",
    "purpose", "usage", "response_model", "finish"})


def _counts(raw: Any) -> list[tuple[str, int]]:
    if not isinstance(raw, Mapping):
        return []
    return sorted((str(k), v) for k, v in raw.items() if isinstance(v, int))


def carried(record: Mapping[str, Any]) -> list[str]:
    """What went on the wire, with counts: the carrier fields, the native values, then each
    count table of the codec's own summary, prefixed with its name (``blocks thinking ×2``)."""
    shown = [f"{name} ×{n}" for name, n in _counts(record.get("carriers"))]
    shown += [f"native {name} ×{n}" for name, n in _counts(record.get("native"))]
    for key in sorted(set(record) - _SHARED):
        shown += [f"{key} {name} ×{n}" for name, n in _counts(record[key])]
    return shown


def _other_counts(record: Mapping[str, Any]) -> list[str]:
    """The codec summary's single numbers that are not zero (``thinking_omitted 2``)."""
    return [f"{key} {record[key]}" for key in sorted(set(record) - _SHARED)
            if isinstance(record[key], int) and not isinstance(record[key], bool)
            and record[key]]


def request_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per record, oldest first. ``applied`` are the verdicts learned by earlier
    requests of the session, which shaped this one; ``learned`` those this one taught."""
    rows: list[dict[str, Any]] = []
    applied: list[str] = []
    for number, record in enumerate(records, start=1):
        learned = [verdict_words(v) for v in listed(record.get("verdicts"))]
        tokens = record.get("prompt_tokens")
        rows.append({
            "number": number, "when": when(record.get("time")),
            "status": status_word(dict(record)), "ok": record.get("outcome") == "ok",
            "route": str(record.get("route", "?")), "api": str(record.get("api", "?")),
            "provider": str(record.get("provider", "?")), "host": str(record.get("host") or "-"),
            "model": str(record.get("model", "?")),
            # Why a request that is not a turn was sent ("compaction": a summary's request).
            "purpose": str(record.get("purpose") or ""),
            "attempt": record.get("attempt", 1), "stream": bool(record.get("stream")),
            "duration_ms": record.get("duration_ms"), "retries": record.get("retries", 0),
            "assistant_turns": record.get("assistant_turns"),
            "carried": carried(record), "counts": _other_counts(record),
            "pads": record.get("pads", 0),
            "body_extras": [str(x) for x in listed(record.get("body_extras"))],
            "applied": list(applied), "learned": learned,
            "repairs": [str(f) for f in listed(record.get("repairs"))],
            "reports": [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)
                        for r in listed(record.get("reports"))],
            "prompt_tokens": tokens if isinstance(tokens, int) else None,
        })
        applied.extend(learned)
    return rows


def read_requests(logs: Path, session_id: str) -> tuple[list[dict[str, Any]], int]:
    """The session's records, oldest first, and how many malformed lines the log had."""
    log = RequestLog(logs)
    records = list(log.read(session=session_id))
    return records, log.skipped


def _nice_top(value: float) -> int:
    """A round number at or above ``value`` for the top of the y axis."""
    step = 1
    while step * 10 <= value:
        step *= 10
    for factor in (1, 2, 5, 10):
        if step * factor >= value:
            return step * factor
    return step * 10


def _runs(points: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Points split where a request reported nothing: the line is not drawn across a gap."""
    runs: list[list[tuple[int, int]]] = []
    for point in points:
        if runs and runs[-1][-1][0] == point[0] - 1:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def chart(records: Sequence[Mapping[str, Any]], *, compactions: Sequence[float],
          window: int | None) -> dict[str, Any]:
    """Geometry of the prompt-tokens chart: one point per request that reported its prompt
    tokens, a vertical mark before the first request after each compaction (``compactions`` are
    the times new generations began), and the context window as a line when it fits the scale
    (else only named: a 200k window would flatten a 2k-token session to nothing)."""
    points = [(i, r["prompt_tokens"]) for i, r in enumerate(records)
              if isinstance(r.get("prompt_tokens"), int)]
    peak = max((t for _, t in points), default=0)
    top = _nice_top(max(peak * 1.15, 1))
    if window and window <= top * 1.5:
        top = _nice_top(window * 1.05)
    span_x = WIDTH - LEFT - RIGHT
    span_y = HEIGHT - TOP - BOTTOM
    count = max(len(records), 1)

    def x(index: float) -> float:
        return round(LEFT + span_x * (index + 0.5) / count, 1)

    def y(tokens: float) -> float:
        return round(TOP + span_y * (1 - tokens / top), 1)

    times = [r.get("time") for r in records]
    marks = []
    for began in compactions:
        after = next((i for i, t in enumerate(times)
                      if isinstance(t, int | float) and t >= began), None)
        if after is not None:
            marks.append({"x": round(x(after - 0.5), 1), "request": after + 1})
    return {
        "width": WIDTH, "height": HEIGHT, "left": LEFT, "right": WIDTH - RIGHT, "top": TOP,
        "bottom": HEIGHT - BOTTOM, "points": [{"x": x(i), "y": y(t), "tokens": t,
                                               "request": i + 1} for i, t in points],
        "lines": [" ".join(f"{x(i)},{y(t)}" for i, t in run) for run in _runs(points)],
        "ticks": [{"y": y(top * f), "label": f"{round(top * f):,}"} for f in (0, 0.5, 1)],
        "xticks": [{"x": x(i), "label": str(i + 1)}
                   for i in range(0, count, max(1, -(-count // 12)))] if records else [],
        "compactions": marks, "window": window,
        "window_y": y(window) if window and window <= top else None,
        "peak": peak, "missing": len(records) - len(points), "requests": len(records),
    }
