"""The ``Store`` implementation shared by every backend, in portable SQL over a ``Database``.

Owns session bookkeeping (create, find by id / prefix / title, list, branch, delete) and the
transaction boundaries of every public call. How histories are laid out is ``history``'s business,
how rows map to values is ``codec``'s, the verdict ledger is ``ledger``'s, and connecting, locking
and driver errors are the backend adapter's (``sqlite``, ``postgres``).

Nothing here stores secrets: ``model_config`` holds provider ids, URLs and the *names* of the
environment variables keys are read from, never key values or request headers.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from thoughtline.errors import NotFound, UsageError
from thoughtline.messages import Message
from thoughtline.store import codec, generations, history, ledger, wireforms
from thoughtline.store.base import LoadedHistory, SessionRecord, StoredMessage
from thoughtline.store.db import Database, Tx
from thoughtline.store.migrations import migrate
from thoughtline.store.records import new_session_id
from thoughtline.store.rehydration import IndexKey, RehydrationStore, index_turn
from thoughtline.store.secrets import SecretStore
from thoughtline.verdicts import Verdict

SESSION_SELECT = (
    "SELECT s.id, s.title, s.created_at, s.updated_at, s.parent_id, s.fork_point, "
    "s.model_config, s.tenant, COALESCE(s.fork_point, 0) + "
    "(SELECT COUNT(*) FROM session_messages sm WHERE sm.session_id = s.id) FROM sessions s")

_NEWEST_FIRST = " ORDER BY s.updated_at DESC, s.created_at DESC, s.id"
_CANDIDATES = 10


class SqlStore(RehydrationStore, SecretStore):
    """Durable sessions, messages and the verdict ledger (see ``thoughtline.store.base.Store``)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        try:
            migrate(db)
        except BaseException:
            db.close()
            raise

    # --- sessions -----------------------------------------------------------------------------

    def create_session(self, *, title: str = "", model_config: Mapping[str, Any] | None = None,
                       tenant: str = "") -> SessionRecord:
        config = codec.config_to_text(model_config)
        now = time.time()
        sid = new_session_id()
        with self._db.transaction(write=True) as tx:
            _insert(tx, sid, title, config, tenant, now)
            return _session(tx, sid)

    def start_session(self, record: SessionRecord, messages: Sequence[Message], *,
                      keys: Sequence[IndexKey] = ()) -> list[StoredMessage]:
        """Write ``record`` — a session not stored yet, its id chosen by the caller
        (``new_session_id``) — with its first ``messages``, the last one indexed under ``keys``
        for the session's tenant, in one transaction: a session exists once it has a turn, so a
        request that stores none leaves no session behind."""
        if not messages:
            raise UsageError(f"session {record.id} is stored with its first turn: no messages")
        config = codec.config_to_text(record.model_config)
        now = time.time()
        with self._db.transaction(write=True) as tx:
            _insert(tx, record.id, record.title, config, record.tenant, now)
            stored = history.append(tx, record.id, messages, now)
            if keys:
                index_turn(tx, record.tenant, record.id, stored[-1].id, keys, now)
        self._verified().put(stored[-1].id, stored[-1].message)
        return stored

    def import_session(self, *, title: str, model_config: Mapping[str, Any],
                       messages: Sequence[Message], tenant: str = "") -> SessionRecord:
        """Create a session holding ``messages`` in one transaction: all of it or nothing."""
        config = codec.config_to_text(model_config)
        now = time.time()
        sid = new_session_id()
        with self._db.transaction(write=True) as tx:
            _insert(tx, sid, title, config, tenant, now)
            history.append(tx, sid, messages, now)
            return _session(tx, sid)

    def get_session(self, ref: str, *, tenant: str | None = None) -> SessionRecord:
        """By exact id, else unique id prefix, else exact title (newest wins). Raises NotFound."""
        with self._db.transaction(write=False) as tx:
            return _find(tx, ref, tenant)

    def latest_session(self, *, tenant: str | None = None) -> SessionRecord | None:
        found = self.list_sessions(tenant=tenant, limit=1)
        return found[0] if found else None

    def list_sessions(self, *, tenant: str | None = None,
                      limit: int | None = None) -> list[SessionRecord]:
        """Newest-updated first; ``turns`` counts inherited messages too."""
        where, params = _tenant_filter(tenant, "WHERE")
        sql = SESSION_SELECT + where + _NEWEST_FIRST
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        with self._db.transaction(write=False) as tx:
            return [codec.session_from_row(row) for row in tx.all(sql, params)]

    def set_model_config(self, session_id: str, model_config: Mapping[str, Any]) -> None:
        config = codec.config_to_text(model_config)
        self._update(session_id, "model_config = ?", config)

    def update_model_config(self, session_id: str,
                            update: Callable[[Mapping[str, Any]], Mapping[str, Any]],
                            ) -> SessionRecord:
        """Read-merge-write the model config in one write transaction.

        ``update`` gets the config as stored now (another process may have changed it since this
        one loaded it) and returns the config to store; the row is locked meanwhile.
        """
        with self._db.transaction(write=True) as tx:
            # Touching the row first takes its write lock (SQLite: the database; PostgreSQL: the
            # row), so the read below sees every committed change and none can slip in between.
            if not tx.execute("UPDATE sessions SET updated_at = updated_at WHERE id = ?",
                              (session_id,)):
                raise NotFound(f"no session {session_id!r}")
            current = _session(tx, session_id).model_config
            config = codec.config_to_text(update(current))
            tx.execute("UPDATE sessions SET model_config = ?, updated_at = ? WHERE id = ?",
                       (config, time.time(), session_id))
            return _session(tx, session_id)

    def set_title(self, session_id: str, title: str) -> None:
        self._update(session_id, "title = ?", title)

    def _update(self, session_id: str, assignment: str, value: Any) -> None:
        with self._db.transaction(write=True) as tx:
            changed = tx.execute(f"UPDATE sessions SET {assignment}, updated_at = ? WHERE id = ?",
                                 (value, time.time(), session_id))
            if not changed:
                raise NotFound(f"no session {session_id!r}")

    def branch(self, session_id: str, *, at: int | None = None, title: str = "") -> SessionRecord:
        """A new session inheriting the first ``at`` visible messages (default: all); no copies."""
        now = time.time()
        sid = new_session_id()
        with self._db.transaction(write=True) as tx:
            parent = _session(tx, session_id)
            fork = parent.turns if at is None else at
            if not 0 <= fork <= parent.turns:
                plural = "" if parent.turns == 1 else "s"
                raise UsageError(f"cannot branch session {session_id} at turn {fork}: it has "
                                 f"{parent.turns} turn{plural} (--at 0 to {parent.turns})")
            tx.execute(
                "INSERT INTO sessions (id, title, created_at, updated_at, parent_id, fork_point, "
                "model_config, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, title, now, now, parent.id, fork,
                 codec.config_to_text(parent.model_config), parent.tenant))
            return _session(tx, sid)

    def delete_session(self, session_id: str) -> None:
        """Delete a session; its branches keep their whole history (they take over its entries)."""
        with self._db.transaction(write=True) as tx:
            # Touching the row first locks it against a concurrent append to it.
            if not tx.execute("UPDATE sessions SET updated_at = updated_at WHERE id = ?",
                              (session_id,)):
                raise NotFound(f"no session {session_id!r}")
            history.delete(tx, session_id)

    # --- history ------------------------------------------------------------------------------

    def load_history(self, session_id: str, *, skip_damaged: bool = False) -> LoadedHistory:
        """Every visible message in order, payloads verified (problems reported, never sent).

        ``skip_damaged``: a message whose own row is corrupt is reported and left out instead of
        failing the whole load (for ``sessions show``/``export``; never for sending)."""
        # Loading builds tens of thousands of small long-lived objects: the cyclic collector would
        # rescan them over and over (a third of a 1,000-turn resume). None of them form cycles.
        collecting = gc.isenabled()
        gc.disable()
        try:
            with self._db.transaction(write=False) as tx:
                _session(tx, session_id)
                return history.load(tx, session_id, skip_damaged=skip_damaged)
        finally:
            if collecting:
                # What was just loaded lives as long as the session: move it out of the
                # collector's generations so later collections never rescan it.
                gc.freeze()
                gc.enable()

    def append(self, session_id: str, messages: Sequence[Message], *,
               expect_turns: int | None = None) -> list[StoredMessage]:
        """Append atomically (all or none) and bump ``updated_at``.

        ``expect_turns``: the number of turns the caller's history holds (what the answer was
        written against). If the session holds another number when the write lock is taken,
        nothing is written and ``HeadMoved`` is raised — an optimistic check of the head.
        """
        now = time.time()
        with self._db.transaction(write=True) as tx:
            # Updating the row first also serializes concurrent appends to one session.
            if not tx.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id)):
                raise NotFound(f"no session {session_id!r}")
            history.check_head(tx, session_id, expect_turns)
            return history.append(tx, session_id, messages, now)

    def position(self, session_id: str, message_id: str) -> int | None:
        """The number of visible turns up to and including the last visible occurrence of
        ``message_id`` (None when the session does not show it): where a turn sits."""
        with self._db.transaction(write=False) as tx:
            _session(tx, session_id)
            return history.position(tx, session_id, message_id)

    def put_wire_forms(self, forms: Sequence[wireforms.WireForm],
                       drop: Sequence[tuple[str, str]] = ()) -> None:
        """Store wire forms (idempotent: a form is a pure function of its message and plan) and
        delete the rows under ``drop``'s (message id, plan) keys (a superseded last walk)."""
        if not forms and not drop:
            return
        with self._db.transaction(write=True) as tx:
            wireforms.put(tx, forms)
            wireforms.drop(tx, drop)

    def load_wire_forms(self, session_id: str, plan: str) -> wireforms.StoredForms:
        """The visible entries of a session and their verified stored forms for ``plan``."""
        with self._db.transaction(write=False) as tx:
            _session(tx, session_id)
            return wireforms.load(tx, session_id, plan)

    # --- generations (compaction; see ``generations``) ---------------------------------------

    def replace_history(self, session_id: str, messages: Sequence[Message], *,
                        expect: tuple[int, str | None] | None = None,
                        note: Mapping[str, Any] | None = None) -> int:
        """Archive the current history as a generation and continue from ``messages``, in one
        transaction; ``expect`` = (visible messages, last message id) as read. Returns the
        archived generation's number."""
        with self._db.transaction(write=True) as tx:
            return generations.replace(tx, session_id, messages, expect=expect, note=note or {})

    def restore_generation(self, session_id: str, number: int) -> int:
        """Continue from archived generation ``number``; returns the new current number."""
        with self._db.transaction(write=True) as tx:
            return generations.restore(tx, session_id, number, note={"ended_by": "restore"})

    def list_generations(self, session_id: str) -> list[generations.Generation]:
        with self._db.transaction(write=False) as tx:
            _session(tx, session_id)
            return generations.list_generations(tx, session_id)

    def generation_ids(self, session_id: str, number: int) -> list[tuple[int, str]]:
        """(seq, message id) of archived generation ``number``."""
        with self._db.transaction(write=False) as tx:
            return generations.load_generation(tx, session_id, number)

    # --- verdict ledger -----------------------------------------------------------------------

    def record_verdict(self, verdict: Verdict, *, tenant: str = "") -> Verdict:
        with self._db.transaction(write=True) as tx:
            return ledger.record(tx, verdict, time.time(), tenant=tenant)

    def verdicts(self, *, tenant: str = "") -> list[Verdict]:
        with self._db.transaction(write=False) as tx:
            return ledger.all_verdicts(tx, tenant=tenant)

    def forget_verdicts(self, *, provider: str | None = None, host: str | None = None,
                        model: str | None = None) -> int:
        with self._db.transaction(write=True) as tx:
            return ledger.forget(tx, provider=provider, host=host, model=model)

    # --- lifetime -----------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._db.location

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _insert(tx: Tx, sid: str, title: str, config: str, tenant: str, now: float) -> None:
    tx.execute("INSERT INTO sessions (id, title, created_at, updated_at, model_config, tenant) "
               "VALUES (?, ?, ?, ?, ?, ?)", (sid, title, now, now, config, tenant))


