"""Transport edges (issue 47 item 1), at the wire against loopback emulators:

- SigV4 with temporary credentials: with ``AWS_SESSION_TOKEN`` set the request carries
  ``X-Amz-Security-Token`` and signs it (it is in ``SignedHeaders``; the emulator recomputes the
  signature over what arrived), without one the header is absent
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-add-signature-to-request.html:
  "If you are using temporary security credentials, ... add X-Amz-Security-Token").
- A ``Retry-After`` above the backoff cap waits the cap, not the header's value (seconds or an
  HTTP date, https://www.rfc-editor.org/rfc/rfc9110#field.retry-after); what was waited is
  recorded through the transport's sleep seam, nothing waits for real.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from pathlib import Path

import pytest

from bedrock.aws_env import KEYS, fake_aws
from fallback_e2e.fallback_e2e_support import create, send, store_at
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.testing import ChatEmulator
from thoughtline.testing.bedrock_emulator import BedrockEmulator
from thoughtline.transport import http as http_module
from thoughtline.transport.http import HttpTransport, Target, TransportConfig

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE//session/token/for/the/emulator=="


@pytest.mark.parametrize("token", [TOKEN, ""], ids=["temporary", "long-term"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_session_token_is_sent_and_signed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            token: str, stream: bool) -> None:
    fake_aws(monkeypatch)
    if token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", token)
    with BedrockEmulator(region="us-east-1", credentials=KEYS) as emu:
        provider = ProviderConfig(id="bedrock", api="bedrock", base_url=emu.endpoint_url,
                                  model=CLAUDE, auth="sigv4:bedrock", region="us-east-1")
        outcome = send(create(store_at(tmp_path), provider), "hi", stream=stream)
        (received,) = emu.received
    assert isinstance(outcome.done, Done), outcome
    assert received.status == 200  # the signature, recomputed over what arrived, holds
    signed = received.headers["authorization"].split("SignedHeaders=")[1].split(",")[0]
    if token:
        assert received.headers.get("x-amz-security-token") == token
        assert "x-amz-security-token" in signed.split(";")
    else:
        assert "x-amz-security-token" not in received.headers
        assert "x-amz-security-token" not in signed


def _slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float) -> None:
        slept.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(http_module, "_sleep", recording_sleep)
    return slept


def _post_after(retry_after: str, cap: float) -> tuple[list[int], list[str]]:
    """One request answered 429 with ``retry_after``, then retried: (statuses, what was said)."""
    said: list[str] = []
    with ChatEmulator("deepseek", require_auth=False) as emu:
        emu.fail_next(429, headers={"retry-after": retry_after})
        transport = HttpTransport(TransportConfig(max_retries=1, backoff_cap=cap),
                                  on_wait=said.append)
        body = b'{"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "x"}]}'

        async def go() -> None:
            try:
                await transport.post_json(Target(url=f"{emu.base_url}/chat/completions",
                                                 provider="deepseek"), body)
            finally:
                await transport.aclose()

        asyncio.run(go())
        return [r.status for r in emu.received], said


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_a_retry_after_above_the_cap_waits_the_cap(monkeypatch: pytest.MonkeyPatch,
                                                   form: str) -> None:
    slept = _slept(monkeypatch)
    value = "3600" if form == "seconds" else email.utils.formatdate(time.time() + 3600,
                                                                    usegmt=True)
    statuses, said = _post_after(value, cap=3.0)
    assert statuses == [429, 200]
    assert sum(slept) == pytest.approx(3.0)  # the cap, not an hour
    assert said and "retrying in 3 s" in said[0]


def test_a_retry_after_below_the_cap_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    slept = _slept(monkeypatch)
    statuses, _ = _post_after("2.5", cap=20.0)
    assert statuses == [429, 200]
    assert sum(slept) == pytest.approx(2.5)
