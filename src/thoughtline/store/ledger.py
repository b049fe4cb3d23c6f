"""The verdict ledgers: what each (provider id, host, model) taught us, merged over time.

Owns the merge rule at rest (union of dropped carriers, pad once learned stays learned, reasons
kept once each) and the filtered forget. There are two scopes: the global ledger (``verdicts``,
tenant ``""``: the local user's CLI and a tokenless gateway) and one ledger per gateway tenant
(``tenant_verdicts``), so a lesson drawn on one tenant's request never changes what another
tenant's requests carry. Sessions keep their own copy in their model config; a ledger is what a
new session starts from.
"""

from __future__ import annotations

from thoughtline.errors import StoreError
from thoughtline.store import codec
from thoughtline.store.db import Row, Tx
from thoughtline.verdicts import Verdict

_COLUMNS = "provider, host, model, drop_carriers, pad, reason, learned_at"
_KEY = "provider = ? AND host = ? AND model = ?"


def record(tx: Tx, verdict: Verdict, now: float, *, tenant: str = "") -> Verdict:
    """Merge ``verdict`` into the ledger of ``tenant`` (``""``: the global one)."""
    tx.lock("thoughtline.verdicts")  # read-merge-write must not lose a concurrent merge
    if tenant:
        row = tx.one(f"SELECT {_COLUMNS} FROM tenant_verdicts WHERE tenant = ? AND {_KEY}",
                     (tenant, *verdict.key))
    else:
        row = tx.one(f"SELECT {_COLUMNS} FROM verdicts WHERE {_KEY}", verdict.key)
    merged = verdict if row is None else _merge(_readable(row, verdict), verdict)
    values = codec.verdict_to_row(merged, now)
    if tenant:
        tx.execute(
            f"INSERT INTO tenant_verdicts (tenant, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, provider, host, model) DO UPDATE SET "
            "drop_carriers = excluded.drop_carriers, pad = excluded.pad, "
            "reason = excluded.reason, learned_at = excluded.learned_at", (tenant, *values))
    else:
        tx.execute(
            f"INSERT INTO verdicts ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (provider, host, model) DO UPDATE SET "
            "drop_carriers = excluded.drop_carriers, pad = excluded.pad, "
            "reason = excluded.reason, learned_at = excluded.learned_at", values)
    return merged


def _readable(row: Row, new: Verdict) -> Verdict:
    """The stored verdict, or ``new`` in place of a damaged one (the lesson is learned anew)."""
    try:
        return codec.verdict_from_row(row)
    except StoreError:
        return new


def _merge(old: Verdict, new: Verdict) -> Verdict:
    merged = old.merged(new)
    reasons = [r for r in (old.reason, new.reason) if r]
    parts = dict.fromkeys(p for r in reasons for p in r.split("; ") if p)
    return Verdict(provider=merged.provider, host=merged.host, model=merged.model,
                   drop=merged.drop, pad=merged.pad, reason="; ".join(parts))


def all_verdicts(tx: Tx, *, tenant: str = "") -> list[Verdict]:
    """The global ledger, then (for a tenant) that tenant's own."""
    rows = tx.all(f"SELECT {_COLUMNS} FROM verdicts ORDER BY provider, host, model")
    if tenant:
        rows += tx.all(f"SELECT {_COLUMNS} FROM tenant_verdicts WHERE tenant = ? "
                       "ORDER BY provider, host, model", (tenant,))
    return [codec.verdict_from_row(row) for row in rows]


def forget(tx: Tx, *, provider: str | None, host: str | None, model: str | None) -> int:
    """Delete the verdicts matching every given filter (none given: all of them), in every
    ledger (the global one and each tenant's)."""
    filters = [(name, value) for name, value in
               (("provider", provider), ("host", host), ("model", model)) if value is not None]
    where = " AND ".join(f"{name} = ?" for name, _ in filters) or "1 = 1"
    params = [value for _, value in filters]
    return (tx.execute(f"DELETE FROM verdicts WHERE {where}", params)
            + tx.execute(f"DELETE FROM tenant_verdicts WHERE {where}", params))
