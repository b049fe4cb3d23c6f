"""The Anthropic Messages codec object the core talks to (``thoughtline.codecs.base.Codec``).

Binds the pure modules to the protocol: routes from ``routes/anthropic.toml`` (``resolve``),
request bodies (``encode``), whole responses (``decode``), SSE streams (``fold``), endpoints for
the Anthropic API, Vertex (``:rawPredict`` / ``:streamRawPredict``), Foundry, Bedrock's Messages
API and Anthropic-compatible vendors, the ``anthropic-version`` / ``anthropic-beta`` headers, and
the reading of rejections (``rejections``). What is sent in place of reasoning that cannot go
signed is nothing at all (see ``encode``): never transcribed thinking the model would imitate.
Requests are encoded turn by turn (``turns``: the ``TurnEncoder``), so the core's wire cache
stores each turn's bytes and splices a resumed session's request from them; a rejection, a report
and the log read the request as sent (``encode.Index``), never a rebuilt one.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from thoughtline import platforms
from thoughtline.codecs.anthropic import binding, compaction, models, rejections
from thoughtline.codecs.anthropic.decode import decode_response
from thoughtline.codecs.anthropic.encode import OWNED, Index, wire_summary
from thoughtline.codecs.anthropic.fold import StreamFold
from thoughtline.codecs.anthropic.profile import AnthropicProfile
from thoughtline.codecs.anthropic.turns import ENCODER
from thoughtline.codecs.anthropic.wire import (
    API,
    BETA_HEADER,
    BINDING_BETA,
    ISSUER_ONLY,
    VERSION_HEADER,
)
from thoughtline.codecs.base import CodecBase, Context, Encoded, Endpoint, Lesson
from thoughtline.codecs.common import path_segment
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import ApiRow, Route, api_table, hostname_of, path_of


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


def request_url(provider: ProviderConfig, profile: AnthropicProfile, model: str, *,
                stream: bool) -> str:
    """``…/v1/messages``, or Vertex's ``…/publishers/anthropic/models/{model}:rawPredict``
    (``:streamRawPredict``); the base, region and project come from the platform layer."""
    place = platforms.locate(provider, profile.endpoint)
    if profile.platform == "vertex":
        verb = "streamRawPredict" if stream else "rawPredict"
        model = path_segment(model)
        if "/publishers/anthropic/models" in place.base:
            return f"{place.base}/{model}:{verb}"
        return f"{place.scoped()}/publishers/anthropic/models/{model}:{verb}"
    base = place.base
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
        # prefix_mismatch_behavior is sent on every request to a binding model (preserved-thinking
        # page).
        wanted.append(BINDING_BETA)
    # The beta is for manual thinking on Claude 4 / 4.1 only (the adaptive-thinking docs).
    interleaving = models.interleaving_beta(model)
    if interleaving:
        wanted.append(interleaving)
    betas.extend(b for b in wanted if b not in betas)
    if betas:
        headers[BETA_HEADER] = ",".join(betas)
    return headers


def _index(encoded: Encoded) -> Index | None:
    index = encoded.index
    return index if isinstance(index, Index) else None


class Anthropic(CodecBase):
    """Anthropic Messages (``POST …/v1/messages``, SSE streams with ``event:`` names)."""

    api = API
    owned = OWNED
    turns = ENCODER

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        row = route_row(provider, base_url)
        return Route(row=row.id, api=API, provider=provider.strip().lower(),
                     host=hostname_of(base_url), model=model, profile=_profile(row.id),
                     path=path_of(base_url), explain=row.explain)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        profile = profile_for(provider.route_id, provider.base_url)
        return Endpoint(url=request_url(provider, profile, model, stream=stream),
                        framing="sse" if stream else "json",
                        headers=api_headers(provider, profile, model))

    def default_base_url(self, provider: ProviderConfig) -> str:
        """An AWS platform's region-templated URL when no base URL is set (what ``thoughtline
        routes`` shows); other platforms need theirs given, or name their host in the route
        data."""
        endpoint = profile_for(provider.route_id, provider.base_url).endpoint
        if provider.base_url or platforms.facts(endpoint).region != "aws":
            return provider.base_url
        return platforms.default_url(provider, endpoint)

    def auth_scheme(self, provider: ProviderConfig) -> str:
        endpoint = profile_for(provider.route_id, provider.base_url).endpoint
        return provider.auth or platforms.facts(endpoint).auth

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        return wire_summary(_index(encoded))

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        return rejections.classify(status, body, encoded, plan)

    def stamp(self, done: Done, encoded: Encoded) -> Done:
        """Hook: the answer stamped with its request's prefix digest (binding models only)."""
        index = _index(encoded)
        prefix = index.prefix if index is not None else ""
        return binding.stamped(done, prefix) if prefix else done

    def later_contexts(self, state: Any, context: Context) -> tuple[Context, ...]:
        """Hook: a turn kept now is dropped later (``turns.Encoder.later``)."""
        return ENCODER.later(state, context)

    def position_critical(self, value: Mapping[str, Any]) -> bool:
        """Hook: a block that must stay where it is (a compaction block: compaction-on-demand page;
        a fallback marker: anthropic-sdk-python beta_fallback_block_param)."""
        return value.get("type") in ISSUER_ONLY

    def readable(self, value: Mapping[str, Any]) -> str | None:
        """Hook: what another API gets of a block of ours (``codecs.foreign``): a compaction
        block's summary; None for a block with no readable form."""
        return compaction.summary_of(value)

    def native_compaction(self, provider: ProviderConfig) -> compaction.NativeCompaction | None:
        """Hook: on-demand compaction as the summarizer, where the model has it
        (platform.claude.com/docs/en/build-with-claude/compaction-on-demand)."""
        return compaction.native_compaction(provider.model, provider.headers)

    def reported(self, done: Done, encoded: Encoded, plan: ReplayPlan) -> Lesson | None:
        """Hook: what a successful response's reports teach (blocks the API dropped)."""
        if not done.reports:
            return None
        return rejections.reported(done.reports, encoded)


CODEC = Anthropic()
