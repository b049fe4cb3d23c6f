"""The records a store returns: a session's row, a stored message, a load problem; and the
format of a new session's id.

Plain values with no behaviour, kept apart from the ``Store`` interface (``store.base``) so the
store's own modules (``codec``, ``history``, ``rehydration``) use them without importing the
interface that names their types (no import cycle).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from thoughtline.messages import Message


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionRecord:
    """A session's row. ``model_config`` holds provider config (names, never keys), learned
    ``verdicts`` and rejected-signature ``fingerprints``; ``turns`` counts its messages,
    inherited ones included."""

    id: str
    title: str
    created_at: float
    updated_at: float
    parent_id: str | None = None
    fork_point: int | None = None  # number of the parent's messages the branch inherits
    model_config: Mapping[str, Any] = field(default_factory=dict)
    turns: int = 0
    tenant: str = ""


def new_session_id() -> str:
    """A fresh session id: lowercase hex (a prefix of it names the session, in any case). The
    gateway chooses one before the session is stored (``Store.start_session``)."""
    return uuid.uuid4().hex


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredMessage:
    """A message as loaded: its position, its content digest (its id) and when it was added."""

    seq: int
    id: str
    message: Message
    created_at: float


class ProblemKind(enum.Enum):
    """What a ``LoadProblem`` is about, and so what was left out of the loaded history."""

    #: An opaque value of part ``part``: a reasoning part is left out, a tool call loads
    #: without it.
    PAYLOAD = "payload"
    #: The message's own native record: the message loads without it.
    RECORD = "record"
    #: The whole message (its own row is corrupt): left out (``load_history(skip_damaged=True)``).
    TURN = "turn"
    #: The message's stored wire form failed its digest: it is rebuilt from the canonical history.
    WIRE_FORM = "wire_form"


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadProblem:
    """A stored value that failed verification (missing, or bytes not matching ``digest``).

    ``kind`` says what it belongs to; ``part`` is the part's index in the message as stored
    for a ``PAYLOAD`` problem (-1 for every other kind: no part). Either way the bad bytes are
    never sent.
    """

    seq: int
    kind: ProblemKind
    digest: str
    detail: str
    part: int = -1


@dataclass(frozen=True, kw_only=True, slots=True)
class LoadedHistory:
    messages: tuple[StoredMessage, ...]
    problems: tuple[LoadProblem, ...] = ()
