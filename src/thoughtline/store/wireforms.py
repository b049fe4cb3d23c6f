"""Stored wire forms: each message's encoded request bytes per replay plan, in portable SQL.

A wire form is a pure function of (message, plan), so it is keyed by the message's content id
(shared by every session and branch that holds the message) and the plan's digest, and written
once. On load every form is checked against its digest; a form that fails is left out and reported
(the caller rebuilds it from the canonical history), never returned. Deleting messages deletes
their forms (``history._collect``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from thoughtline.messages import digest
from thoughtline.store import history
from thoughtline.store.db import Tx


@dataclass(frozen=True, kw_only=True, slots=True)
class WireForm:
    """One message's wire bytes for one plan, and what the core reads without decoding it."""

    message_id: str
    plan: str
    meta: str
    data: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredForms:
    """A session's visible entries and the verified forms found for one plan."""

    entries: tuple[tuple[int, str], ...]  # (seq, message id), in order
    forms: Mapping[str, WireForm]  # message id -> form (only verified ones)
    problems: tuple[str, ...] = ()  # message ids whose stored form failed its digest
    #: Every skeleton and payload of the visible messages is present and matches its digest
    #: (checked by hashing only, nothing parsed). When False the caller loads the canonical
    #: history the ordinary way, which reports exactly what is damaged.
    intact: bool = True


def put(tx: Tx, forms: Iterable[WireForm]) -> None:
    tx.executemany(
        "INSERT INTO wire_forms (message_id, plan, meta, digest, data) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (message_id, plan) DO UPDATE SET meta = excluded.meta, "
        "digest = excluded.digest, data = excluded.data "
        "WHERE wire_forms.digest <> excluded.digest OR wire_forms.data <> excluded.data",
        [(f.message_id, f.plan, f.meta, digest(f.data), f.data) for f in forms])


# Each reads one chain member's visible rows joined from session_messages in primary-key order:
# one index walk per member instead of an IN list per 500 ids.
_SKELETONS = """
SELECT m.skeleton, m.skeleton_digest FROM session_messages sm
JOIN messages m ON m.digest = sm.message_id WHERE sm.session_id = ? AND sm.seq < ?
"""
_PAYLOADS = """
SELECT mp.payload_digest, p.data FROM session_messages sm
JOIN message_payloads mp ON mp.message_id = sm.message_id
LEFT JOIN payloads p ON p.digest = mp.payload_digest WHERE sm.session_id = ? AND sm.seq < ?
"""
_FORMS = """
SELECT sm.message_id, w.meta, w.digest, w.data FROM session_messages sm
JOIN wire_forms w ON w.message_id = sm.message_id AND w.plan = ?
WHERE sm.session_id = ? AND sm.seq < ?
"""


def load(tx: Tx, session_id: str, plan: str) -> StoredForms:
    members = history.chain(tx, session_id)
    entries: list[tuple[int, str]] = []
    forms: dict[str, WireForm] = {}
    problems: list[str] = []
    intact = True
    for member, bound in members:
        own = tx.all(history.ENTRIES, (member, bound))
        entries.extend(own)
        intact = _intact(tx, member, bound, len(own)) and intact
        for mid, meta, stored, data in tx.all(_FORMS, (plan, member, bound)):
            data = bytes(data)
            if digest(data) != stored:
                problems.append(mid)
                continue
            forms[mid] = WireForm(message_id=mid, plan=plan, meta=meta, data=data)
    return StoredForms(entries=tuple((int(seq), mid) for seq, mid in entries), forms=forms,
                       problems=tuple(problems), intact=intact)


def _bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _intact(tx: Tx, member: str, bound: int, count: int) -> bool:
    """Do this member's visible skeletons and payloads all exist and match their digests?"""
    rows = tx.all(_SKELETONS, (member, bound))
    if len(rows) != count or any(digest(_bytes(s)) != d for s, d in rows):
        return False
    return all(data is not None and digest(bytes(data)) == key
               for key, data in tx.all(_PAYLOADS, (member, bound)))
