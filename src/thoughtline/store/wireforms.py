"""Stored wire forms: each message's encoded request bytes per replay plan, in portable SQL.

A wire form is a pure function of (message, plan), so it is keyed by the message's content id
(shared by every session and branch that holds the message) and the plan's digest, and written
once. On load every form is checked against its digest; a form that fails is left out and reported
(the caller rebuilds it from the canonical history), never returned. Deleting messages deletes
their forms (``history._collect``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from thoughtline.messages import digest
from thoughtline.store import history
from thoughtline.store.db import Tx

_CHUNK = 500


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


def load(tx: Tx, session_id: str, plan: str) -> StoredForms:
    entries = tuple(history.visible_entries(tx, session_id))
    ids = sorted({mid for _, mid in entries})
    forms: dict[str, WireForm] = {}
    problems: list[str] = []
    intact = True
    for start in range(0, len(ids), _CHUNK):
        chunk: Sequence[str] = ids[start:start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        intact = _intact(tx, chunk, marks) and intact
        for mid, meta, stored, data in tx.all(
                f"SELECT message_id, meta, digest, data FROM wire_forms WHERE plan = ? AND "
                f"message_id IN ({marks})", [plan, *chunk]):
            data = bytes(data)
            if digest(data) != stored:
                problems.append(mid)
                continue
            forms[mid] = WireForm(message_id=mid, plan=plan, meta=meta, data=data)
    return StoredForms(entries=entries, forms=forms, problems=tuple(problems), intact=intact)


def _bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _intact(tx: Tx, chunk: Sequence[str], marks: str) -> bool:
    """Do these messages' skeletons and payloads all exist and match their digests?"""
    rows = tx.all(f"SELECT skeleton, skeleton_digest FROM messages WHERE digest IN ({marks})",
                  list(chunk))
    if len(rows) != len(chunk) or any(digest(_bytes(s)) != d for s, d in rows):
        return False
    return all(data is not None and digest(bytes(data)) == key for key, data in tx.all(
        f"SELECT mp.payload_digest, p.data FROM message_payloads mp LEFT JOIN payloads p "
        f"ON p.digest = mp.payload_digest WHERE mp.message_id IN ({marks})", list(chunk)))
