"""Issue 23 item 4: the upstream's key is redacted from the whole text before anything cuts it,
and a start of the key (8 characters or more) is redacted like the key itself. A key shorter
than that is no real key: it is redacted where it stands alone, never inside other words (a key
of one letter replaced every such letter of an error message)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from gateway_support import MODEL, UPSTREAM_KEY, running_gateway
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from test_gateway_transport import ask, gateway, upstream_toml

from thoughtline.testing import ChatEmulator
from thoughtline.testing.loopback import LoopbackServer
from thoughtline.transport.redact import MIN_PREFIX, cut, redact

KEY = "sk-proj-" + "Q7v2Lm9XcA4tR8pZ" * 2 + "k3Jd6Wq1"  # 48 characters, as in the issue


def leaked(text: str, key: str) -> str:
    """The longest start of ``key`` (MIN_PREFIX characters or more) found in ``text``."""
    return max((key[:n] for n in range(MIN_PREFIX, len(key) + 1) if key[:n] in text),
               key=len, default="")


@pytest.mark.parametrize("before", range(480, 500))
def test_a_key_straddling_the_cut_is_redacted_before_cutting(before: int) -> None:
    text = "x" * before + KEY + " and more"
    shown = cut(text, [KEY], 500)
    assert leaked(shown, KEY) == ""
    assert shown.startswith("x" * before)


def test_starts_of_the_key_are_redacted_shorter_ones_and_other_text_kept() -> None:
    cut_short = f"key {KEY[:30]}"  # a provider's own truncation of the key
    assert redact(cut_short, [KEY]) == "key ***"
    assert redact(f"{KEY} then {KEY[:MIN_PREFIX]}!", [KEY]) == "*** then ***!"
    assert redact(f"short {KEY[:MIN_PREFIX - 1]}", [KEY]) == f"short {KEY[:MIN_PREFIX - 1]}"
    assert redact("nothing secret here", [KEY, ""]) == "nothing secret here"


@pytest.mark.parametrize("key", ["e", "r", "ab", "k3y!", "1234567"])
def test_a_short_key_is_redacted_where_it_stands_alone_and_nothing_else_is_touched(
        key: str) -> None:
    text = "the upstream reported an error: rate limit exceeded (try 1234567890 later)"
    assert redact(text, [key]) == text
    for quoted in ("bad key {}", "x-api-key: {}", "Bearer {}\n", "?key={}&alt=sse",
                   '{{"api_key":"{}"}}', "{}", "({})"):
        assert redact(quoted.format(key), [key]) == quoted.format("***"), quoted


def test_a_key_of_min_prefix_characters_or_more_is_redacted_anywhere() -> None:
    key = KEY[:MIN_PREFIX]
    assert redact(f"token{key}tail", [key]) == "token***tail"


@pytest.mark.parametrize("stream", [False, True])
def test_a_one_letter_key_leaves_the_error_message_readable(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_GATEWAY_TEST_UPSTREAM_KEY", "e")
    said = "Rate limit exceeded for the key e; see the error page"
    deepseek.fail_next(400, said)
    with running_gateway(deepseek, tmp_path) as gw:
        answer = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
            "model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "Rate limit exceeded for the key ***; see the error page" in message, message


@pytest.mark.parametrize("stream", [False, True])
def test_an_error_body_cut_inside_the_key_reaches_the_client_without_it(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    # A non-object JSON body is shown as text, cut at 500 characters; the key straddles it.
    deepseek.fail_next(400, "x" * 480 + UPSTREAM_KEY + " echoed")
    with running_gateway(deepseek, tmp_path) as gw:
        answer = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
            "model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert "xxxx" in message and "***" in message
    assert leaked(message, UPSTREAM_KEY) == ""


def test_a_non_json_answer_cut_inside_the_key_reaches_the_client_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TL_GATEWAY_TEST_UPSTREAM_KEY", KEY)

    async def echo(request: Request) -> Response:  # shown in a message cut at 200 characters
        return Response("y" * 180 + KEY, media_type="text/plain")

    upstream = LoopbackServer(Starlette(routes=[Route("/v1/chat/completions", echo,
                                                      methods=["POST"])])).start()
    try:
        with gateway(upstream_toml("ds", upstream.origin + "/v1"), tmp_path) as (_, url):
            answer = ask(url, "ds/m")
    finally:
        upstream.stop()
    assert answer.status_code == 502
    message = answer.json()["error"]["message"]
    assert "yyyy" in message and leaked(message, KEY) == ""
