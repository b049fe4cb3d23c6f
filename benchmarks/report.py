"""The one table (plain text for the terminal, Markdown for ``results/latest.md``) and the JSON.

Owns formatting and the run's context (machine, versions, load average): numbers from a busy
2-core machine mean little without it. Reads nothing the scenarios measured except their rows.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import gateway_procs
from benchmarks.measure import Row

HEADER = ("scenario", "size", "ours", "floor/peer", "ratio", "target", "ok?")
ROOT = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _litellm() -> str | None:
    """LiteLLM's version: this environment's, else that of the one ``TL_BENCH_LITELLM`` names
    (the LiteLLM the gateway scenarios start)."""
    found = _version("litellm")
    if found is not None or not os.environ.get(gateway_procs.LITELLM_ENV):
        return found
    binary = gateway_procs.litellm_binary()
    return gateway_procs.litellm_version(binary) if binary is not None else None


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=False, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def machine(load_before: tuple[float, float, float]) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu": cpu_model(), "cores": os.cpu_count(),
        "python": platform.python_version(), "platform": platform.platform(),
        "thoughtline": _version("thoughtline"), "orjson": _version("orjson"),
        "litellm": _litellm(), "commit": _commit(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


# --- cells ----------------------------------------------------------------------------------------


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    if value >= 0.01:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e3:.3f} ms"


def value(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if unit == "s":
        return _seconds(v)
    if unit == "x":
        return f"{v:.2f}×"
    if unit == "B/turn":
        return f"{v / 1024:.1f} KiB/turn"
    return f"{v:,.0f} {unit}"


def cells(row: Row) -> tuple[str, ...]:
    name = f"{row.scenario}: {row.case}"
    if row.ours is None:
        return (name, row.size, row.note or "not built yet", "—", "—", row.target or "—", "—")
    ok = "" if row.ok is None else ("yes" if row.ok else "NO")
    return (name, row.size, value(row.ours, row.unit), value(row.floor, row.unit),
            "—" if row.ratio is None else f"{row.ratio:.2f}×", row.target or "—", ok)


def floors(rows: Sequence[Row]) -> list[str]:
    """One line per scenario naming what its floor/peer column is, and any notes."""
    seen: dict[str, str] = {}
    for row in rows:
        if row.floor_kind:
            seen.setdefault(f"{row.scenario}: {row.floor_kind}", "")
    return list(seen)


# --- renderers ----------------------------------------------------------------------------------


def text_table(rows: Sequence[Row]) -> str:
    table = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    out = []
    for i, line in enumerate(table):
        out.append("  ".join(c.ljust(w) if j in (0, 1, 5, 6) else c.rjust(w)
                             for j, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def notes(rows: Sequence[Row]) -> list[str]:
    lines = ["floor/peer column: " + "; ".join(floors(rows))]
    shared: dict[tuple[str, str], int] = {}
    for r in rows:
        if r.note and r.ours is not None:
            shared[(r.scenario, r.note)] = shared.get((r.scenario, r.note), 0) + 1
    for r in rows:
        count = shared.pop((r.scenario, r.note), 0)
        if count == 1:
            size = f" ({r.size})" if r.size != "—" else ""
            lines.append(f"{r.scenario}: {r.case}{size}: {r.note}")
        elif count > 1:
            lines.append(f"{r.scenario} ({count} rows): {r.note}")
    missed = [r for r in rows if r.ok is False]
    lines.append(f"targets: {sum(r.ok is True for r in rows)} met, {len(missed)} missed"
                 + (": " + "; ".join(f"{r.scenario}: {r.case} ({r.size})" for r in missed)
                    if missed else ""))
    return lines


def markdown(rows: Sequence[Row], info: dict[str, Any], command: str) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")

    lines = [
        "# thoughtline benchmarks — latest run", "",
        f"`{command}` on {info['date']}: {info['cpu']}, {info['cores']} cores, Python "
        f"{info['python']}, thoughtline {info['thoughtline']} (commit {info['commit']}), "
        f"orjson {info['orjson']}, litellm {info['litellm'] or 'not installed'}. "
        f"Load average before/after: {info['loadavg_before']} / {info['loadavg_after']}.", "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" if i in (0, 1, 5, 6) else "---:" for i in range(len(HEADER))) + "|",
    ]
    lines += ["| " + " | ".join(esc(c) for c in cells(r)) + " |" for r in rows]
    lines += ["", *(f"- {n}" for n in notes(rows)), "",
              "How each number is taken: [docs/benchmarks.md](../../docs/benchmarks.md).", ""]
    return "\n".join(lines)
