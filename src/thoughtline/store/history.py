"""Reading and writing a session's visible history, in portable SQL over one open transaction.

A session's visible history is its parent's first ``fork_point`` visible messages followed by its
own rows; a row's ``seq`` is its position in that visible history, so a branch's first own row has
``seq = fork_point``. Inherited turns are never copied: a branch adds only its own rows, and message
and payload rows are content-addressed (written once, shared). Deleting a session splices it out of
its branches (they take over the list entries they inherited) and then removes the content no
session references any more.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from thoughtline.errors import CorruptPayload, HeadMoved
from thoughtline.messages import Message
from thoughtline.store import codec
from thoughtline.store.db import Row, Tx
from thoughtline.store.records import LoadedHistory, LoadProblem, ProblemKind, StoredMessage

#: The session's ancestor chain, each with the exclusive ``seq`` bound of what is inherited from it.
_CHAIN = """
WITH RECURSIVE chain(id, parent_id, fork_point, lim, depth) AS (
    SELECT id, parent_id, fork_point, CAST(NULL AS BIGINT), 0 FROM sessions WHERE id = ?
    UNION ALL
    SELECT s.id, s.parent_id, s.fork_point,
           CAST(CASE WHEN c.lim IS NULL OR c.fork_point < c.lim THEN c.fork_point
                     ELSE c.lim END AS BIGINT), c.depth + 1
    FROM sessions s JOIN chain c ON s.id = c.parent_id
)
SELECT id, lim FROM chain ORDER BY depth DESC
"""

# One member's rows in primary-key order: read straight off the (session_id, seq) index, no sort.
_ROWS = """
SELECT sm.seq, sm.message_id, sm.created_at, m.skeleton, m.skeleton_digest
FROM session_messages sm LEFT JOIN messages m ON m.digest = sm.message_id
WHERE sm.session_id = ? AND sm.seq < ? ORDER BY sm.session_id, sm.seq
"""
ENTRIES = """
SELECT seq, message_id FROM session_messages WHERE session_id = ? AND seq < ?
ORDER BY session_id, seq
"""
_NO_LIMIT = 2 ** 62

_CHUNK = 500


def chain(tx: Tx, session_id: str) -> list[tuple[str, int]]:
    """The ancestors (root first) and the session, each with the bound of what is visible from it.

    Ancestors' visible ranges are disjoint and increasing in ``seq``, so reading each member in
    primary-key order and concatenating gives the visible history in order.
    """
    return [(sid, _NO_LIMIT if lim is None else int(lim))
            for sid, lim in tx.all(_CHAIN, (session_id,))]


def visible_rows(tx: Tx, session_id: str) -> Iterator[Row]:
    """Each visible row in order, read as it is consumed (inside ``tx``)."""
    for sid, lim in chain(tx, session_id):
        yield from tx.rows(_ROWS, (sid, lim))


def visible_entries(tx: Tx, session_id: str) -> list[tuple[int, str]]:
    """``(seq, message id)`` of every visible message, in order (no skeletons read)."""
    return [(seq, mid) for sid, lim in chain(tx, session_id)
            for seq, mid in tx.all(ENTRIES, (sid, lim))]


def load(tx: Tx, session_id: str, *, skip_damaged: bool = False) -> LoadedHistory:
    """Every visible message, verified; see ``codec`` for what corruption does.

    ``skip_damaged`` (for showing and exporting what is left) reports a message whose own row is
    corrupt as a ``LoadProblem`` of kind ``TURN`` and leaves it out, instead of raising.
    """
    skeletons: list[codec.Skeleton] = []
    problems: list[LoadProblem] = []
    for row in visible_rows(tx, session_id):
        try:
            skeletons.append(codec.parse_skeleton(session_id, row))
        except CorruptPayload as exc:
            if not skip_damaged:
                raise
            problems.append(_damaged(row[0], row[1], exc))
    wanted = {ref.digest for s in skeletons for ref in s.refs}
    payloads = dict(_fetch_payloads(tx, sorted(wanted)))
    messages: list[StoredMessage] = []
    for skeleton in skeletons:
        try:
            message, found = codec.assemble(session_id, skeleton, payloads)
        except CorruptPayload as exc:
            if not skip_damaged:
                raise
            problems.append(_damaged(skeleton.seq, skeleton.id, exc))
            continue
        messages.append(StoredMessage(seq=skeleton.seq, id=skeleton.id, message=message,
                                      created_at=skeleton.created_at))
        problems.extend(found)
    problems.sort(key=lambda p: (p.seq, p.part))
    return LoadedHistory(messages=tuple(messages), problems=tuple(problems))


def _damaged(seq: int, message_id: str, exc: CorruptPayload) -> LoadProblem:
    return LoadProblem(seq=seq, kind=ProblemKind.TURN, digest=str(message_id), detail=str(exc))


def _fetch_payloads(tx: Tx, digests: Sequence[str]) -> Iterable[tuple[str, bytes]]:
    for start in range(0, len(digests), _CHUNK):
        chunk = digests[start:start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        for key, data in tx.all(f"SELECT digest, data FROM payloads WHERE digest IN ({marks})",
                                chunk):
            yield key, bytes(data)


def position(tx: Tx, session_id: str, message_id: str) -> int | None:
    """How many visible turns the session holds up to and including the last visible occurrence
    of ``message_id`` (None: it is not visible). One indexed query per lineage member, newest
    first: no entry list is read."""
    for sid, lim in reversed(chain(tx, session_id)):
        row = tx.one("SELECT MAX(seq) FROM session_messages WHERE session_id = ? AND seq < ? "
                     "AND message_id = ?", (sid, lim, message_id))
        if row is not None and row[0] is not None:
            return int(row[0]) + 1
    return None


def check_head(tx: Tx, session_id: str, expected: int | None) -> None:
    """Raise ``HeadMoved`` unless the session holds ``expected`` visible turns (None: any)."""
    if expected is None:
        return
    found = next_seq(tx, session_id)  # = the number of visible turns
    if found != expected:
        raise HeadMoved(session_id, expected=expected, found=found)


def next_seq(tx: Tx, session_id: str) -> int:
    row = tx.one("SELECT s.fork_point, (SELECT MAX(seq) FROM session_messages "
                 "WHERE session_id = s.id) FROM sessions s WHERE s.id = ?", (session_id,))
    assert row is not None, "caller checked the session exists"
    fork_point, last = row
    return last + 1 if last is not None else (fork_point or 0)


def append(tx: Tx, session_id: str, messages: Sequence[Message],
           now: float) -> list[StoredMessage]:
    """Write content rows (once per digest) and the session's list entries, in ``tx``."""
    tx.lock("thoughtline.content", shared=True)
    seq = next_seq(tx, session_id)
    encoded = [codec.encode_message(message) for message in messages]
    _write_content(tx, encoded)
    tx.executemany("INSERT INTO session_messages (session_id, seq, message_id, created_at) "
                   "VALUES (?, ?, ?, ?)",
                   [(session_id, seq + offset, e.id, now) for offset, e in enumerate(encoded)])
    return [StoredMessage(seq=seq + offset, id=e.id, message=message, created_at=now)
            for offset, (e, message) in enumerate(zip(encoded, messages, strict=True))]


