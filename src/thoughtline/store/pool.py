"""Connection pooling and failure policy for the PostgreSQL store.

Owns the ``psycopg_pool`` pool (sizes, acquire timeout, a liveness check on every checkout so a
server restart costs no failed request), which driver failures mean "unavailable", and the retry
rule: a call is retried only when the failure proves nothing was committed.

Failure classes, decided where the transaction is run (``transaction_error``):

* Before ``COMMIT`` was sent, a dropped connection, a server shutdown, a serialization failure or a
  deadlock rolls the whole transaction back: ``StoreUnavailable(retry_safe=True)``; ``retrying``
  runs the call again on a fresh connection (at most ``ATTEMPTS`` times in all).
* While ``COMMIT`` was in flight a dropped connection leaves the outcome unknown:
  ``StoreUnavailable(retry_safe=False)``, never retried (a retried append could store a turn
  twice). The gateway answers 503; the transaction was atomic either way.
* No connection within the acquire timeout: ``StoreUnavailable(retry_safe=False)`` naming the
  server's own reason (the wait already covered a short restart).
* Any other driver error is a plain ``StoreError``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from thoughtline.errors import StoreError, StoreUnavailable

#: Calls made in all when each failure proves nothing was committed.
ATTEMPTS = 3
_BACKOFF_S = 0.05

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, kw_only=True, slots=True)
class PoolSettings:
    """How many connections one store process holds and how long a call waits for one.

    ``max_size`` bounds concurrent transactions of this process (the async facade uses as many
    worker threads); ``timeout`` is how long a call waits for a free or new connection before
    failing with ``StoreUnavailable`` (long enough to ride out a quick server restart).
    """

    min_size: int = 1
    max_size: int = 8
    timeout: float = 10.0
    connect_timeout: int = 5


def open_pool(url: str, settings: PoolSettings, *, name: str) -> ConnectionPool[Any]:
    """A started pool of non-autocommit connections (transactions are begun by the driver)."""
    return ConnectionPool(
        url, name=name, min_size=settings.min_size, max_size=settings.max_size,
        timeout=settings.timeout, open=True, check=ConnectionPool.check_connection,
        kwargs={"autocommit": False, "connect_timeout": settings.connect_timeout})


def acquire_error(exc: PoolTimeout, url: str, location: str, settings: PoolSettings) -> StoreError:
    """Why no connection came: ask the server once directly, so the message names the cause."""
    try:
        psycopg.connect(url, connect_timeout=settings.connect_timeout).close()
    except psycopg.Error as direct:
        why = str(direct).strip() or type(direct).__name__
        return StoreUnavailable(f"cannot reach the store at {location}: {why}",
                                retry_safe=False)
    return StoreUnavailable(
        f"the store at {location} had no free connection for {settings.timeout:g} s "
        f"(all {settings.max_size} in use): {exc}", retry_safe=False)


def transaction_error(exc: psycopg.Error, location: str, *, committing: bool,
                      broken: bool) -> StoreError:
    """Map a driver error raised inside (``committing=False``) or at the end of a transaction."""
    if isinstance(exc, psycopg.errors.TransactionRollback):  # serialization failure, deadlock
        return StoreUnavailable(f"store at {location}: transaction rolled back ({exc})",
                                retry_safe=True)
    lost = broken or isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    if not lost:
        return StoreError(f"store at {location}: {exc}")
    if committing:
        return StoreUnavailable(
            f"store at {location}: the connection broke while committing ({exc}); whether "
            "the write landed is unknown", retry_safe=False)
    return StoreUnavailable(f"store at {location}: connection lost, nothing was committed "
                            f"({exc})", retry_safe=True)


def retrying(method: F) -> F:
    """Run a store call again while its failure proves nothing was committed."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return method(*args, **kwargs)
            except StoreUnavailable as exc:
                if not exc.retry_safe or attempt == ATTEMPTS:
                    raise
                time.sleep(_BACKOFF_S * attempt)
        raise AssertionError("unreachable")

    return call  # type: ignore[return-value]
