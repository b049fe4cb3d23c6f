"""Copying every session of one store into another, byte-identical and verified (``migrate``).

Owns ``sessions migrate``'s semantics. Rows are copied as stored, not re-encoded: skeletons and
opaque payloads keep their exact bytes and digests, sessions their ids, times, branch points,
tenants and configs. Each session is one target transaction (a re-run after an interruption
resumes where it stopped) made of upserts, so re-running is safe: content already there is kept
(or healed, when the target's copy no longer matches its digest), list entries already there are
kept, turns added to the source since are added. The global verdict ledger is merged. Stored
wire forms (a cache of each message's request bytes per plan) come along when they verify, and
so do a compacted session's archived generations (with the messages they reference).

Verification, both sides: a source payload whose bytes do not match its digest is reported and
not copied (the target then reports it missing on load, and never sends it); a source skeleton
that fails is reported and copied as is (the target refuses that turn exactly like the source).
After each session's commit the target's rows are read back and compared, byte for byte, with
the source's; any difference (say, a session that diverged in the target) is a problem.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from thoughtline.messages import digest
from thoughtline.store.db import Row, Tx
from thoughtline.store.engine import SqlStore
from thoughtline.store.wireforms import form_digest

_SESSION_COLUMNS = "id, title, created_at, updated_at, parent_id, fork_point, model_config, tenant"
_GENERATION_COLUMNS = ("session_id, generation, created_at, archived_at, parent_id, fork_point, "
                       "turns, note")
_CHUNK = 500


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionRows:
    """One session's own rows as stored in the source."""

    session: Row
    entries: list[Row]  # (seq, message_id, created_at)
    messages: dict[str, Row]  # digest -> (digest, skeleton, skeleton_digest)
    links: list[Row]  # (message_id, payload_digest)
    payloads: dict[str, bytes]  # digest -> bytes, verified
    wire_forms: list[Row]  # (message_id, plan, context, meta, digest, data), verified
    generations: list[Row]  # session_generations rows (compaction's archived histories)
    generation_entries: list[Row]  # generation_messages rows

    @property
    def id(self) -> str:
        return str(self.session[0])


@dataclass(kw_only=True, slots=True)
class TransferReport:
    """What a migration did; ``problems`` empty means every digest verified on both sides."""

    sessions: int = 0
    entries: int = 0
    payloads: int = 0
    payload_bytes: int = 0
    verdicts: int = 0
    problems: list[str] = field(default_factory=list)

    def summary(self, target: str) -> str:
        verified = ("all digests verified" if not self.problems
                    else f"{len(self.problems)} problem(s), listed above")
        return (f"migrated {self.sessions} session(s): {self.entries} message(s), "
                f"{self.payloads} payload(s) ({self.payload_bytes:,} bytes), {self.verdicts} "
                f"verdict(s) to {target}; {verified}")


def copy_store(source: SqlStore, target: SqlStore, *,
               progress: Callable[[str], None] = lambda _line: None) -> TransferReport:
    """Copy every session (parents first) and merge the verdict ledger; see the module doc."""
    report = TransferReport()
    ids = _sessions_in_order(source)
    for number, sid in enumerate(ids, start=1):
        rows = _read_session(source, sid, report)
        with target._db.transaction(write=True) as tx:
            _write_session(tx, rows)
        _verify(target, rows, report)
        size = sum(len(rows.payloads[d]) for d in rows.payloads)
        report.sessions += 1
        report.entries += len(rows.entries)
        report.payloads += len(rows.payloads)
        report.payload_bytes += size
        progress(f"[{number}/{len(ids)}] {sid[:12]}  {len(rows.entries)} message(s), "
                 f"{len(rows.payloads)} payload(s), {size:,} bytes: copied and verified")
    for verdict in source.verdicts():
        target.record_verdict(verdict)
        report.verdicts += 1
    return report


def _sessions_in_order(source: SqlStore) -> list[str]:
    """Every session id, each parent before its branches (the target's foreign key needs it)."""
    with source._db.transaction(write=False) as tx:
        rows = tx.all("SELECT id, parent_id FROM sessions ORDER BY created_at, id")
    parent = {sid: pid for sid, pid in rows}
    done: set[str] = set()
    ordered: list[str] = []
    for sid, _ in rows:
        chain: list[str] = []
        node: str | None = sid
        while node is not None and node not in done:
            chain.append(node)
            node = parent.get(node)
        for item in reversed(chain):
            done.add(item)
            ordered.append(item)
    return ordered


