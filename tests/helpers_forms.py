"""Test helpers for stored wire forms (issue 17): damage one stored form in a state database,
and the problem a resume then reports."""

from __future__ import annotations

import sqlite3
from pathlib import Path

FORM_FAILED = ("its stored wire form failed its digest: it was left out and is rebuilt from the "
               "canonical history")


def forge_stored_form(db: Path, needle: bytes, replacement: bytes) -> None:
    """Replace ``needle`` in the one stored wire form that holds it, behind the store's back."""
    raw = sqlite3.connect(db, isolation_level=None)
    try:
        [data] = [bytes(d) for (d,) in raw.execute("SELECT data FROM wire_forms")
                  if needle in bytes(d)]
        raw.execute("UPDATE wire_forms SET data = ? WHERE data = ?",
                    (data.replace(needle, replacement), data))
    finally:
        raw.close()


def drop_stored_forms(db: Path, message_ids: list[str]) -> None:
    """Delete every stored wire form of these messages, behind the store's back."""
    raw = sqlite3.connect(db, isolation_level=None)
    try:
        raw.executemany("DELETE FROM wire_forms WHERE message_id = ?",
                        [(mid,) for mid in message_ids])
    finally:
        raw.close()
