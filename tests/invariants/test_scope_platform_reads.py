"""A Claude cross-model read that holds on one platform only, checked both ways at the wire.

Fable 5.1 reads thinking blocks Opus 5 made on every platform, and blocks Opus 5.5 made only on
the Claude API (``reads(..., claude_api=...)`` in ``codecs/anthropic/models.py``). Seeded mutant
M131 (issue 47) drops the platform condition and survived every other test: only the Claude
API's half of the rule was ever encoded. Each case below reads the request bytes.
"""

from __future__ import annotations

import pytest

from thoughtline import replay
from thoughtline.codecs.anthropic import CODEC as ANTHROPIC
from thoughtline.codecs.base import RequestSpec
from thoughtline.messages import Message, Origin, Reasoning, Text, user

FABLE = "claude-fable-5-1"
#: (route preset, base URL) of each platform an Anthropic-format route reaches.
PLATFORMS = {
    "claude-api": ("anthropic", None),
    "vertex": ("vertex-anthropic",
               "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5"),
    "bedrock": ("bedrock-anthropic", None),
    "foundry": ("foundry-anthropic", "https://tl-test.services.ai.azure.com/anthropic"),
}


def _body(platform: str, made_by: str) -> tuple[bytes, bytes]:
    """The Fable request on ``platform`` after a turn ``made_by`` made there; its signature."""
    provider, base = PLATFORMS[platform]
    route = ANTHROPIC.resolve(provider, base, FABLE)
    assert route.profile.platform == platform.replace("claude-api", "anthropic")
    plan = replay.plan(route)
    assert plan.target is not None
    made = Origin(api="anthropic", provider=plan.target.provider, host=plan.target.host,
                  model=made_by)
    signature = f"sig-{made_by}-on-{platform}"
    thought = Reasoning(kind="signed", text="thought", signature=signature, origin=made)
    turn = Message(role="assistant", parts=(thought, Text(text="answer")), origin=made)
    raw = ANTHROPIC.encode_request([user("q"), turn, user("again")], plan,
                                   RequestSpec(model=FABLE)).raw
    return raw, signature.encode()


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_fable_reads_an_opus_5_5_block_on_the_claude_api_only(platform: str) -> None:
    raw, signature = _body(platform, "claude-opus-5-5")
    assert (signature in raw) is (platform == "claude-api")


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_fable_reads_an_opus_5_block_on_every_platform(platform: str) -> None:
    # The other half: the platform condition narrows the Opus 5.5 read only.
    raw, signature = _body(platform, "claude-opus-5")
    assert signature in raw
