"""The Responses codec object the core talks to (``thoughtline.codecs.base.Codec``).

It binds the pure modules (``profile``, ``encode``, ``decode``, ``fold``, ``rejections``) to the
protocol: routes from ``routes/openai-responses.toml``, ``POST {base_url}/responses`` with SSE
streams, bearer auth, and the repair of rejected encrypted items (fingerprint exactly the
offending ones, retry once without them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline import platforms
from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson
from thoughtline.codecs.openai_responses import agents, compaction, rejections
from thoughtline.codecs.openai_responses.decode import decode_response, native_problem
from thoughtline.codecs.openai_responses.encode import (
    OWNED,
    TURNS,
    ResponsesIndex,
    stamp_issuer,
    wire_summary,
)
from thoughtline.codecs.openai_responses.fold import StreamFold
from thoughtline.codecs.openai_responses.profile import resolve_responses
from thoughtline.codecs.openai_responses.wire import API, NS
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route

#: OpenAI and OpenAI-compatible endpoints: the base URL the provider names, a bearer key.
PLATFORM = "openai"


class OpenAIResponses(CodecBase):
    """OpenAI Responses (``POST {base_url}/responses``), stateless, SSE streams."""

    api = API
    owned = OWNED
    turns = TURNS  # each turn encoded once, stored and spliced by the core (``wire.cache``)

    def native_problem(self, namespace: str, value: Mapping[str, Any]) -> tuple[str, str] | None:
        return native_problem(value) if namespace == NS else None

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        return resolve_responses(provider, base_url, model)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        return Endpoint(url=platforms.locate(provider, PLATFORM).base + "/responses",
                        framing="sse" if stream else "json")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or platforms.facts(PLATFORM).auth

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        index = encoded.index
        if isinstance(index, ResponsesIndex):
            return index.summary()
        return wire_summary(encoded.body)

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        provider = plan.target.provider if plan.target is not None else "the provider"
        index = encoded.index
        origins = index.origins() if isinstance(index, ResponsesIndex) else None
        return rejections.classify(status, body, encoded.body, provider=provider,
                                   origins=origins, target=plan.target, issuer=plan.issuer)

    def position_critical(self, value: Mapping[str, Any]) -> bool:
        """Hook: an item that must stay where it is (compaction, branching, the tail walk)."""
        return value.get("type") in compaction.POSITION_CRITICAL

    def readable(self, value: Mapping[str, Any]) -> str | None:
        """Hook: what another API gets of an item of ours (``codecs.foreign``): a model's
        ``agent_message`` as its text; None for the others (a ``compaction`` item is sealed)."""
        return agents.readable(value) or None if agents.is_item(value) else None

    def native_compaction(self, provider: ProviderConfig) -> compaction.NativeCompaction:
        """Hook: server-side compaction (a ``compaction_trigger`` input item:
        developers.openai.com/api/docs/guides/compaction)."""
        return compaction.NATIVE

    def issued(self, done: Done, plan: ReplayPlan) -> Done:
        """Hook: the answer's encrypted reasoning items stamped with who they were issued to
        (``Origin.account``: the route's account, else the key's identity), so a later "was
        not issued to this caller" drops only that issuer's items."""
        return stamp_issuer(done, plan.issuer)


CODEC = OpenAIResponses()
