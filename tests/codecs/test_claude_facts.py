"""One table of Claude model facts, asked through both codecs that speak to Claude.

Issue 24 item 4: the Anthropic Messages codec and the Bedrock Converse codec each kept their own
copy of the Claude facts and disagreed: Haiku 5.0–5.4 got manual thinking on the Messages API
and adaptive thinking on Converse, and a regional inference-profile id
(``apne1.anthropic.claude-sonnet-4-5…``) parsed on Bedrock but not on Anthropic. Each case here
asks both codecs for the request they would send and expects the same thinking mode from each.

Expected modes (the adaptive-thinking docs and the Haiku 5.5 "what's new" page: adaptive thinking is
new in Haiku 5.5 relative to Haiku 4.5; Opus/Sonnet 4.6 adaptive; Claude 3.7 and 4.x manual;
Claude 3.5 and older no extended thinking) are written here, not read from the table.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec
from thoughtline.config import presets
from thoughtline.messages import ToolSpec, user

TOOL = (ToolSpec(name="weather", description="weather", parameters={"type": "object"}),)

CASES = [
    ("claude-haiku-4-5", "manual"),
    ("claude-haiku-5-0", "manual"),
    ("claude-haiku-5-2", "manual"),
    ("claude-haiku-5-4", "manual"),
    ("claude-haiku-5-5", "adaptive"),
    ("claude-3-5-sonnet-20241022", "none"),
    ("claude-3-7-sonnet-20250219", "manual"),
    ("claude-sonnet-4-5", "manual"),
    ("claude-sonnet-4-6", "adaptive"),
    ("claude-opus-4-6", "adaptive"),
    ("claude-opus-4-7", "adaptive"),
    ("claude-fable-5-1", "adaptive"),
    ("claude-sonnet-4-5@20250929", "manual"),  # a Vertex id
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "manual"),
    ("apne1.anthropic.claude-sonnet-4-5-20250929-v1:0", "manual"),  # a regional profile id
    ("apac.anthropic.claude-haiku-4-5-20251001-v1:0", "manual"),
    ("global.anthropic.claude-opus-4-6-v1", "adaptive"),
    ("arn:aws:bedrock:ap-northeast-1:123456789012:inference-profile/"
     "apne1.anthropic.claude-sonnet-4-5-20250929-v1:0", "manual"),
]
_MODES = {"adaptive": "adaptive", "enabled": "manual", None: "none"}


def _anthropic_mode(model: str) -> str:
    codec = registry.codec("anthropic")
    route = codec.resolve("bedrock-anthropic", None, model)
    body = codec.encode_request([user("q")], replay.plan(route, ()), RequestSpec(model=model)).body
    return _MODES[(body.get("thinking") or {}).get("type")]


def _bedrock_fields(model: str, tools: tuple[ToolSpec, ...] = ()) -> dict[str, Any]:
    codec = registry.codec("bedrock")
    route = codec.resolve("bedrock", None, model)
    body = codec.encode_request([user("q")], replay.plan(route, ()),
                                RequestSpec(model=model, tools=tools)).body
    return dict(body.get("additionalModelRequestFields") or {})


def _bedrock_mode(model: str) -> str:
    return _MODES[_bedrock_fields(model).get("thinking", {}).get("type")]


@pytest.mark.parametrize(("model", "mode"), CASES)
def test_both_codecs_request_the_same_thinking_mode(model: str, mode: str) -> None:
    assert (_anthropic_mode(model), _bedrock_mode(model)) == (mode, mode)


@pytest.mark.parametrize("model", ["apne1.anthropic.claude-sonnet-4-5-20250929-v1:0",
                                   "claude-opus-4-1", "eu.anthropic.claude-sonnet-4-20250514-v1:0"])
def test_both_codecs_ask_for_interleaving_on_manual_claude_4(model: str) -> None:
    codec = registry.codec("anthropic")
    provider = replace(presets()["bedrock-anthropic"], region="us-east-1")
    headers = codec.endpoint(provider, model, stream=False).headers
    assert "interleaved-thinking-2025-05-14" in headers.get("anthropic-beta", "")
    assert _bedrock_fields(model, TOOL)["anthropic_beta"] == ["interleaved-thinking-2025-05-14"]


def test_a_regional_profile_id_names_the_same_model_on_both_codecs() -> None:
    from thoughtline.codecs.anthropic import models
    from thoughtline.codecs.bedrock import claude_key, model_id

    regional = "apne1.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert models.parse(regional) == models.parse("claude-sonnet-4-5")
    assert models.normalize(regional) == claude_key(regional) == "claude-sonnet-4-5"
    assert claude_key("claude-sonnet-4-5@20250929") == models.normalize("claude-sonnet-4.5")
    ident = model_id(regional)  # a profile: the request may be served in another region
    assert ident.cross_region and ident.base == "anthropic.claude-sonnet-4-5-20250929-v1:0"


_SEGMENTS = st.sampled_from(["us", "eu", "apne1", "apne", "global", "us-gov", "anthropic",
                             "claude-sonnet-4-5-20250929-v1:0", "claude-opus-4", "5", "x", ""])


@given(st.lists(_SEGMENTS, min_size=1, max_size=5).map(".".join))
def test_an_id_too_short_for_a_profile_prefix_is_not_matched_against_it(model_id: str) -> None:
    """``strip_profile_prefix`` skips the table's pattern for ids with fewer than two dots (a
    prefix is followed by ``<vendor>.<model>``): it strips exactly what the pattern strips."""
    from thoughtline.codecs import claude

    pattern = re.compile(rf"^(?:{claude.table().profile_prefix})\.(?=[a-z0-9-]+\.)")
    stripped = pattern.sub("", model_id, count=1)
    assert claude.strip_profile_prefix(model_id) == (stripped, stripped != model_id)
