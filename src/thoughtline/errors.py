"""The one exception tree of thoughtline.

Foreign exceptions (httpx, sqlite3, psycopg, botocore, orjson) are mapped into these at one
boundary each: transport, store, codecs. Callers catch ``ThoughtlineError`` or a subclass.
"""

from __future__ import annotations


class ThoughtlineError(Exception):
    """Base of every error thoughtline raises on purpose."""


class UsageError(ThoughtlineError):
    """The caller asked for something that cannot work (bad flag, unknown provider, no key)."""


class ConfigError(UsageError):
    """``config.toml`` / ``gateway.toml`` or the route table is malformed."""


class HomeError(UsageError):
    """The thoughtline home (``--home`` / ``THOUGHTLINE_HOME`` / ``~/.thoughtline``) is unusable."""


class ProtocolError(ThoughtlineError):
    """A provider response or stream that does not follow its API's shape.

    The message names the field; ``route`` (the route table row) is set where the turn engine
    reads the reply, so every report says which route sent it.
    """

    def __init__(self, message: str = "", *, route: str = "") -> None:
        super().__init__(message)
        self.route = route

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} (route {self.route})" if self.route else text


class StreamInterrupted(ProtocolError):
    """The stream ended before the provider said it was done."""


class ProviderError(ThoughtlineError):
    """The provider answered with an error status (or could not be reached)."""

    def __init__(self, message: str, *, status: int | None = None, body: str = "",
                 route: str = "", provider: str = "", retries: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.route = route
        self.provider = provider
        self.retries = retries
        #: How many requests the turn had sent when this one failed (the turn engine sets it).
        self.attempts = 1

    def __str__(self) -> str:
        head = f"{self.provider or 'provider'}"
        if self.status is not None:
            head += f" answered HTTP {self.status}"
        if self.route:
            head += f" (route {self.route})"
        return f"{head}: {self.args[0]}" if self.args and self.args[0] else head


class ProviderBusy(ProviderError):
    """No connection to the provider came free in time: every one of the pool's connections was
    busy, so nothing was sent (a gateway answers 503)."""


class ContextOverflow(ProviderError):
    """The conversation does not fit the model's context window even after the one automatic
    compaction (or compaction could not shorten it): nothing more is sent for this turn."""


class StoreError(ThoughtlineError):
    """The store could not be read or written."""


class StoreUnavailable(StoreError):
    """The store's server could not be reached or dropped the connection (a gateway answers 503).

    ``retry_safe`` is True when nothing was committed (the call can simply be made again); False
    when the connection broke while committing, so whether the write landed is unknown.
    """

    def __init__(self, message: str, *, retry_safe: bool) -> None:
        super().__init__(message)
        self.retry_safe = retry_safe


class HeadMoved(ThoughtlineError):
    """An append expected the session to hold ``expected`` turns, but another writer had added
    some meanwhile (it holds ``found``): appending would store a history no model saw."""

    def __init__(self, session_id: str, *, expected: int, found: int) -> None:
        super().__init__(f"session {session_id} has {found} turns, not the {expected} this "
                         "answer was written against: another process added turns meanwhile")
        self.session_id = session_id
        self.expected = expected
        self.found = found


class HistoryChanged(HeadMoved, StoreError):
    """A new history (a compaction's) was made from ``expected`` turns ending with the one it
    read, but another writer changed the session meanwhile (it holds ``found``): replacing it
    would archive turns the compaction never saw. Nothing was replaced."""

    def __init__(self, session_id: str, *, expected: int, found: int) -> None:
        StoreError.__init__(self, f"session {session_id} changed while its new history was "
                                  "being made (another process added a turn); nothing was "
                                  "replaced — try again")
        self.session_id = session_id
        self.expected = expected
        self.found = found


class CorruptPayload(StoreError):
    """A stored opaque payload no longer matches its digest; it is never sent."""


class NotFound(UsageError):
    """A session (or other named thing) does not exist or the name is ambiguous."""
