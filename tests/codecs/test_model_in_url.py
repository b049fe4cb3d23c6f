"""Issue 23 item 3: a model id (a gateway client's value) stays one path segment of the URL.

Gemini (AI Studio and Vertex) and Claude on Vertex put the model in the path; an id holding
``../``, ``?``, ``#``, ``/`` or ``:`` must not reach another path, project, query or verb of the
upstream host (where the gateway's key or OAuth token would go with it). Bedrock already quoted.
"""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from thoughtline import config
from thoughtline.codecs import registry

HOSTILE = [
    "../../../v1beta/files",
    "../../../../projects/someone-else/locations/global/publishers/google/models/gemini-3-pro",
    "gemini-3-pro:generateContent?key=leak#",
    "gemini-3-pro/../../cachedContents",
    "%2e%2e%2f%2e%2e%2fcachedContents",
]


def _url(preset: str, model: str, *, stream: bool, **changes: str) -> httpx.URL:
    provider = replace(config.presets()[preset], model=model, **changes)
    endpoint = registry.codec(provider.api).endpoint(provider, model, stream=stream)
    return httpx.URL(endpoint.url)  # parsed as httpx sends it (dot segments resolved)


CASES = [
    ("gemini", {}, "/v1beta/models/", ":generateContent"),
    ("vertex-gemini", {"project": "mine"},
     "/v1/projects/mine/locations/global/publishers/google/models/", ":generateContent"),
    ("vertex-anthropic", {"project": "mine"},
     "/v1/projects/mine/locations/global/publishers/anthropic/models/", ":rawPredict"),
]


@pytest.mark.parametrize("model", HOSTILE)
@pytest.mark.parametrize(("preset", "changes", "prefix", "verb"), CASES)
def test_a_hostile_model_id_stays_in_its_path_segment(
        preset: str, changes: dict[str, str], prefix: str, verb: str, model: str) -> None:
    url = _url(preset, model, stream=False, **changes)
    assert url.raw_path.decode().startswith(prefix)
    segment = url.raw_path.decode()[len(prefix):]
    assert "/" not in segment and segment.endswith(verb) and segment.count(":") == 1
    assert url.query == b"" and url.fragment == ""
    # What the upstream decodes is exactly the id the client sent.
    assert httpx.URL("http://h/" + segment.removesuffix(verb)).path == "/" + model


@pytest.mark.parametrize(("preset", "changes", "prefix", "verb"), CASES)
def test_ordinary_model_ids_are_unchanged(preset: str, changes: dict[str, str], prefix: str,
                                          verb: str) -> None:
    for model in ("gemini-3-pro-preview", "claude-sonnet-4-5@20250929"):
        url = _url(preset, model, stream=False, **changes)
        assert url.raw_path.decode() == prefix + model + verb
    streamed = _url(preset, "gemini-3-pro-preview", stream=True, **changes)
    assert streamed.raw_path.decode().startswith(prefix + "gemini-3-pro-preview:stream")
