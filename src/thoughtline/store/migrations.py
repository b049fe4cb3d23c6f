"""The store schema as a numbered list of small named migrations, and the runner that applies them.

A migration's number is its position in ``MIGRATIONS`` (1-based); its name is its function name.
Both are recorded with the time applied in ``schema_migrations``. Migrations are append-only: never
edit or reorder a released one, add a new function at the end. The same functions build the
SQLite and the PostgreSQL schema; only the column types in ``Dialect`` differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from thoughtline.errors import StoreError
from thoughtline.store.db import Database, Dialect, Tx

Migration = Callable[[Tx, Dialect], None]

MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def create_sessions(tx: Tx, d: Dialect) -> None:
    """Sessions; a branch points at its parent and inherits its first ``fork_point`` messages."""
    tx.execute(f"""
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            created_at {d.real} NOT NULL,
            updated_at {d.real} NOT NULL,
            parent_id TEXT REFERENCES sessions(id),
            fork_point INTEGER,
            model_config TEXT NOT NULL DEFAULT '{{}}',
            tenant TEXT NOT NULL DEFAULT ''
        )""")
    tx.execute("CREATE INDEX sessions_by_update ON sessions (updated_at)")
    tx.execute("CREATE INDEX sessions_by_parent ON sessions (parent_id)")
    tx.execute("CREATE INDEX sessions_by_title ON sessions (title)")


@migration
def create_content(tx: Tx, d: Dialect) -> None:
    """Content-addressed messages (skeletons) and the opaque payloads they reference."""
    tx.execute(f"""
        CREATE TABLE messages (
            digest TEXT PRIMARY KEY,
            skeleton {d.blob} NOT NULL,
            skeleton_digest TEXT NOT NULL
        )""")
    tx.execute(f"CREATE TABLE payloads (digest TEXT PRIMARY KEY, data {d.blob} NOT NULL)")
    # No foreign key to payloads on purpose: a missing payload is a condition load reports.
    tx.execute("""
        CREATE TABLE message_payloads (
            message_id TEXT NOT NULL REFERENCES messages(digest) ON DELETE CASCADE,
            payload_digest TEXT NOT NULL,
            PRIMARY KEY (message_id, payload_digest)
        )""")
    tx.execute("CREATE INDEX message_payloads_by_payload ON message_payloads (payload_digest)")


@migration
def create_session_messages(tx: Tx, d: Dialect) -> None:
    """Each session's own messages; ``seq`` is the position in its visible history."""
    tx.execute(f"""
        CREATE TABLE session_messages (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            message_id TEXT NOT NULL REFERENCES messages(digest),
            created_at {d.real} NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""")
    tx.execute("CREATE INDEX session_messages_by_message ON session_messages (message_id)")


@migration
def create_verdicts(tx: Tx, d: Dialect) -> None:
    """The global ledger of what each (provider, host, model) taught us."""
    tx.execute(f"""
        CREATE TABLE verdicts (
            provider TEXT NOT NULL,
            host TEXT NOT NULL,
            model TEXT NOT NULL,
            drop_carriers TEXT NOT NULL,
            pad INTEGER NOT NULL,
            reason TEXT NOT NULL,
            learned_at {d.real} NOT NULL,
            PRIMARY KEY (provider, host, model)
        )""")


@migration
def create_wire_forms(tx: Tx, d: Dialect) -> None:
    """Each stored message's encoded wire form per replay plan, so a resume splices bytes instead of
    re-encoding. Keyed by the message's content id (shared by branches) and the plan's digest;
    ``meta`` is what the core reads without decoding the message (role, tool-call ids) and ``data``
    comes last so reading ``meta`` never walks a large value."""
    tx.execute(f"""
        CREATE TABLE wire_forms (
            message_id TEXT NOT NULL,
            plan TEXT NOT NULL,
            meta TEXT NOT NULL,
            digest TEXT NOT NULL,
            data {d.blob} NOT NULL,
            PRIMARY KEY (message_id, plan)
        )""")


