"""A failed tool result stays a failure on every later request, also after the session is
resumed from ``state.db`` (issue 47 item 1): through ``Session`` against the loopback Bedrock
emulator, read from the bytes it received (Converse's ``toolResult.status``,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolResultBlock.html)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from bedrock.aws_env import KEYS, fake_aws
from fallback_e2e.fallback_e2e_support import LOOKUP, create, resume, send, store_at
from thoughtline.config import ProviderConfig
from thoughtline.messages import ToolResult
from thoughtline.testing.bedrock_emulator import BedrockEmulator

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
OTHER = "us.anthropic.claude-opus-4-5-20251101-v1:0"
FAILED = "lookup failed: upstream weather service timed out"


@pytest.fixture
def emu(monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockEmulator]:
    fake_aws(monkeypatch)
    with BedrockEmulator(region="us-east-1", credentials=KEYS) as emulator:
        yield emulator


def _statuses(raw: bytes) -> list[tuple[str, str]]:
    """(text, status) of every toolResult in a request body, in order."""
    body: Any = orjson.loads(raw)
    return [(b["toolResult"]["content"][0]["text"], b["toolResult"]["status"])
            for m in body["messages"] for b in m["content"] if "toolResult" in b]


def test_a_failed_result_goes_as_status_error_on_every_later_request_and_after_resume(
        emu: BedrockEmulator, tmp_path: Path) -> None:
    store = store_at(tmp_path / "home")
    provider = ProviderConfig(id="bedrock", api="bedrock", base_url=emu.endpoint_url,
                              model=CLAUDE, auth="sigv4:bedrock", region="us-east-1")
    session = create(store, provider, tools=[LOOKUP])
    assert send(session, "What's the weather in Oslo?").error is None
    [first] = session.history[-1].tool_calls
    assert send(session, [ToolResult(call_id=first.id, content=FAILED, is_error=True)],
                stream=False).error is None
    assert send(session, "And in Rome?").error is None
    [second] = session.history[-1].tool_calls
    assert send(session, [ToolResult(call_id=second.id, content="rain, 14 C")]).error is None
    expected = [(FAILED, "error"), ("rain, 14 C", "success")]
    assert _statuses(emu.received[-1].raw) == expected

    again = resume(store, session.id)  # a new process would do the same: read state.db
    assert send(again, "Thanks. Tomorrow?").error is None
    assert _statuses(emu.received[-1].raw) == expected
    calls = again.history[-1].tool_calls  # the model may look the weather up again
    if calls:
        assert send(again, [ToolResult(call_id=c.id, content="sunny") for c in calls]).error \
            is None
        expected += [("sunny", "success")] * len(calls)
    # Another model: no stored wire form fits its plan, so the turns are encoded afresh from the
    # stored messages, and the flag must have been stored with them.
    again.set_provider(replace(provider, model=OTHER))
    assert send(again, "And the day after?").error is None
    assert _statuses(emu.received[-1].raw) == expected
    assert all(r.status == 200 for r in emu.received)
