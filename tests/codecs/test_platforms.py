"""One platform layer: URL, region, project/location and credential scheme resolved in one place.

Issue 24 item 4: the AWS region rule was written three times, differently. With only
``AWS_REGION`` set, ``--provider bedrock`` (Converse) worked and ``bedrock-anthropic`` (Claude
through Bedrock's Messages API) failed with "no AWS region". Both codecs now ask the same rule and
fail with the same words.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from thoughtline.codecs import registry
from thoughtline.config import ProviderConfig, presets
from thoughtline.errors import UsageError

_AWS = ("AWS_REGION", "AWS_DEFAULT_REGION")


def _preset(name: str, **changes: Any) -> ProviderConfig:
    return replace(presets()[name], **changes)


def _url(provider: ProviderConfig) -> str:
    return registry.codec(provider.api).endpoint(provider, provider.model, stream=False).url


@pytest.fixture
def no_aws_region(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _AWS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("variable", _AWS)
@pytest.mark.parametrize(("preset", "host"), [
    ("bedrock", "https://bedrock-runtime.eu-west-3.amazonaws.com/model/"),
    ("bedrock-anthropic", "https://bedrock-runtime.eu-west-3.amazonaws.com/anthropic/v1/messages"),
])
def test_every_aws_route_takes_the_region_from_the_aws_environment(
        no_aws_region: pytest.MonkeyPatch, variable: str, preset: str, host: str) -> None:
    no_aws_region.setenv(variable, "eu-west-3")
    assert _url(_preset(preset)).startswith(host)


def test_the_configured_region_wins_over_the_environment(
        no_aws_region: pytest.MonkeyPatch) -> None:
    no_aws_region.setenv("AWS_REGION", "eu-west-3")
    for preset in ("bedrock", "bedrock-anthropic"):
        assert _url(_preset(preset, region="ap-south-1")).startswith(
            "https://bedrock-runtime.ap-south-1.amazonaws.com/")


def test_no_region_is_one_error_on_every_aws_route(no_aws_region: pytest.MonkeyPatch) -> None:
    words = set()
    for preset in ("bedrock", "bedrock-anthropic"):
        with pytest.raises(UsageError) as caught:
            _url(_preset(preset))
        words.add(str(caught.value))
    [message] = words
    assert "AWS_REGION" in message and "region" in message


def test_the_default_url_shown_by_routes_follows_the_same_rule(
        no_aws_region: pytest.MonkeyPatch) -> None:
    for preset, path in (("bedrock", ""), ("bedrock-anthropic", "/anthropic")):
        provider = _preset(preset)
        shown = registry.codec(provider.api).default_base_url  # what `thoughtline routes` shows
        assert shown(provider) == f"https://bedrock-runtime.{{region}}.amazonaws.com{path}"
        no_aws_region.setenv("AWS_DEFAULT_REGION", "us-west-2")
        assert shown(provider) == f"https://bedrock-runtime.us-west-2.amazonaws.com{path}"
        no_aws_region.delenv("AWS_DEFAULT_REGION")


def test_claude_platform_on_aws_has_its_own_host_and_signing_service(
        no_aws_region: pytest.MonkeyPatch) -> None:
    provider = ProviderConfig(id="claude-platform-aws", api="anthropic", region="us-east-1",
                              model="claude-sonnet-4-5")
    codec = registry.codec("anthropic")
    assert _url(provider) == "https://aws-external-anthropic.us-east-1.api.aws/v1/messages"
    assert codec.auth_scheme(provider) == "sigv4:aws-external-anthropic"


@pytest.mark.parametrize(("preset", "location", "url"), [
    ("vertex-anthropic", "us", "https://aiplatform.us.rep.googleapis.com/v1/projects/p/"
     "locations/us/publishers/anthropic/models/m:rawPredict"),
    ("vertex-gemini", "eu", "https://aiplatform.eu.rep.googleapis.com/v1/projects/p/"
     "locations/eu/publishers/google/models/m:generateContent"),
    ("vertex-gemini", "europe-west4", "https://europe-west4-aiplatform.googleapis.com/v1/"
     "projects/p/locations/europe-west4/publishers/google/models/m:generateContent"),
    ("vertex-gemini-interactions", "us", "https://aiplatform.us.rep.googleapis.com/v1beta1/"
     "projects/p/locations/us/interactions"),
])
def test_vertex_locations_pick_their_host_in_one_place(preset: str, location: str,
                                                       url: str) -> None:
    assert _url(_preset(preset, project="p", region=location, model="m")) == url


def test_vertex_without_a_project_is_one_error_on_every_api() -> None:
    words = set()
    for preset in ("vertex-anthropic", "vertex-gemini", "vertex-gemini-interactions"):
        with pytest.raises(UsageError) as caught:
            _url(_preset(preset, model="m"))
        words.add(str(caught.value).replace(preset, "PRESET"))
    [message] = words
    assert "project" in message


@pytest.mark.parametrize(("preset", "scheme"), [
    ("anthropic", "x-api-key"), ("vertex-anthropic", "google-oauth"), ("foundry", "api-key"),
    ("bedrock-anthropic", "sigv4:bedrock"), ("bedrock", "sigv4:bedrock"),
    ("gemini", "x-goog-api-key"), ("vertex-gemini", "google-oauth"),
    ("gemini-interactions", "x-goog-api-key"), ("vertex-gemini-interactions", "google-oauth"),
    ("openai", "bearer"), ("openai-responses", "bearer"), ("minimax-anthropic", "x-api-key"),
])
def test_each_platform_names_its_credential_scheme(preset: str, scheme: str) -> None:
    provider = replace(_preset(preset), auth="")  # the platform's default, not the preset's
    assert registry.codec(provider.api).auth_scheme(provider) == scheme
    assert registry.codec(provider.api).auth_scheme(replace(provider, auth="entra")) == "entra"