def _read_session(source: SqlStore, sid: str, report: TransferReport) -> SessionRows:
    with source._db.transaction(write=False) as tx:
        session = tx.one(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,))
        assert session is not None, "listed in the same store"
        entries = tx.all("SELECT seq, message_id, created_at FROM session_messages "
                         "WHERE session_id = ? ORDER BY seq", (sid,))
        generations = tx.all(f"SELECT {_GENERATION_COLUMNS} FROM session_generations "
                             "WHERE session_id = ? ORDER BY generation", (sid,))
        generation_entries = tx.all("SELECT session_id, generation, seq, message_id FROM "
                                    "generation_messages WHERE session_id = ? "
                                    "ORDER BY generation, seq", (sid,))
        ids = sorted({m for _, m, _ in entries} | {row[3] for row in generation_entries})
        messages = {row[0]: (row[0], bytes(row[1]), row[2]) for row in _in(
            tx, "SELECT digest, skeleton, skeleton_digest FROM messages WHERE digest IN", ids)}
        links = _in(tx, "SELECT message_id, payload_digest FROM message_payloads "
                        "WHERE message_id IN", ids)
        wanted = sorted({p for _, p in links})
        raw = {key: bytes(data) for key, data in _in(
            tx, "SELECT digest, data FROM payloads WHERE digest IN", wanted)}
        forms = [(m, plan, context, meta, stored, bytes(data))
                 for m, plan, context, meta, stored, data in _in(
                     tx, "SELECT message_id, plan, context, meta, digest, data FROM wire_forms "
                         "WHERE message_id IN", ids)]
    for key, skeleton, stored in messages.values():
        if digest(skeleton) != stored:
            report.problems.append(f"session {sid}: message {key} has a corrupt skeleton in the "
                                   "source; copied as is (the target refuses it on load too)")
    payloads: dict[str, bytes] = {}
    for key in wanted:
        data = raw.get(key)
        if data is None or digest(data) != key:
            state = "missing" if data is None else "corrupt (digest mismatch)"
            report.problems.append(f"session {sid}: payload {key} is {state} in the source; "
                                   "not copied (never sent)")
            continue
        payloads[key] = data
    # Stored wire forms are a cache (rebuilt from the history when missing): copy the good ones.
    wire_forms = sorted(f for f in forms if form_digest(f[3], f[5], f[2]) == f[4])
    return SessionRows(session=session, entries=entries, messages=messages, links=links,
                       payloads=payloads, wire_forms=wire_forms, generations=generations,
                       generation_entries=generation_entries)


def _in(tx: Tx, sql: str, keys: Sequence[str]) -> list[Row]:
    out: list[Row] = []
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start:start + _CHUNK]
        out.extend(tx.all(f"{sql} ({', '.join('?' * len(chunk))})", chunk))
    return out


def _write_session(tx: Tx, rows: SessionRows) -> None:
    """Upsert one session's rows (keys in order, like ``history.append``: no deadlocks)."""
    tx.lock("thoughtline.content", shared=True)
    tx.execute(f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT (id) DO NOTHING", rows.session)
    tx.executemany("INSERT INTO payloads (digest, data) VALUES (?, ?) ON CONFLICT (digest) "
                   "DO UPDATE SET data = excluded.data WHERE payloads.data <> excluded.data",
                   sorted(rows.payloads.items()))
    good = [m for m in sorted(rows.messages.values()) if digest(m[1]) == m[2]]
    bad = [m for m in sorted(rows.messages.values()) if digest(m[1]) != m[2]]
    tx.executemany("INSERT INTO messages (digest, skeleton, skeleton_digest) VALUES (?, ?, ?) "
                   "ON CONFLICT (digest) DO UPDATE SET skeleton = excluded.skeleton, "
                   "skeleton_digest = excluded.skeleton_digest "
                   "WHERE messages.skeleton <> excluded.skeleton "
                   "OR messages.skeleton_digest <> excluded.skeleton_digest", good)
    tx.executemany("INSERT INTO messages (digest, skeleton, skeleton_digest) VALUES (?, ?, ?) "
                   "ON CONFLICT (digest) DO NOTHING", bad)
    tx.executemany("INSERT INTO message_payloads (message_id, payload_digest) VALUES (?, ?) "
                   "ON CONFLICT DO NOTHING", sorted(rows.links))
    tx.executemany("INSERT INTO wire_forms (message_id, plan, context, meta, digest, data) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id, plan, context) DO NOTHING",
                   rows.wire_forms)
    tx.executemany(f"INSERT INTO session_generations ({_GENERATION_COLUMNS}) VALUES "
                   "(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, generation) DO NOTHING",
                   rows.generations)
    tx.executemany("INSERT INTO generation_messages (session_id, generation, seq, message_id) "
                   "VALUES (?, ?, ?, ?) ON CONFLICT (session_id, generation, seq) DO NOTHING",
                   rows.generation_entries)
    sid = rows.id
    tx.executemany("INSERT INTO session_messages (session_id, seq, message_id, created_at) "
                   "VALUES (?, ?, ?, ?) ON CONFLICT (session_id, seq) DO NOTHING",
                   [(sid, seq, message_id, created) for seq, message_id, created in rows.entries])


def _verify(target: SqlStore, rows: SessionRows, report: TransferReport) -> None:
    """Read the session back from the target and compare every byte and digest."""
    sid = rows.id
    with target._db.transaction(write=False) as tx:
        entries = tx.all("SELECT seq, message_id FROM session_messages WHERE session_id = ? "
                         "ORDER BY seq", (sid,))
        messages = {key: (bytes(skeleton), stored) for key, skeleton, stored in _in(
            tx, "SELECT digest, skeleton, skeleton_digest FROM messages WHERE digest IN",
            sorted(rows.messages))}
        payloads = {key: bytes(data) for key, data in _in(
            tx, "SELECT digest, data FROM payloads WHERE digest IN", sorted(rows.payloads))}
    have: dict[int, str] = dict(entries)
    for seq, message_id, _ in rows.entries:
        if have.get(seq) != message_id:
            report.problems.append(f"session {sid}: the target's turn {seq} is "
                                   f"{have.get(seq)}, not {message_id}: the session diverged "
                                   "in the target; it was left as it is there")
    for key, skeleton, stored in rows.messages.values():
        if messages.get(key) != (skeleton, stored):
            report.problems.append(f"session {sid}: message {key} differs in the target")
    for key, data in rows.payloads.items():
        copied = payloads.get(key)
        if copied != data or digest(copied) != key:
            report.problems.append(f"session {sid}: payload {key} did not verify in the target")

