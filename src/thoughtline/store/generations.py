"""Generations of a session: compaction replaces the history, the previous one stays readable.

A session's history is generation N (0 until its first compaction). Replacing it — compaction, or
restoring an older generation — happens in one write transaction: the current visible history
(inherited messages included) is archived by reference as generation N, branches that inherited
from it are detached onto their own copy of the entries they saw (their history never changes;
their ``parent_id`` is kept, with ``fork_point`` 0), and the new history becomes the session's own
rows (its own ``parent_id`` kept for lineage, ``fork_point`` 0). Message and payload rows are
content-addressed and shared, so nothing is copied but list entries. A crash or Ctrl-C before the
commit leaves generation N exactly as it was.

The write refuses when the session changed after the caller read it (another process appended a
turn meanwhile): the caller's new history was computed from the old one and would lose that turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from thoughtline.codecs.shape import deeper_than
from thoughtline.errors import HistoryChanged, NotFound, UsageError
from thoughtline.messages import Message
from thoughtline.store import history
from thoughtline.store.db import Tx

__all__ = ["Generation", "list_generations", "load_generation", "replace", "restore"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Generation:
    """One generation of a session's history; ``current`` for the one the session continues."""

    number: int
    turns: int
    created_at: float
    archived_at: float | None = None
    current: bool = False
    note: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.number, "turns": self.turns, "current": self.current,
                "created_at": self.created_at, "archived_at": self.archived_at,
                "note": dict(self.note)}


def _visible(tx: Tx, session_id: str) -> list[tuple[int, str]]:
    """(seq, message id) of every visible message, in order."""
    return history.visible_entries(tx, session_id)


def _current_number(tx: Tx, session_id: str) -> int:
    row = tx.one("SELECT MAX(generation) FROM session_generations WHERE session_id = ?",
                 (session_id,))
    return 0 if row is None or row[0] is None else int(row[0]) + 1


def _began(tx: Tx, session_id: str, number: int) -> float:
    """When generation ``number`` began: the previous one's archiving, else the session's birth."""
    if number > 0:
        row = tx.one("SELECT archived_at FROM session_generations WHERE session_id = ? "
                     "AND generation = ?", (session_id, number - 1))
        if row is not None:
            return float(row[0])
    row = tx.one("SELECT created_at FROM sessions WHERE id = ?", (session_id,))
    return float(row[0]) if row else 0.0


def _lock_session(tx: Tx, session_id: str) -> tuple[str | None, int | None]:
    # Touching the row first takes its write lock, as every other writer of the session does.
    if not tx.execute("UPDATE sessions SET updated_at = updated_at WHERE id = ?", (session_id,)):
        raise NotFound(f"no session {session_id!r}")
    row = tx.one("SELECT parent_id, fork_point FROM sessions WHERE id = ?", (session_id,))
    assert row is not None
    return row[0], row[1]


def _archive(tx: Tx, session_id: str, visible: Sequence[tuple[int, str]],
             lineage: tuple[str | None, int | None], note: Mapping[str, Any], now: float) -> int:
    number = _current_number(tx, session_id)
    tx.execute("INSERT INTO session_generations (session_id, generation, created_at, archived_at, "
               "parent_id, fork_point, turns, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (session_id, number, _began(tx, session_id, number), now, lineage[0], lineage[1],
                len(visible), json.dumps(dict(note), sort_keys=True)))
    tx.executemany("INSERT INTO generation_messages (session_id, generation, seq, message_id) "
                   "VALUES (?, ?, ?, ?)",
                   [(session_id, number, seq, mid) for seq, mid in visible])
    return number


def _detach_branches(tx: Tx, session_id: str, visible: Sequence[tuple[int, str]],
                     now: float) -> None:
    """Branches keep exactly the history they inherited: their own copy of those entries."""
    for child_id, fork in tx.all("SELECT id, fork_point FROM sessions WHERE parent_id = ?",
                                 (session_id,)):
        if not fork:
            continue
        tx.executemany("INSERT INTO session_messages (session_id, seq, message_id, created_at) "
                       "VALUES (?, ?, ?, ?)",
                       [(child_id, seq, mid, now) for seq, mid in visible if seq < fork])
        tx.execute("UPDATE sessions SET fork_point = 0 WHERE id = ?", (child_id,))


