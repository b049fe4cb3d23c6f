"""The store interface every backend implements (SQLite now, PostgreSQL behind the same calls).

Callers (sessions, CLI, gateway) only use ``Store``; they never see SQL. A backend owns its schema,
its numbered migrations, durability, and digest verification of opaque payloads on load. The
records it returns are ``store.records``' (re-exported here), so the store's own modules use them
without importing this interface (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from thoughtline.messages import Message
from thoughtline.store.records import (
    LoadedHistory,
    LoadProblem,
    ProblemKind,
    SessionRecord,
    StoredMessage,
    new_session_id,
)
from thoughtline.verdicts import Verdict

if TYPE_CHECKING:
    from thoughtline.store.rehydration import IndexKey, Rehydrated
    from thoughtline.store.wireforms import StoredForms, WireForm

__all__ = ["LoadProblem", "LoadedHistory", "ProblemKind", "SessionRecord", "Store",
           "StoredMessage", "new_session_id"]


class Store(Protocol):
    """Durable sessions, messages and the global verdict ledger."""

    def create_session(self, *, title: str = "", model_config: Mapping[str, Any] | None = None,
                       tenant: str = "") -> SessionRecord: ...

    def start_session(self, record: SessionRecord, messages: Sequence[Message], *,
                      keys: Sequence[IndexKey] = ()) -> list[StoredMessage]:
        """Store ``record`` (a session not stored yet, its id from ``new_session_id``) with its
        first ``messages``, the last one indexed under ``keys``, atomically: a session exists
        once it has a turn."""
        ...

    def import_session(self, *, title: str, model_config: Mapping[str, Any],
                       messages: Sequence[Message], tenant: str = "") -> SessionRecord:
        """Create a session already holding ``messages``, atomically (all or nothing)."""
        ...

    def get_session(self, ref: str, *, tenant: str | None = None) -> SessionRecord:
        """By id, unique id prefix, or exact title (newest wins). Raises NotFound."""
        ...

    def latest_session(self, *, tenant: str | None = None) -> SessionRecord | None: ...

    def list_sessions(self, *, tenant: str | None = None,
                      limit: int | None = None) -> list[SessionRecord]: ...

    def load_history(self, session_id: str, *, skip_damaged: bool = False) -> LoadedHistory:
        """Every message of the session in order, inherited ones included, digests verified.

        ``skip_damaged`` reports a corrupt message (``ProblemKind.TURN``) and leaves it out
        instead of raising ``CorruptPayload``."""
        ...

    def append(self, session_id: str, messages: Sequence[Message], *,
               expect_turns: int | None = None) -> list[StoredMessage]:
        """Append messages atomically (all or none) and bump ``updated_at``; with
        ``expect_turns``, raise ``HeadMoved`` (writing nothing) unless the session holds exactly
        that many turns."""
        ...

    def set_model_config(self, session_id: str, model_config: Mapping[str, Any]) -> None: ...

    def put_wire_forms(self, forms: Sequence[WireForm],
                       drop: Sequence[tuple[str, str]] = ()) -> None:
        """Store messages' wire forms per plan (see ``store.wireforms``), and delete the rows
        under ``drop``'s (message id, plan) keys in the same transaction."""
        ...

    def load_wire_forms(self, session_id: str, plan: str) -> StoredForms:
        """A session's visible entries and its verified stored wire forms for ``plan``."""
        ...

    def update_model_config(self, session_id: str,
                            update: Callable[[Mapping[str, Any]], Mapping[str, Any]],
                            ) -> SessionRecord:
        """Read-merge-write the model config in one write transaction (see ``modelconfig``)."""
        ...

    def set_title(self, session_id: str, title: str) -> None: ...

    def branch(self, session_id: str, *, at: int | None = None, title: str = "") -> SessionRecord:
        """A new session inheriting the first ``at`` messages (default: all), without copying."""
        ...

    def replace_history(self, session_id: str, messages: Sequence[Message], *,
                        expect: tuple[int, str | None] | None = None,
                        note: Mapping[str, Any] | None = None) -> int:
        """Archive the current history as a generation and continue from ``messages``
        (compaction), atomically; refused when the session no longer matches ``expect``."""
        ...

    def restore_generation(self, session_id: str, number: int) -> int:
        """Continue from an archived generation (the current one is archived first)."""
        ...

    def list_generations(self, session_id: str) -> list[Any]:
        """Archived generations oldest first, then the current one (``generations.Generation``)."""
        ...

    def delete_session(self, session_id: str) -> None: ...

    def record_verdict(self, verdict: Verdict, *, tenant: str = "") -> Verdict:
        """Merge into the ledger of ``tenant`` (``""``: the global one); returns the merged
        verdict."""
        ...

    def verdicts(self, *, tenant: str = "") -> list[Verdict]:
        """The global ledger, plus ``tenant``'s own when one is named."""
        ...

    def forget_verdicts(self, *, provider: str | None = None, host: str | None = None,
                        model: str | None = None) -> int: ...

    # --- the gateway's rehydration index (``store.rehydration``) -----------------------------

    def append_indexed(self, session_id: str, messages: Sequence[Message], *, tenant: str,
                       keys: Sequence[IndexKey],
                       expect_turns: int | None = None) -> list[StoredMessage]:
        """Append ``messages`` and index the last one under ``keys`` for ``tenant``, atomically
        (``expect_turns``: the head check of ``append``)."""
        ...

    def position(self, session_id: str, message_id: str) -> int | None:
        """How many visible turns end with the last visible occurrence of ``message_id``."""
        ...

    def rehydrate(self, tenant: str, keys: Sequence[IndexKey | None], *,
                  session_id: str | None = None) -> list[Rehydrated | None]:
        """The newest stored turn of ``tenant`` for each key (one indexed lookup per key)."""
        ...

    def secret(self, name: str) -> bytes:
        """A random key kept in the store under ``name``, made on first use (race-safe)."""
        ...

    def close(self) -> None: ...
