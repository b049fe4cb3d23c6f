"""The global verdict ledger: what each (provider id, host, model) taught us, merged over time.

Owns the merge rule at rest (union of dropped carriers, pad once learned stays learned, reasons
kept once each) and the filtered forget. Sessions keep their own copy in their model config; this
ledger is what a new session starts from.
"""

from __future__ import annotations

from thoughtline.store import codec
from thoughtline.store.db import Tx
from thoughtline.verdicts import Verdict

_COLUMNS = "provider, host, model, drop_carriers, pad, reason, learned_at"


def record(tx: Tx, verdict: Verdict, now: float) -> Verdict:
    tx.lock("thoughtline.verdicts")  # read-merge-write must not lose a concurrent merge
    row = tx.one(f"SELECT {_COLUMNS} FROM verdicts WHERE provider = ? AND host = ? AND model = ?",
                 verdict.key)
    merged = verdict if row is None else _merge(codec.verdict_from_row(row), verdict)
    tx.execute(
        f"INSERT INTO verdicts ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (provider, host, model) DO UPDATE SET drop_carriers = excluded.drop_carriers, "
        "pad = excluded.pad, reason = excluded.reason, learned_at = excluded.learned_at",
        codec.verdict_to_row(merged, now))
    return merged


def _merge(old: Verdict, new: Verdict) -> Verdict:
    merged = old.merged(new)
    reasons = [r for r in (old.reason, new.reason) if r]
    parts = dict.fromkeys(p for r in reasons for p in r.split("; ") if p)
    return Verdict(provider=merged.provider, host=merged.host, model=merged.model,
                   drop=merged.drop, pad=merged.pad, reason="; ".join(parts))


def all_verdicts(tx: Tx) -> list[Verdict]:
    rows = tx.all(f"SELECT {_COLUMNS} FROM verdicts ORDER BY provider, host, model")
    return [codec.verdict_from_row(row) for row in rows]


def forget(tx: Tx, *, provider: str | None, host: str | None, model: str | None) -> int:
    """Delete the verdicts matching every given filter (none given: all of them)."""
    filters = [(name, value) for name, value in
               (("provider", provider), ("host", host), ("model", model)) if value is not None]
    where = " AND ".join(f"{name} = ?" for name, _ in filters) or "1 = 1"
    return tx.execute(f"DELETE FROM verdicts WHERE {where}", [value for _, value in filters])
