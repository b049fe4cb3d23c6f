"""The inspector's ASGI app: routes, access control, templates and the two static files.

Owns who may look and how a page is answered. Pages: ``/`` (sessions, searchable, newest first,
paginated), ``/sessions/{ref}`` (branch tree, generations, turns), ``/sessions/{ref}/requests``
(the request log of that session and its prompt-tokens chart), ``/static/ui.css|ui.js``.

Access: with no tokens the app answers only requests addressed to a loopback name (``Host`` is
checked, so a web page cannot reach it through DNS rebinding) and shows every session. With
tokens configured (as ``serve``), every request needs one — ``Authorization: Bearer <token>`` or
HTTP Basic with the token as password, which browsers ask for — and shows only that token's
tenant's sessions. Every page is sent with a Content-Security-Policy that allows only this app's
own script and style: stored text that slipped through escaping still could not run.

The store is read on the event loop's thread: a page is a few indexed reads for one local
reader, and it keeps SQLite's connection on one thread.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from thoughtline.errors import NotFound, StoreError, UsageError
from thoughtline.estimate import context_window
from thoughtline.gateway.tenancy import Tenants
from thoughtline.store import Store
from thoughtline.termsafe import safe, safe_line
from thoughtline.ui import pages
from thoughtline.ui import requests as request_view

_STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; base-uri 'none'; form-action 'self'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Inspector:
    """What the app reads: the store, the request log's directory, the gateway tokens (none:
    loopback only) and the configured context windows (provider id → tokens)."""

    store: Store
    logs: Path
    tokens: Sequence[str] = ()
    windows: Mapping[str, int] = field(default_factory=dict)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("thoughtline.ui", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    # Escaping makes markup inert; these make control characters (ESC, bidi overrides, NUL …)
    # visible as \x1b-style escapes instead of invisible or reordering what is shown.
    env.filters["visible"] = safe
    env.filters["line"] = safe_line
    env.filters["short"] = lambda digest: str(digest).removeprefix("sha256:")[:12]
    env.filters["num"] = lambda n: f"{n:,}" if isinstance(n, int | float) else "–"
    return env


Handler = Callable[[Request, str | None], Awaitable[Response]]


class _App:
    def __init__(self, inspector: Inspector) -> None:
        self.inspector = inspector
        self.tenants = Tenants(inspector.tokens)
        self.env = _environment()

    def render(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status, headers=_HEADERS)

    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """``handler(request, tenant)`` behind the access rules; ``tenant`` None shows all."""

        async def endpoint(request: Request) -> Response:
            if not self.tenants.required:
                if _hostname(request.headers.get("host", "")) not in _LOOPBACK_NAMES:
                    return Response("this inspector answers only on 127.0.0.1 / localhost\n",
                                    status_code=421, media_type="text/plain")
                tenant = None
            else:
                tenant = self.tenants.authenticate(_token(request.headers.get("authorization")))
                if tenant is None:
                    return Response("a gateway token is needed (as the password)\n",
                                    status_code=401, media_type="text/plain",
                                    headers={"WWW-Authenticate": 'Basic realm="thoughtline"'})
            try:
                return await handler(request, tenant)
            except NotFound as exc:
                return self.render("error.html", 404, title="not found", message=str(exc))
            except UsageError as exc:  # e.g. a prefix or title naming several sessions
                return self.render("error.html", 400, title="which session?", message=str(exc))
            except StoreError as exc:
                return self.render("error.html", 500, title="store error", message=str(exc))

        return endpoint

    async def sessions(self, request: Request, tenant: str | None) -> Response:
        query = request.query_params.get("q", "")
        listing = pages.list_page(self.inspector.store, tenant=tenant, query=query,
                                  page=_page(request))
        return self.render("sessions.html", title="sessions", listing=listing)

    async def session(self, request: Request, tenant: str | None) -> Response:
        record = self.inspector.store.get_session(request.path_params["ref"], tenant=tenant)
        data = pages.session_page(self.inspector.store, record, tenant=tenant,
                                  page=_page(request))
        records, _ = request_view.read_requests(self.inspector.logs, record.id)
        reports = [{"request": row["number"], "report": report}
                   for row in request_view.request_rows(records) for report in row["reports"]]
        return self.render("session.html", title=record.title or record.id, reports=reports,
                           **data)

    async def requests(self, request: Request, tenant: str | None) -> Response:
        store = self.inspector.store
        record = store.get_session(request.path_params["ref"], tenant=tenant)
        records, skipped = request_view.read_requests(self.inspector.logs, record.id)
        generations = pages.generations(store, record.id)
        provider = pages.session_row(record)
        window = context_window(provider["model"],
                                self.inspector.windows.get(provider["provider"]))
        chart = request_view.chart(
            records, window=window,
            compactions=[g["created_at"] for g in generations if g["number"] > 0])
        return self.render("requests.html", title=f"requests of {record.title or record.id}",
                           session=provider, rows=request_view.request_rows(records),
                           chart=chart, skipped=skipped)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found\n", status_code=404, media_type="text/plain")
        body = resources.files("thoughtline.ui").joinpath("static", name).read_bytes()
        return Response(body, media_type=_STATIC[name],
                        headers={"X-Content-Type-Options": "nosniff"})


def _page(request: Request) -> int:
    """The ``page`` query parameter; 1 when absent or not a number."""
    try:
        return int(request.query_params.get("page", "1"))
    except ValueError:
        return 1


def _hostname(header: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8788`` → ``[::1]``)."""
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.partition(":")[0]


def _token(authorization: str | None) -> str | None:
    """The token a request presents: a Bearer token, or the password of Basic credentials (what a
    browser's login prompt sends)."""
    scheme, _, value = (authorization or "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded.partition(":")[2] or None


def create_app(inspector: Inspector) -> Starlette:
    app = _App(inspector)
    return Starlette(routes=[
        Route("/", app.guarded(app.sessions)),
        Route("/sessions/{ref:str}", app.guarded(app.session)),
        Route("/sessions/{ref:str}/requests", app.guarded(app.requests)),
        Route("/static/{name:str}", app.static),
    ])
