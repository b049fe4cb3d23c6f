"""The gateway's logs (issue 23, items 8 and 12): a request log that cannot be written never fails
a request, a refused request is never logged as "ok", and stderr carries JSON lines only (the
start and stop banners are on stdout)."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
from gateway_support import (
    MODEL,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    gateway_toml,
    running_gateway,
    start_serve,
)

from thoughtline.testing import ChatEmulator

TOKEN = "token-logs-5b1d"
HELLO = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}


def _post(base_url: str, body: dict[str, object] | bytes, token: str = TOKEN) -> httpx.Response:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return httpx.post(base_url + "/chat/completions", content=raw, timeout=30,
                      headers={"content-type": "application/json",
                               "authorization": f"Bearer {token}"})


def _lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_an_unwritable_request_log_never_fails_a_request(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the log directory should be")
    access = tmp_path / "access.jsonl"
    with running_gateway(deepseek, tmp_path, tokens=[TOKEN], access_log=str(access),
                         logs=blocker / "logs") as gw:
        whole = _post(gw.base_url, HELLO)
        streamed = _post(gw.base_url, {**HELLO, "stream": True})
        assert whole.status_code == 200, whole.text
        assert whole.json()["choices"][0]["message"]["content"]
        assert streamed.status_code == 200
        assert b"data: [DONE]" in streamed.content and b'"error"' not in streamed.content
        stored = [gw.store.load_history(r.id).messages for r in gw.store.list_sessions()]
    assert sorted(len(m) for m in stored) == [2, 2]  # both turns stored, as answered
    records = _lines(access)
    problems = [r for r in records if r.get("event") == "request_log_error"]
    assert len(problems) == 1  # said once, not once per request
    assert str(blocker / "logs") in str(problems[0]["error"])
    assert [r["outcome"] for r in records if "status" in r] == ["ok", "ok"]


def test_refused_requests_are_never_logged_as_ok(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    access = tmp_path / "access.jsonl"
    with running_gateway(deepseek, tmp_path, tokens=[TOKEN], access_log=str(access),
                         max_body=2048) as gw:
        models = httpx.get(gw.base_url + "/models", timeout=30,
                           headers={"authorization": "Bearer wrong"})
        unauthorized = _post(gw.base_url, HELLO, token="wrong")
        bad_json = _post(gw.base_url, b"{not json")
        unknown = _post(gw.base_url, {**HELLO, "model": "nowhere/model"})
        too_large = _post(gw.base_url, {**HELLO, "messages": [
            {"role": "user", "content": "x" * 4096}]})
        fine = _post(gw.base_url, HELLO)
    statuses = [r.status_code for r in (models, unauthorized, bad_json, unknown, too_large, fine)]
    assert statuses == [401, 401, 400, 404, 413, 200]
    records = _lines(access)
    assert [(r["status"], r["outcome"]) for r in records] == [
        (401, "refused"), (401, "refused"), (400, "refused"), (404, "refused"),
        (413, "refused"), (200, "ok")]
    assert records[2]["error"] == "invalid_request_error"
    assert len(deepseek.received) == 1


def test_stderr_carries_only_json_lines_and_the_banners_go_to_stdout(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(gateway_toml(deepseek))
    env = {UPSTREAM_KEY_ENV: UPSTREAM_KEY, "TL_GATEWAY_TEST_TOKENS": TOKEN}
    serve = start_serve(config, tmp_path / "home", env)
    try:
        assert _post(serve.base_url, HELLO).status_code == 200
        assert _post(serve.base_url, HELLO, token="wrong").status_code == 401
        assert serve.terminate() == 0
    finally:
        if serve.process.poll() is None:
            serve.kill()
    records = [orjson.loads(line) for line in serve.stderr]  # every line is JSON
    assert [(r["status"], r["outcome"]) for r in records] == [(200, "ok"), (401, "refused")]
    banners = "".join(serve.stdout)
    assert "thoughtline gateway listening on http://127.0.0.1:" in banners
    assert "thoughtline gateway stopped" in banners