@migration
def create_rehydration_index(tx: Tx, d: Dialect) -> None:
    """The gateway's index of the assistant turns it returned, per tenant.

    ``kind`` is ``call`` (``lookup_key`` = a tool-call id of the turn), ``context`` (the digest of
    its visible content in its place in the conversation) or ``content`` (of its visible content
    alone); ``message_id`` names the stored canonical turn. An indexed lookup per client assistant
    message finds it again, within the tenant (and the session when the client names one); the
    newest wins.
    """
    tx.execute(f"""
        CREATE TABLE rehydration (
            tenant TEXT NOT NULL,
            kind TEXT NOT NULL,
            lookup_key TEXT NOT NULL,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            message_id TEXT NOT NULL,
            created_at {d.real} NOT NULL,
            PRIMARY KEY (tenant, kind, lookup_key, session_id)
        )""")
    tx.execute("CREATE INDEX rehydration_newest ON rehydration "
               "(tenant, kind, lookup_key, created_at)")
    tx.execute("CREATE INDEX rehydration_by_session ON rehydration (session_id)")


@migration
def create_generations(tx: Tx, d: Dialect) -> None:
    """Earlier generations of compacted sessions: each one's whole visible history, by reference.

    A compaction (or a restore) archives the session's history as it was — every visible message,
    inherited ones included, so a generation reads without its lineage — and then writes the new
    one as the session's own rows. ``note`` is JSON (why the generation ended, token figures).
    """
    tx.execute(f"""
        CREATE TABLE session_generations (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            generation INTEGER NOT NULL,
            created_at {d.real} NOT NULL,
            archived_at {d.real} NOT NULL,
            parent_id TEXT,
            fork_point INTEGER,
            turns INTEGER NOT NULL,
            note TEXT NOT NULL DEFAULT '{{}}',
            PRIMARY KEY (session_id, generation)
        )""")
    tx.execute("""
        CREATE TABLE generation_messages (
            session_id TEXT NOT NULL,
            generation INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            message_id TEXT NOT NULL REFERENCES messages(digest),
            PRIMARY KEY (session_id, generation, seq),
            FOREIGN KEY (session_id, generation)
                REFERENCES session_generations (session_id, generation) ON DELETE CASCADE
        )""")
    tx.execute("CREATE INDEX generation_messages_by_message ON generation_messages (message_id)")


@migration
def create_tenant_verdicts(tx: Tx, d: Dialect) -> None:
    """What a gateway tenant's requests taught, kept for that tenant only (``ledger``): one
    tenant's client can never switch replay off for another's."""
    tx.execute(f"""
        CREATE TABLE tenant_verdicts (
            tenant TEXT NOT NULL,
            provider TEXT NOT NULL,
            host TEXT NOT NULL,
            model TEXT NOT NULL,
            drop_carriers TEXT NOT NULL,
            pad INTEGER NOT NULL,
            reason TEXT NOT NULL,
            learned_at {d.real} NOT NULL,
            PRIMARY KEY (tenant, provider, host, model)
        )""")


@migration
def create_secrets(tx: Tx, d: Dialect) -> None:
    """Named random keys the store keeps for the processes sharing it (the gateway's MAC key for
    the values it mints); written once per name, never updated."""
    tx.execute(f"""
        CREATE TABLE secrets (
            name TEXT PRIMARY KEY,
            value {d.blob} NOT NULL,
            created_at {d.real} NOT NULL
        )""")


