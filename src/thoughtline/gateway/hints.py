"""The gateway hint headers: which upstream and model answered a request, and its request id.

Owns the five ``x-gateway-*`` response headers of Claude Code's LLM-gateway protocol
(code.claude.com/docs/en/llm-gateway-protocol), sent on every answer of a
face (Messages, Chat, Responses; whole, streamed, and an upstream's error): the upstream's
configured name and its API, the model the client asked for and the id sent upstream, and the
upstream's own request id when its response named one (the transport reads it). Knows no
provider wire names and no HTTP framework.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

from thoughtline.gateway.config import Upstream

UPSTREAM = "x-gateway-upstream"
UPSTREAM_KIND = "x-gateway-upstream-kind"
MODEL = "x-gateway-model"
UPSTREAM_MODEL = "x-gateway-upstream-model"
UPSTREAM_REQUEST_ID = "x-gateway-upstream-request-id"


@dataclass(kw_only=True, slots=True)
class Hints:
    """One request's hint headers; ``heard`` is the transport's ``on_request_id``."""

    fixed: dict[str, str] = field(default_factory=dict)
    #: The upstream's id of the last response it sent for this request ("": none named).
    request_id: str = ""

    @classmethod
    def of(cls, upstream: Upstream, asked: str, sent: str) -> Hints:
        """``asked``: the client's ``model``; ``sent``: the model id the upstream is sent."""
        values = {UPSTREAM: upstream.name, UPSTREAM_KIND: upstream.provider.api,
                  MODEL: asked, UPSTREAM_MODEL: sent}
        return cls(fixed={name: _value(value) for name, value in values.items()})

    def heard(self, request_id: str) -> None:
        self.request_id = _value(request_id)

    def headers(self) -> dict[str, str]:
        if not self.request_id:
            return dict(self.fixed)
        return {**self.fixed, UPSTREAM_REQUEST_ID: self.request_id}


def _value(text: str) -> str:
    """``text`` as a header value: a client's model id (``allow_any_model``) may hold line
    breaks or non-ASCII, which are percent-encoded rather than sent raw or refused."""
    return text if text.isascii() and text.isprintable() else quote(text, safe="")
