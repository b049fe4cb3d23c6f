"""Stored wire forms: each message's encoded request bytes per replay plan, in portable SQL.

A wire form is a pure function of (message, plan, context) — the context is what else the turn's
bytes depend on ("" for most) — so it is keyed by the message's content id (shared by every
session and branch that holds it), the plan's digest and the context, and written once. On load
every form is checked against its digest; one that fails is left out and reported, never
returned. Loading forms reads no canonical row: the canonical history is verified when it is
decoded. Deleting messages deletes their forms (``history._collect``).

Two more kinds of row ride on the same table, keyed by a visible history's last message and a
digest of every visible id in order, so they are found only for exactly that history (any branch
or session holding it) and collected with that message: its unanswered-call scan
(``replay.scan_state``; ``scan:``), and the wire cache's last walk over it under one plan
(``lastwalk``; ``walk:``, also covering the plan).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from hashlib import sha256

from thoughtline.store import history
from thoughtline.store.db import Tx


@dataclass(frozen=True, kw_only=True, slots=True)
class WireForm:
    """One message's wire bytes for one plan, and what the core reads without decoding it."""

    message_id: str
    plan: str
    meta: str
    data: bytes
    context: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredForms:
    """A session's visible entries and the verified forms found for one plan."""

    entries: tuple[tuple[int, str], ...]  # (seq, message id), in order
    #: message id -> context -> (data, meta), only verified ones
    forms: Mapping[str, dict[str, tuple[bytes, str]]]
    problems: tuple[str, ...] = ()  # message ids whose stored form failed its digest
    scan: bytes | None = None  # the stored scan of exactly these entries, verified, if any
    #: the stored last walk over exactly these entries under the plan, verified, if any
    walk: bytes | None = None


def form_digest(meta: str, data: bytes, context: str = "") -> str:
    """A form's digest covers its ``meta`` and context as well as its bytes: the core trusts them
    as much. (Neither holds a raw newline, so the parts cannot run into each other; a form
    without a context digests as it always did.)"""
    hashed = sha256((f"{context}\n{meta}\n" if context else meta + "\n").encode())
    hashed.update(data)  # (fed apart: a resume checks every form, so no copy of its bytes)
    return f"sha256:{hashed.hexdigest()}"


def _listed(ids: Sequence[str]) -> str:
    """The digest of the visible history ``ids`` (in order) both keys below are made of."""
    return sha256("\n".join(ids).encode()).hexdigest()


def scan_key(ids: Sequence[str], listed: str = "") -> str:
    """The key of the scan of the visible history ``ids`` (``listed``: their ``_listed``)."""
    return "scan:" + (listed or _listed(ids))[:40]


def walk_key(plan: str, ids: Sequence[str], listed: str = "") -> str:
    """The key of the last walk over the visible history ``ids`` (in order) under ``plan``."""
    return "walk:" + sha256(f"{plan}\n{listed or _listed(ids)}".encode()).hexdigest()[:40]


def keyed_form(key: str, ids: Sequence[str], data: bytes) -> WireForm:
    """The row storing ``data`` under ``key`` (``scan_key``, ``walk_key``) for the visible
    history ``ids`` (not empty)."""
    return WireForm(message_id=ids[-1], plan=key, meta="", data=data)


def put(tx: Tx, forms: Iterable[WireForm]) -> None:
    tx.executemany(
        "INSERT INTO wire_forms (message_id, plan, context, meta, digest, data) "
        "VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (message_id, plan, context) DO UPDATE SET meta = excluded.meta, "
        "digest = excluded.digest, data = excluded.data "
        "WHERE wire_forms.digest <> excluded.digest OR wire_forms.data <> excluded.data",
        [(f.message_id, f.plan, f.context, f.meta, form_digest(f.meta, f.data, f.context),
          f.data) for f in forms])


def drop(tx: Tx, keys: Iterable[tuple[str, str]]) -> None:
    """Delete the rows under these (message id, plan) keys (a superseded last walk)."""
    rows = list(keys)
    if rows:
        tx.executemany("DELETE FROM wire_forms WHERE message_id = ? AND plan = ?", rows)


# One chain member's visible entries with their forms for one plan, in primary-key order: one index
# walk, one lookup per entry. The canonical rows are not read: they are verified when decoded.
_FORMS = """
SELECT sm.seq, sm.message_id, w.context, w.meta, w.digest, w.data FROM session_messages sm
LEFT JOIN wire_forms w ON w.message_id = sm.message_id AND w.plan = ?
WHERE sm.session_id = ? AND sm.seq < ? ORDER BY sm.session_id, sm.seq, w.context
"""


def load(tx: Tx, session_id: str, plan: str) -> StoredForms:
    """The visible entries and every stored form for ``plan`` (any context) that matches its
    digest."""
    entries: list[tuple[int, str]] = []
    forms: dict[str, dict[str, tuple[bytes, str]]] = {}
    problems: list[str] = []
    last_seq = -1  # (seqs are unique along the chain: its members' visible ranges are disjoint)
    check = form_digest
    for member, bound in history.chain(tx, session_id):
        for seq, mid, context, meta, stored, data in tx.rows(_FORMS, (plan, member, bound)):
            if seq != last_seq:  # an entry's first row (its form under "", when it has one)
                last_seq = seq
                entries.append((seq, mid))
            if data is None:
                continue  # no form for this plan: the codec encodes the turn
            if stored == check(meta, data := bytes(data), context):  # (PostgreSQL: memoryview)
                forms.setdefault(mid, {})[context] = (data, meta)
            elif mid not in problems:
                problems.append(mid)
    ids = list(map(operator.itemgetter(1), entries))
    listed = _listed(ids) if ids else ""
    return StoredForms(entries=tuple(entries), forms=forms, problems=tuple(problems),
                       scan=_keyed(tx, ids, scan_key(ids, listed)) if ids else None,
                       walk=_keyed(tx, ids, walk_key(plan, ids, listed)) if ids else None)


def _keyed(tx: Tx, ids: list[str], key: str) -> bytes | None:
    """The verified data of the row under the last of ``ids`` and ``key`` (None: none)."""
    row = tx.one("SELECT meta, digest, data FROM wire_forms WHERE message_id = ? AND plan = ?",
                 (ids[-1], key))
    if row is None or row[1] != form_digest(row[0], data := bytes(row[2])):
        return None
    return data