@migration
def wire_forms_by_context(tx: Tx, d: Dialect) -> None:
    """A turn's wire form depends on its context as well as on its message and plan (issue 24:
    e.g. whether an Anthropic turn still keeps its thinking), so the key gains the context. The
    rows stored before are a cache keyed without it, with meta in a format no codec reads any
    more: they are dropped, never trusted, and each turn's form is written again, once, by the
    next request that encodes it."""
    tx.execute("DROP TABLE wire_forms")
    tx.execute(f"""
        CREATE TABLE wire_forms (
            message_id TEXT NOT NULL,
            plan TEXT NOT NULL,
            context TEXT NOT NULL DEFAULT '',
            meta TEXT NOT NULL,
            digest TEXT NOT NULL,
            data {d.blob} NOT NULL,
            PRIMARY KEY (message_id, plan, context)
        )""")


@migration
def drop_empty_gateway_sessions(tx: Tx, d: Dialect) -> None:
    """A gateway session is stored with its first turn (issue 46); before, every failed, refused
    or abandoned request left one with no turn, titled with the client's text. Those are
    deleted: no turn of their own or inherited, no archived generation, no branch.

    Only the gateway's: titled ``gateway`` (its first releases) or ``… (via UPSTREAM)`` /
    ``… (via UPSTREAM, tenant TENANT)`` for the session's own tenant
    (``gateway.conversation.session_title``). A library or CLI session may hold no turn and
    stays (``Session.create`` stores it before its first send; the user may name it).
    """
    tx.execute("""
        DELETE FROM sessions
        WHERE COALESCE(fork_point, 0) = 0
          AND NOT EXISTS (SELECT 1 FROM session_messages m WHERE m.session_id = sessions.id)
          AND NOT EXISTS (SELECT 1 FROM session_generations g WHERE g.session_id = sessions.id)
          AND NOT EXISTS (SELECT 1 FROM sessions b WHERE b.parent_id = sessions.id)
          AND (title = 'gateway'
               OR (tenant = '' AND title LIKE '% (via %)')
               OR (tenant <> '' AND title LIKE '% (via %, tenant ' || tenant || ')'))""")


_BOOKKEEPING = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at {real} NOT NULL
    )"""


def migrate(db: Database) -> int:
    """Bring the schema up to date (idempotent, safe when several processes open at once).

    Returns the number of migrations applied. Raises StoreError when the database was written by a
    newer thoughtline.
    """
    with db.transaction(write=False) as tx:
        if _pending(tx, db) == 0:
            return 0
    with db.transaction(write=True) as tx:
        tx.lock("thoughtline.migrations")
        tx.execute(_BOOKKEEPING.format(real=db.dialect.real))
        applied = {version for (version,) in tx.all("SELECT version FROM schema_migrations")}
        _refuse_newer(applied, db)
        count = 0
        for version, fn in enumerate(MIGRATIONS, start=1):
            if version in applied:
                continue
            fn(tx, db.dialect)
            tx.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                       (version, fn.__name__, time.time()))
            count += 1
        return count


def _pending(tx: Tx, db: Database) -> int:
    """How many migrations are missing, read without taking a write lock (-1: no bookkeeping)."""
    if not _has_bookkeeping(tx, db):
        return -1
    applied = {version for (version,) in tx.all("SELECT version FROM schema_migrations")}
    _refuse_newer(applied, db)
    return len(MIGRATIONS) - len(applied)


def _has_bookkeeping(tx: Tx, db: Database) -> bool:
    if db.dialect.name == "sqlite":
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    else:
        sql = ("SELECT 1 FROM information_schema.tables WHERE table_name = 'schema_migrations' "
               "AND table_schema = current_schema()")
    return tx.one(sql) is not None


def _refuse_newer(applied: set[int], db: Database) -> None:
    unknown = sorted(v for v in applied if not 1 <= v <= len(MIGRATIONS))
    if unknown:
        raise StoreError(
            f"the store at {db.location} has schema version {max(unknown)}, but this thoughtline "
            f"only knows versions up to {len(MIGRATIONS)}: it was written by a newer thoughtline. "
            "Upgrade thoughtline to use it (or point --store / THOUGHTLINE_HOME elsewhere).")
