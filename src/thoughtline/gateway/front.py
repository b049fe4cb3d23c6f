"""The gateway's ASGI entry point: the faces' POST paths by one dict lookup, a WebSocket
handshake refused on any path (``websocket``), the rest routed (GET routes, and HEAD-only ones such
as Claude Code's probe of ``/``).

``Front`` is what ``app.create_app`` returns and a server runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from thoughtline.gateway import websocket
from thoughtline.gateway.accesslog import AccessLog

Handler = Callable[[Request], Awaitable[Any]]


class Front:
    """The ASGI app: each face's POST paths reach their handler by one dict lookup; everything
    else (the lifespan, GET routes, a wrong method, an unknown path) goes to Starlette's router,
    except a WebSocket handshake on any path: refused with a 404 and a line in ``access``.

    The profile of a request (docs/benchmarks.md, "Profile") showed Starlette's middleware and
    route matching on every request; a handler here gets the same ``Request`` and returns the
    same ``Response``. An exception a handler lets out is answered as Starlette's server-error
    middleware answers it (a plain 500, as nothing was sent yet) and raised to the server.
    """

    def __init__(self, posts: Mapping[str, Handler], gets: Mapping[str, Handler],
                 lifespan: Any, *, heads: Mapping[str, Handler] | None = None,
                 access: AccessLog | None = None) -> None:
        routes = [Route(path, handler, methods=["POST"]) for path, handler in posts.items()]
        routes += [Route(path, handler, methods=["GET"]) for path, handler in gets.items()]
        routes += [Route(path, handler, methods=["HEAD"])
                   for path, handler in (heads or {}).items()]
        self.router = Starlette(routes=routes, lifespan=lifespan)
        self.hot = dict(posts)
        self.access = access

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        handler = self.hot.get(scope["path"]) if scope["type"] == "http" and scope.get(
            "method") == "POST" and not scope.get("root_path") else None
        if handler is None:
            if websocket.is_handshake(scope):
                await websocket.refuse(scope, receive, send, self.access)
                return
            await self.router(scope, receive, send)
            return
        try:
            response = await handler(Request(scope, receive, send))
        except Exception:  # nothing was sent: a handler answers by returning its response
            await Response("Internal Server Error", status_code=500,
                           media_type="text/plain")(scope, receive, send)
            raise
        await response(scope, receive, send)
