"""Connection pooling and failure policy for the PostgreSQL store.

Owns the ``psycopg_pool`` pool (sizes, acquire timeout, a liveness check on every checkout so a
server restart costs no failed request), checking a connection out (``checkout``), which driver
failures mean "unavailable", and the retry rule: a call is retried only when the failure proves
nothing was committed.

Why a checkout may bypass the pool: when the server goes away, every connection that fails the
checkout check is discarded and ``psycopg_pool`` replaces it in the background, retrying the
connect with an exponential backoff (1, 2, 4, 8, 16 s …). Those pending replacements count
against ``max_size``, so once the server is back the pool hands out nothing until the next
scheduled attempt — up to half a minute of "no free connection (all 8 in use)" with no
connection in use at all. So when the pool has no connection for a short while although fewer
than ``max_size`` transactions are running, the transaction runs on a direct connection of its
own (closed after it), if the server can be reached: the pool's slots are only waiting out
their backoff, and the process never holds more than ``max_size`` working connections.

Failure classes, decided where the transaction is run (``transaction_error``):

* Before ``COMMIT`` was sent, a dropped connection, a server shutdown, a serialization failure or a
  deadlock rolls the whole transaction back: ``StoreUnavailable(retry_safe=True)``; ``retrying``
  runs the call again on a fresh connection (at most ``ATTEMPTS`` times in all). So does a
  dropped connection while a read-only transaction commits: it wrote nothing.
* While a writing transaction's ``COMMIT`` was in flight a dropped connection leaves the outcome
  unknown:
  ``StoreUnavailable(retry_safe=False)``, never retried (a retried append could store a turn
  twice). The gateway answers 503; the transaction was atomic either way.
* No connection within the acquire timeout: ``StoreUnavailable(retry_safe=False)`` naming the
  server's own reason (the wait already covered a short restart).
* Any other driver error is a plain ``StoreError``.
"""

from __future__ import annotations

import functools
import math
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
#: How long a checkout waits for the pool before trying a direct connection (see above).
_POOL_SLICE_S = 0.5

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, kw_only=True, slots=True)
class PoolSettings:
    """How many connections one store process holds and how long a call waits for one.

    ``max_size`` bounds concurrent transactions of this process (the async facade uses as many
    worker threads); ``timeout`` is how long a call waits for a free or new connection before
    failing with ``StoreUnavailable`` (by default long enough to ride out a quick server
    restart); ``connect_timeout`` bounds one connection attempt (whole seconds, libpq's minimum
    is 2).
    """

    min_size: int = 1
    max_size: int = 8
    timeout: float = 10.0
    connect_timeout: int = 5

    @classmethod
    def waiting(cls, seconds: float) -> PoolSettings:
        """Calls that give up after about ``seconds`` without a connection (a server that is
        down is said that soon): the acquire timeout, and a connection attempt's."""
        return cls(timeout=seconds, connect_timeout=max(2, math.ceil(seconds)))


def open_pool(url: str, settings: PoolSettings, *, name: str) -> ConnectionPool[Any]:
    """A started pool of non-autocommit connections (transactions are begun by the driver)."""
    return ConnectionPool(
        url, name=name, min_size=settings.min_size, max_size=settings.max_size,
        timeout=settings.timeout, open=True, check=ConnectionPool.check_connection,
        kwargs={"autocommit": False, "connect_timeout": settings.connect_timeout})


def checkout(pool: ConnectionPool[Any], url: str, settings: PoolSettings, *, busy: int,
             location: str) -> tuple[psycopg.Connection[Any], bool]:
    """A connection for one transaction and whether it is the pool's (else: close it after).

    ``busy`` is how many other transactions of this process hold a connection now. Raises
    ``StoreUnavailable`` when none came within ``settings.timeout`` (a direct connection that
    failed meanwhile names the cause; a connect already under way may overrun the timeout by up
    to ``connect_timeout``).
    """
    deadline = time.monotonic() + settings.timeout
    unreachable: psycopg.Error | None = None
    direct_tried = False
    while True:
        wait = max(min(_POOL_SLICE_S, deadline - time.monotonic()), 0.001)
        try:
            return pool.getconn(timeout=wait), True
        except PoolTimeout as exc:
            if not direct_tried and busy < settings.max_size:
                direct_tried = True  # the pool's free slots are reconnecting on a backoff
                try:
                    return _connect(url, settings), False
                except psycopg.OperationalError as failed:
                    unreachable = failed  # go on waiting for the pool: it rides out a restart
            if time.monotonic() >= deadline:
                raise acquire_error(exc, url, location, settings, unreachable) from exc


def _connect(url: str, settings: PoolSettings) -> psycopg.Connection[Any]:
    """A connection made now, like the pool's."""
    return psycopg.connect(url, autocommit=False, connect_timeout=settings.connect_timeout)


def reach(url: str, location: str, settings: PoolSettings) -> None:
    """One connection attempt now, closed at once; ``StoreUnavailable`` naming the server's
    reason when it fails (a refused connection is said in milliseconds, not after the wait)."""
    try:
        _connect(url, settings).close()
    except psycopg.Error as exc:
        why = str(exc).strip() or type(exc).__name__
        raise StoreUnavailable(f"cannot reach the store at {location}: {why}",
                               retry_safe=False) from exc


def acquire_error(exc: PoolTimeout, url: str, location: str, settings: PoolSettings,
                  unreachable: psycopg.Error | None = None) -> StoreError:
    """Why no connection came: the direct connection's failure, else ask the server once, so
    the message names the cause."""
    if unreachable is None:
        try:
            _connect(url, settings).close()
        except psycopg.Error as direct:
            unreachable = direct
    if unreachable is not None:
        why = str(unreachable).strip() or type(unreachable).__name__
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