def _write_content(tx: Tx, encoded: Sequence[codec.EncodedMessage]) -> None:
    # Every row is written in key order, whatever the order of the turn's messages: two
    # transactions upserting the same keys then wait for each other instead of deadlocking.
    # Rewriting a row whose bytes differ from what its digest names heals a corrupted copy.
    payloads = sorted({key: data for e in encoded for key, data in e.payloads.items()}.items())
    tx.executemany(
        "INSERT INTO payloads (digest, data) VALUES (?, ?) ON CONFLICT (digest) "
        "DO UPDATE SET data = excluded.data WHERE payloads.data <> excluded.data", payloads)
    skeletons = sorted({e.id: (e.id, e.skeleton, e.skeleton_digest) for e in encoded}.values())
    tx.executemany(
        "INSERT INTO messages (digest, skeleton, skeleton_digest) VALUES (?, ?, ?) "
        "ON CONFLICT (digest) DO UPDATE SET skeleton = excluded.skeleton, "
        "skeleton_digest = excluded.skeleton_digest "
        "WHERE messages.skeleton_digest <> excluded.skeleton_digest "
        "OR messages.skeleton <> excluded.skeleton", skeletons)
    tx.executemany(
        "INSERT INTO message_payloads (message_id, payload_digest) VALUES (?, ?) "
        "ON CONFLICT DO NOTHING",
        sorted({(e.id, key) for e in encoded for key in e.payloads}))


def delete(tx: Tx, session_id: str) -> None:
    """Splice the session out of its branches, delete it, then collect unreferenced content."""
    tx.lock("thoughtline.content")
    parent_id, fork_point = tx.one(
        "SELECT parent_id, fork_point FROM sessions WHERE id = ?", (session_id,)) or (None, None)
    children = tx.all("SELECT id, fork_point FROM sessions WHERE parent_id = ?", (session_id,))
    for child_id, child_fork in children:
        # The child takes over the entries it inherited from this session's own rows ...
        tx.execute("INSERT INTO session_messages (session_id, seq, message_id, created_at) "
                   "SELECT ?, seq, message_id, created_at FROM session_messages "
                   "WHERE session_id = ? AND seq < ?", (child_id, session_id, child_fork))
        # ... and inherits the rest from this session's own parent, if any.
        new_fork = None if parent_id is None else min(fork_point, child_fork)
        tx.execute("UPDATE sessions SET parent_id = ?, fork_point = ? WHERE id = ?",
                   (parent_id, new_fork, child_id))
    message_ids = [m for (m,) in tx.all(
        "SELECT DISTINCT message_id FROM session_messages WHERE session_id = ? UNION "
        "SELECT message_id FROM generation_messages WHERE session_id = ?",
        (session_id, session_id))]
    tx.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
    tx.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    _collect(tx, message_ids)


def _collect(tx: Tx, message_ids: Sequence[str]) -> None:
    """Delete the given messages no session lists any more, then their orphaned payloads."""
    for start in range(0, len(message_ids), _CHUNK):
        chunk = message_ids[start:start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        orphans = [m for (m,) in tx.all(
            f"SELECT digest FROM messages WHERE digest IN ({marks}) AND NOT EXISTS "
            "(SELECT 1 FROM session_messages sm WHERE sm.message_id = messages.digest) "
            "AND NOT EXISTS (SELECT 1 FROM generation_messages gm "
            "WHERE gm.message_id = messages.digest)", chunk)]
        if not orphans:
            continue
        marks = ", ".join("?" * len(orphans))
        payload_ids = [p for (p,) in tx.all(
            f"SELECT DISTINCT payload_digest FROM message_payloads WHERE message_id IN ({marks})",
            orphans)]
        tx.execute(f"DELETE FROM wire_forms WHERE message_id IN ({marks})", orphans)
        tx.execute(f"DELETE FROM messages WHERE digest IN ({marks})", orphans)
        if payload_ids:
            marks = ", ".join("?" * len(payload_ids))
            tx.execute(f"DELETE FROM payloads WHERE digest IN ({marks}) AND NOT EXISTS "
                       "(SELECT 1 FROM message_payloads mp "
                       "WHERE mp.payload_digest = payloads.digest)", payload_ids)
