"""Storing a finished turn or a compaction: the one persistence path of the CLI's ``Session``, the
gateway and compaction.

Owns what every writer of a session must guarantee, so the CLI, the gateway and compaction cannot
drift apart:

* **The head check.** A turn is appended only where it was written: ``TurnWrite.at`` is how many
  turns the session held under the history the answer was written against. When the session
  holds another number (another writer went on meanwhile, or a client regenerated an answer and
  continued from an earlier turn), nothing is appended there: the turn goes on a new branch
  forking at ``at``, never after turns no model saw together with it. A compaction
  (``TurnWrite.replaces``) is checked the same way, by the count and the last message it read:
  when the session moved on it becomes the next generation of a branch holding what it read,
  and the other writer's turns stay where they are.
* **One outcome.** A failed write is retried only while the failure proves nothing was written
  (a lock held past the busy timeout, a connection lost before ``COMMIT``). A connection lost
  *while* committing is never written again: whether the first write landed is read back, and
  the answer is what is in the store. A write made twice never happens.
* **The rescue file.** A turn that still cannot be stored is saved as JSON under ``rescue_dir``
  (owner-only) and ``Unsaved`` names the file: the caller says "not stored" and it is true —
  nothing of the turn is in the store, nothing is lost.

It knows no wire names and no SQL: writes go through the ``Store`` interface (``append``,
``append_indexed`` with the gateway's lookup keys, ``start_session`` for a session stored with its
first turn, ``replace_history`` for a compaction), in the caller's thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from thoughtline.errors import (
    HeadMoved,
    NotFound,
    StoreError,
    StoreUnavailable,
    ThoughtlineError,
)
from thoughtline.messages import Message, message_to_json
from thoughtline.store.base import SessionRecord, Store, StoredMessage
from thoughtline.store.codec import encode_message
from thoughtline.store.rehydration import IndexKey

#: Delays before each try of a failed write (the store's own retry runs inside each try).
WRITE_ATTEMPTS = (0.0, 0.25, 1.0)


class Unsaved(StoreError):
    """A finished turn that could not be stored; ``path`` is the rescue file holding it."""

    def __init__(self, message: str, *, path: Path | None) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True, kw_only=True, slots=True)
class NewGeneration:
    """A compaction's write: the messages replace the session's history as its next generation
    (the current one is archived with ``note``, restorable) instead of following it."""

    #: The id of the last message of the ``at`` turns the compaction read (None: there were none).
    head: str | None
    note: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnWrite:
    """One turn to store: its messages, where it was written, and (gateway) its lookup keys."""

    session: SessionRecord
    #: How many turns the session held under the history the answer was written against.
    at: int
    messages: Sequence[Message]
    tenant: str = ""
    #: Rehydration keys of the last message (``append_indexed``); none: a plain ``append``.
    keys: Sequence[IndexKey] = ()
    #: The title of the branch made when the head moved ("" : the session's title + " (branch)").
    branch_title: str = ""
    #: A compaction: ``messages`` are the session's new history, not turns to append.
    replaces: NewGeneration | None = None
    #: ``session`` is not stored yet: it is stored with this turn (``Store.start_session``), so
    #: a request that stores no turn leaves no session (the gateway's new conversations).
    new: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Written:
    """Where a turn was stored: the session, or the branch made for it (``branched``)."""

    session: SessionRecord
    stored: Sequence[StoredMessage]
    branched: bool = False
    #: The archived generation's number (a compaction; None: an append).
    generation: int | None = None

    @property
    def branch(self) -> str:
        """The branch it went on because the head moved meanwhile ("": where it was asked)."""
        return self.session.id if self.branched else ""


def write_turn(store: Store, write: TurnWrite, *, rescue_dir: Path | None,
               attempts: Sequence[float] | None = None) -> Written:
    """Store ``write`` once (see the module docstring); ``attempts``: the delays before each
    try (default ``WRITE_ATTEMPTS``).

    Raises ``Unsaved`` naming the rescue file when it cannot be stored; without a
    ``rescue_dir`` the store's own error is raised as it came.
    """
    target, branched = write.session, False
    error: StoreError | None = None
    for delay in WRITE_ATTEMPTS if attempts is None else attempts:
        if delay:
            time.sleep(delay)
        try:
            try:
                return _store(store, target, write, branched=branched)
            except HeadMoved:
                if branched or not _forks_at(store, write):
                    raise
                target = store.branch(write.session.id, at=write.at, title=_title(write))
                branched = True
                return _store(store, target, write, branched=True)
        except HeadMoved as exc:  # no place holds what it was made from: never retried
            raise _failed(write, exc, rescue_dir, landed=False) from exc
        except StoreUnavailable as exc:
            error = exc
            if not exc.retry_safe:  # lost while committing: it may be stored already
                return _settled(store, write, target, branched, exc, rescue_dir)
        except StoreError as exc:
            error = exc
    assert error is not None, "attempts is never empty"
    raise _failed(write, error, rescue_dir, landed=False)


def _store(store: Store, target: SessionRecord, write: TurnWrite, *, branched: bool) -> Written:
    if write.replaces is not None:
        number = store.replace_history(target.id, write.messages,
                                       expect=(write.at, write.replaces.head),
                                       note=write.replaces.note)
        return Written(session=target, stored=(), branched=branched, generation=number)
    if write.new:
        stored = store.start_session(target, write.messages, keys=write.keys)
    elif write.keys:
        stored = store.append_indexed(target.id, write.messages, tenant=write.tenant,
                                      keys=write.keys, expect_turns=write.at)
    else:
        stored = store.append(target.id, write.messages, expect_turns=write.at)
    return Written(session=target, stored=stored, branched=branched)


def _forks_at(store: Store, write: TurnWrite) -> bool:
    """Whether the session still holds, up to ``at``, what the write was made from (for a
    compaction: its last message read there), so a branch forking at ``at`` holds it too."""
    head = write.replaces.head if write.replaces is not None else None
    return head is None or store.position(write.session.id, head) == write.at


def _settled(store: Store, write: TurnWrite, target: SessionRecord, branched: bool,
             error: StoreUnavailable, rescue_dir: Path | None) -> Written:
    """After a write whose ``COMMIT`` was cut: read back whether it landed, never write again."""
    ids = [encode_message(m).id for m in write.messages]
    try:
        if write.replaces is not None:  # landed: the session holds exactly the new history
            landed = [m.id for m in store.load_history(target.id).messages] == ids
            number = store.list_generations(target.id)[-1].number - 1 if landed else None
        else:
            landed = store.position(target.id, ids[-1]) == write.at + len(ids)
    except NotFound:  # a new session whose first turn did not land
        landed = False
    except StoreError:
        raise _failed(write, error, rescue_dir, landed=None) from error
    if not landed:
        raise _failed(write, error, rescue_dir, landed=False) from error
    if write.replaces is not None:
        return Written(session=target, stored=(), branched=branched, generation=number)
    now = time.time()
    stored = [StoredMessage(seq=write.at + offset, id=mid, message=message, created_at=now)
              for offset, (mid, message) in enumerate(zip(ids, write.messages, strict=True))]
    return Written(session=target, stored=stored, branched=branched)


def _title(write: TurnWrite) -> str:
    return write.branch_title or f"{write.session.title or 'untitled'} (branch)"


def _failed(write: TurnWrite, error: ThoughtlineError, rescue_dir: Path | None, *,
            landed: bool | None) -> ThoughtlineError:
    """The error to raise: ``Unsaved`` with the turn in a rescue file (when a directory is
    given), else the store's own error."""
    if rescue_dir is None:
        return error
    stored = ("it may or may not be stored (the store could not be asked)" if landed is None
              else "nothing of it was stored")
    try:
        path: Path | None = rescue(write, rescue_dir)
    except OSError as exc:  # a full disk: say so, in the same clear error
        path = None
        saved = f"; saving it to a rescue file in {rescue_dir} failed too ({exc})."
    else:
        saved = (f"; it was saved to {path} (the session id, its model config and the "
                 "messages as JSON) — nothing was lost.")
    what = ("the compacted history was made but could not be stored (the session goes on from "
            "its previous one)" if write.replaces is not None
            else "the answer arrived but could not be stored")
    return Unsaved(f"{what} ({error}); {stored}{saved}", path=path)


def default_rescue_dir(store: Store) -> Path:
    """``rescue/`` beside a SQLite file, else under the thoughtline home."""
    from thoughtline import config as config_mod

    location = Path(getattr(store, "location", "") or ".")
    base = location.parent if location.suffix == ".db" else config_mod.home()
    return base / "rescue"


def rescue(write: TurnWrite, directory: Path) -> Path:
    """Save the turn as an owner-only JSON file in ``directory``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    sid = write.session.id
    path = directory / f"{sid}-{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns()}.json"
    record: dict[str, Any] = {
        "format": "thoughtline.rescue/1", "session": sid, "title": write.session.title,
        "model_config": write.session.model_config,
        "messages": [message_to_json(m) for m in write.messages]}
    if write.replaces is not None:  # a compaction: the messages are a whole new history
        record["replaces"] = {"turns": write.at, "head": write.replaces.head,
                              "note": dict(write.replaces.note)}
    if write.tenant:
        record["tenant"] = write.tenant
    path.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
    path.chmod(0o600)
    return path