def _begin(tx: Tx, session_id: str, expect: tuple[int, str | None] | None,
           note: Mapping[str, Any], now: float) -> tuple[int, list[tuple[int, str]]]:
    lineage = _lock_session(tx, session_id)
    visible = _visible(tx, session_id)
    if expect is not None and (len(visible), visible[-1][1] if visible else None) != expect:
        raise HistoryChanged(session_id, expected=expect[0], found=len(visible))
    number = _archive(tx, session_id, visible, lineage, note, now)
    _detach_branches(tx, session_id, visible, now)
    tx.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
    tx.execute("UPDATE sessions SET fork_point = 0, updated_at = ? WHERE id = ?",
               (now, session_id))
    return number, visible


def replace(tx: Tx, session_id: str, messages: Sequence[Message], *,
            expect: tuple[int, str | None] | None, note: Mapping[str, Any]) -> int:
    """Archive the current generation and make ``messages`` the session's history.

    ``expect`` is (number of visible messages, id of the last one) as the caller read them; the
    write is refused when the session no longer looks like that. Returns the archived number.
    """
    now = time.time()
    number, _ = _begin(tx, session_id, expect, note, now)
    history.append(tx, session_id, messages, now)
    return number


def restore(tx: Tx, session_id: str, number: int, *, note: Mapping[str, Any]) -> int:
    """Make archived generation ``number`` the session's history again (the current one is
    archived first, so a restore can itself be undone). Returns the new current number."""
    tx.lock("thoughtline.content", shared=True)  # the entries below reference existing content
    rows = tx.all("SELECT seq, message_id FROM generation_messages WHERE session_id = ? AND "
                  "generation = ? ORDER BY seq", (session_id, number))
    if not rows and tx.one("SELECT 1 FROM session_generations WHERE session_id = ? AND "
                           "generation = ?", (session_id, number)) is None:
        current = _current_number(tx, session_id)
        raise UsageError(f"session {session_id[:12]} has no archived generation {number} "
                         f"(its current generation is {current})")
    now = time.time()
    archived, _ = _begin(tx, session_id, None, {**note, "restored": number}, now)
    tx.executemany("INSERT INTO session_messages (session_id, seq, message_id, created_at) "
                   "VALUES (?, ?, ?, ?)",
                   [(session_id, index, mid, now) for index, (_, mid) in enumerate(rows)])
    return archived + 1


def _note(session_id: str, number: int, text: str | None) -> dict[str, Any]:
    """A generation's stored note; a damaged one is shown as such, never fatal (the note only
    describes the generation: its turns are elsewhere)."""
    try:
        note = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:  # also past orjson's nesting limit
        note = None
    if not isinstance(note, dict) or deeper_than(note):
        return {"damaged": f"session {session_id[:12]} generation {number}: unreadable note"}
    return note


def list_generations(tx: Tx, session_id: str) -> list[Generation]:
    """Archived generations, oldest first, then the current one."""
    rows = tx.all("SELECT generation, turns, created_at, archived_at, note FROM "
                  "session_generations WHERE session_id = ? ORDER BY generation", (session_id,))
    out = [Generation(number=int(g), turns=int(t), created_at=float(c), archived_at=float(a),
                      note=_note(session_id, int(g), n)) for g, t, c, a, n in rows]
    number = _current_number(tx, session_id)
    out.append(Generation(number=number, turns=len(_visible(tx, session_id)),
                          created_at=_began(tx, session_id, number), current=True))
    return out


def load_generation(tx: Tx, session_id: str, number: int) -> list[tuple[int, str]]:
    """(seq, message id) of an archived generation; raises UsageError when there is none."""
    rows = tx.all("SELECT seq, message_id FROM generation_messages WHERE session_id = ? AND "
                  "generation = ? ORDER BY seq", (session_id, number))
    if not rows and tx.one("SELECT 1 FROM session_generations WHERE session_id = ? AND "
                           "generation = ?", (session_id, number)) is None:
        raise UsageError(f"session {session_id[:12]} has no archived generation {number}")
    return [(int(seq), str(mid)) for seq, mid in rows]