def _session(tx: Tx, session_id: str) -> SessionRecord:
    row = tx.one(SESSION_SELECT + " WHERE s.id = ?", (session_id,))
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    return codec.session_from_row(row)


def _tenant_filter(tenant: str | None, keyword: str) -> tuple[str, list[Any]]:
    if tenant is None:
        return "", []
    return f" {keyword} s.tenant = ?", [tenant]


def _find(tx: Tx, ref: str, tenant: str | None) -> SessionRecord:
    """Exact id, else unique id prefix (ids are lowercase hex: any case matches), else exact
    title. More than one match is an error listing them, never a silent pick."""
    if not ref:
        raise NotFound("no session named ''")
    where, params = _tenant_filter(tenant, "AND")
    lowered = ref.lower()
    row = tx.one(SESSION_SELECT + " WHERE s.id = ?" + where, [lowered, *params])
    if row is not None:
        return codec.session_from_row(row)
    rows = tx.all(SESSION_SELECT + " WHERE substr(s.id, 1, CAST(? AS INTEGER)) = ?" + where
                  + _NEWEST_FIRST + f" LIMIT {_CANDIDATES + 1}", [len(ref), lowered, *params])
    if len(rows) == 1:
        return codec.session_from_row(rows[0])
    if rows:
        raise NotFound(_ambiguous(ref, [codec.session_from_row(r) for r in rows]))
    rows = tx.all(SESSION_SELECT + " WHERE s.title = ?" + where + _NEWEST_FIRST
                  + f" LIMIT {_CANDIDATES + 1}", [ref, *params])
    if not rows:
        raise NotFound(f"no session with id, id prefix or title {ref!r}")
    if len(rows) > 1:
        raise NotFound(_ambiguous(ref, [codec.session_from_row(r) for r in rows], what="title"))
    return codec.session_from_row(rows[0])


def _ambiguous(ref: str, candidates: list[SessionRecord], *, what: str = "prefix") -> str:
    from thoughtline.termsafe import safe_line

    shown = candidates[:_CANDIDATES]
    lines = [f"  {s.id}  {safe_line(s.title) or '(untitled)'}" for s in shown]
    more = "\n  …" if len(candidates) > len(shown) else ""
    hint = "Give more characters of the id." if what == "prefix" else \
        "Several sessions have this title: name one by its id (or a unique id prefix)."
    return (f"session {what} {ref!r} is ambiguous; it matches:\n" + "\n".join(lines) + more
            + "\n" + hint)
