"""The Anthropic Messages codec object the core talks to (``thoughtline.codecs.base.Codec``).

Binds the pure modules to the protocol: routes from ``routes/anthropic.toml`` (``resolve``),
request bodies (``encode``), whole responses (``decode``), SSE streams (``fold``), endpoints for
the Anthropic API, Vertex (``:rawPredict`` / ``:streamRawPredict``), Foundry, Bedrock's Messages
API and Anthropic-compatible vendors, the ``anthropic-version`` / ``anthropic-beta`` headers, and
the reading of rejections (``rejections``). What is sent in place of reasoning that cannot go
signed is nothing at all (see ``encode``): never transcribed thinking the model would imitate.
Each stored turn's wire form is stored too (``wire_forms``, ``plan_digest``: see ``forms``), so a
resumed session's request is spliced from bytes; a rejection of such a request is read against
the ordinary request of the decoded history, which has the same bytes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from thoughtline.codecs.anthropic import binding, compaction, forms, models, rejections
from thoughtline.codecs.anthropic.decode import decode_response
from thoughtline.codecs.anthropic.encode import (
    OWNED,
    Index,
    WireCache,
    encode_request,
    wire_summary,
)
from thoughtline.codecs.anthropic.fold import StreamFold
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.wire import (
    API,
    BETA_HEADER,
    BINDING_BETA,
    INTERLEAVED_BETA,
    VERSION_HEADER,
)
from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson, RequestSpec
from thoughtline.codecs.common import path_segment
from thoughtline.config import ProviderConfig
from thoughtline.errors import UsageError
from thoughtline.events import Done
from thoughtline.messages import Message, Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import ApiRow, Route, api_table, hostname_of, path_of

DEFAULT_BASE = "https://api.anthropic.com"
_BEDROCK_URL = "https://bedrock-runtime.{region}.amazonaws.com/anthropic"  # Bedrock's Messages API


@lru_cache(maxsize=64)
def _profile(row: str) -> AnthropicProfile:
    table = api_table(API)
    raw = next(r for r in table.rows if r.id == row)
    return AnthropicProfile.from_row(row, raw.profile)


def route_row(provider: str, base_url: str | None) -> ApiRow:
    """The table row for a provider id and base URL. With no base URL (presets whose URL is
    built from a region or project: Vertex, Bedrock) the provider id alone selects the row."""
    table = api_table(API)
    if not base_url:
        wanted = provider.strip().lower()
        found = next((r for r in table.rows if wanted in r.providers), None)
        if found is not None:
            return found
    return table.match(provider, base_url)


def profile_for(provider: str, base_url: str | None) -> AnthropicProfile:
    return _profile(route_row(provider, base_url).id)


def _vertex_url(provider: ProviderConfig, model: str, verb: str) -> str:
    model = path_segment(model)
    base = provider.base_url.rstrip("/")
    if "/publishers/anthropic/models" in base:
        return f"{base}/{model}:{verb}"
    region = provider.region or "global"
    if not provider.project:
        raise UsageError("Vertex needs a project: set project under [providers.NAME] in "
                         "config.toml")
    host = base or (f"https://{region}-aiplatform.googleapis.com" if region != "global"
                    else "https://aiplatform.googleapis.com")
    return (f"{host}/v1/projects/{provider.project}/locations/{region}"
            f"/publishers/anthropic/models/{model}:{verb}")


def _messages_url(provider: ProviderConfig, profile: AnthropicProfile) -> str:
    base = provider.base_url.rstrip("/")
    if not base and profile.platform == "bedrock":
        if not provider.region:
            raise UsageError("no AWS region: set region under [providers.NAME] in config.toml")
        base = _BEDROCK_URL.format(region=provider.region)
    base = base or DEFAULT_BASE
    if base.endswith("/messages"):
        return base
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def api_headers(provider: ProviderConfig, profile: AnthropicProfile, model: str) -> dict[str, str]:
    """``anthropic-version`` (the client's, else the route's default) and ``anthropic-beta``."""
    given = {k.lower(): v for k, v in (provider.headers or {}).items()}
    headers: dict[str, str] = {}
    version = given.get(VERSION_HEADER) or profile.version
    if version and not profile.body_version:
        headers[VERSION_HEADER] = version
    betas = [b.strip() for b in given.get(BETA_HEADER, "").split(",") if b.strip()]
    wanted = list(profile.betas)
    if models.binds_blocks(model):
        # prefix_mismatch_behavior is sent on every request to a binding model (§1a).
        wanted.append(BINDING_BETA)
    if models.manual_interleaving_beta(model):
        wanted.append(INTERLEAVED_BETA)
    betas.extend(b for b in wanted if b not in betas)
    if betas:
        headers[BETA_HEADER] = ",".join(betas)
    return headers


@dataclass(frozen=True, kw_only=True, slots=True)
class SplicedIndex:
    """A request spliced from stored wire forms: its index (counts and prefix, no wire
    locations) and what it was built from (its first ``size`` messages), to rebuild the
    ordinary request of the decoded history when a rejection or a report must be read."""

    index: Index
    history: Sequence[Message]
    size: int
    plan: ReplayPlan
    spec: RequestSpec

    def rebuilt(self) -> Encoded:
        """The same request encoded from the decoded history (the same bytes), with its
        ordinary index."""
        history = list(itertools.islice(self.history, self.size))  # decodes the stored turns
        return CODEC.encode_request(history, self.plan, self.spec)


def _index(encoded: Encoded) -> Index | None:
    index = encoded.index
    if isinstance(index, SplicedIndex):
        return index.index
    return index if isinstance(index, Index) else None


def _located(encoded: Encoded) -> Encoded:
    """``encoded``, or the ordinary request with the same bytes when it was spliced."""
    index = encoded.index
    return index.rebuilt() if isinstance(index, SplicedIndex) else encoded


class Anthropic(CodecBase):
    """Anthropic Messages (``POST …/v1/messages``, SSE streams with ``event:`` names)."""

    api = API
    owned = OWNED

    def resolve(self, provider: str, base_url: str | None, model: str, *,
                echo: str = "auto") -> Route:
        row = route_row(provider, base_url)
        return Route(row=row.id, api=API, provider=provider.strip().lower(),
                     host=hostname_of(base_url), model=model, profile=_profile(row.id),
                     path=path_of(base_url), explain=row.explain)

    def new_cache(self) -> WireCache:
        return WireCache()

    def encode_request(self, history: Sequence[Message], plan: ReplayPlan, spec: RequestSpec,
                       cache: WireCache | None = None) -> Encoded:
        body, index = encode_request(history, plan, model=spec.model, tools=spec.tools,
                                     params_=spec.params, settings=spec.settings,
                                     stream=spec.stream, cache=cache)
        if index.spliced:
            # Spliced from stored wire forms: the bytes are the request; a dict view of them is
            # parsed only if something asks for it.
            return Encoded(raw=orjson.dumps(body), index=SplicedIndex(
                index=index, history=history, size=len(history), plan=plan, spec=spec))
        if cache is not None:  # the messages earlier requests carried go in as their bytes
            parts = cache.prefix.parts
            return Encoded(body=body, index=index, dump=lambda: orjson.dumps(
                {**body, "messages": parts(body["messages"])}))
        return Encoded(body=body, index=index)

    def wire_forms(self, history: Sequence[Message], start: int,
                   plan: ReplayPlan) -> dict[int, tuple[bytes, bytes]]:
        """The stored forms of ``history[start:]`` (``codecs.base.StoresWireForms``)."""
        return forms.wire_forms(history, start, plan)

    def plan_digest(self, plan: ReplayPlan) -> str:
        return forms.plan_digest(plan)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        profile = profile_for(provider.route_id, provider.base_url)
        if profile.platform == "vertex":
            url = _vertex_url(provider, model, "streamRawPredict" if stream else "rawPredict")
        else:
            url = _messages_url(provider, profile)
        return Endpoint(url=url, framing="sse" if stream else "json",
                        headers=api_headers(provider, profile, model))

    def default_base_url(self, provider: ProviderConfig) -> str:
        """Bedrock's region-templated URL when no base URL is set (what ``thoughtline routes``
        shows); other platforms need theirs given, or name their host in the route data."""
        profile = profile_for(provider.route_id, provider.base_url)
        if provider.base_url or profile.platform != "bedrock":
            return provider.base_url
        return _BEDROCK_URL.format(region=provider.region or "{region}")

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or profile_for(provider.route_id, provider.base_url).auth

    def summary(self, encoded: Encoded, cache: WireCache | None = None) -> dict[str, Any]:
        return wire_summary(_index(encoded))

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        if rejections.wording_of(status, body) is None:
            return None  # (without rebuilding a spliced request to read it)
        return rejections.classify(status, body, _located(encoded), plan)

    def stamp(self, done: Done, encoded: Encoded) -> Done:
        """Hook: the answer stamped with its request's prefix digest (binding models only)."""
        index = _index(encoded)
        prefix = index.prefix if index is not None else ""
        return binding.stamped(done, prefix) if prefix else done

    def position_critical(self, value: Mapping[str, Any]) -> bool:
        """Hook: a block that must stay where it is (a compaction block, §4c)."""
        return value.get("type") == compaction.BLOCK

    def native_compaction(self, provider: ProviderConfig) -> compaction.NativeCompaction | None:
        """Hook: on-demand compaction as the summarizer, where the model has it (§4c)."""
        return compaction.native_compaction(provider.model, provider.headers)

    def reported(self, done: Done, encoded: Encoded, plan: ReplayPlan) -> Lesson | None:
        """Hook: what a successful response's reports teach (blocks the API dropped)."""
        if not done.reports:
            return None
        return rejections.reported(done.reports, _located(encoded))


CODEC = Anthropic()
