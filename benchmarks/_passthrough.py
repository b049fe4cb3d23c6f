"""A bare pass-through proxy on the gateway's own stack: the floor a proxy cannot go below.

    python -m benchmarks._passthrough UPSTREAM_BASE_URL

Starlette under uvicorn (as ``thoughtline serve``), one ``httpx.AsyncClient`` to the upstream:
every ``POST`` under ``/v1`` is read whole and its body sent unchanged to ``UPSTREAM + path``
(the ``/v1`` prefix dropped, as the emulator's base URL ends in it), its answer returned as
received, streamed when the upstream streams. No parsing, no replay, no store, no log. Prints
``passthrough listening on http://127.0.0.1:PORT`` once it serves (the benchmark waits for it).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

#: Headers forwarded both ways; hop-by-hop and length headers are the server's own business.
_FORWARD = ("content-type", "authorization", "x-api-key", "anthropic-version")


def create_app(upstream: str) -> Starlette:
    base = upstream.rstrip("/")
    client = httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=2048,
                                                                max_keepalive_connections=2048))

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k in _FORWARD}
        sent = client.build_request("POST", base + request.url.path.removeprefix("/v1"),
                                    content=body, headers=headers)
        answer = await client.send(sent, stream=True)
        kind = answer.headers.get("content-type", "application/json")
        if kind.startswith("text/event-stream"):
            return StreamingResponse(answer.aiter_raw(), status_code=answer.status_code,
                                     media_type=kind, background=BackgroundTask(answer.aclose))
        content = await answer.aread()
        await answer.aclose()
        return Response(content, status_code=answer.status_code, media_type=kind)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    return Starlette(routes=[Route("/v1/{path:path}", forward, methods=["POST"])],
                     lifespan=lifespan)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, url: str) -> None:
        super().__init__(config)
        self.url = url

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        print(f"passthrough listening on {self.url}", flush=True)


def main(argv: list[str]) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(argv[0]), log_config=None, access_log=False,
                            lifespan="on", server_header=False)
    _Server(config, f"http://127.0.0.1:{port}").run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
