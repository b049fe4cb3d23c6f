"""Who may look, and what the pages are built from (no browser: through the app's HTTP face).

Without tokens the inspector answers only requests addressed to a loopback name and shows every
session; with tokens every request needs one (Bearer, or Basic with the token as password) and
sees only its tenant's sessions. Listing is searchable and paginated; the chart's geometry marks
compactions and the context window.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from thoughtline.gateway.tenancy import tenant_id
from thoughtline.messages import Message, Text
from thoughtline.requestlog import RequestLog
from thoughtline.store import Store, open_store
from thoughtline.ui import pages
from thoughtline.ui import requests as request_view
from thoughtline.ui.app import Inspector, create_app

TOKEN_A, TOKEN_B = "token-a-secret", "token-b-secret"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(None, tmp_path)
    try:
        yield opened
    finally:
        opened.close()


def _session(store: Store, title: str, *, tenant: str = "", provider: str = "deepseek",
             model: str = "deepseek-reasoner") -> str:
    record = store.create_session(title=title, tenant=tenant, model_config={
        "provider": {"id": provider, "model": model}})
    store.append(record.id, [Message(role="user", parts=(Text(text=f"hello {title}"),))])
    return record.id


def _client(store: Store, tmp_path: Path, tokens: tuple[str, ...] = (),
            host: str = "127.0.0.1:8788") -> TestClient:
    app = create_app(Inspector(store=store, logs=tmp_path / "logs", tokens=tokens))
    return TestClient(app, base_url=f"http://{host}")


def test_without_tokens_only_loopback_names_are_answered(store: Store, tmp_path: Path) -> None:
    _session(store, "mine")
    for host in ("127.0.0.1:8788", "localhost:8788", "[::1]:8788"):
        page = _client(store, tmp_path, host=host).get("/")
        assert page.status_code == 200 and "mine" in page.text
    # A page elsewhere pointing its own name at 127.0.0.1 (DNS rebinding) gets nothing.
    refused = _client(store, tmp_path, host="attacker.example:8788").get("/")
    assert refused.status_code == 421 and "mine" not in refused.text


def test_pages_carry_a_content_security_policy(store: Store, tmp_path: Path) -> None:
    sid = _session(store, "mine")
    page = _client(store, tmp_path).get(f"/sessions/{sid}")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert _client(store, tmp_path).get("/static/ui.js").status_code == 200
    assert _client(store, tmp_path).get("/static/..%2Fapp.py").status_code == 404


def test_with_tokens_each_tenant_sees_only_its_sessions(store: Store, tmp_path: Path) -> None:
    _session(store, "local cli session")
    own = _session(store, "tenant a session", tenant=tenant_id(TOKEN_A))
    other = _session(store, "tenant b session", tenant=tenant_id(TOKEN_B))
    client = _client(store, tmp_path, tokens=(TOKEN_A, TOKEN_B), host="0.0.0.0:8788")

    denied = client.get("/")
    assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Basic")
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401

    listing = client.get("/", headers={"Authorization": f"Bearer {TOKEN_A}"})
    assert "tenant a session" in listing.text
    assert "tenant b session" not in listing.text and "local cli session" not in listing.text
    assert tenant_id(TOKEN_A) in listing.text and TOKEN_A not in listing.text

    basic = "Basic " + base64.b64encode(f"anyone:{TOKEN_A}".encode()).decode()
    assert client.get(f"/sessions/{own}", headers={"Authorization": basic}).status_code == 200
    assert client.get(f"/sessions/{other}", headers={"Authorization": basic}).status_code == 404
    assert client.get(f"/sessions/{other}/requests",
                      headers={"Authorization": basic}).status_code == 404


def test_cli_refuses_a_public_address_without_tokens(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "THOUGHTLINE_GATEWAY_TOKENS"}
    done = subprocess.run([sys.executable, "-m", "thoughtline.cli.main", "--home",
                           str(tmp_path), "ui", "--host", "0.0.0.0", "--port", "0"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "refusing to show sessions on 0.0.0.0" in done.stderr


def test_search_and_pages(store: Store) -> None:
    for n in range(pages.PAGE_SIZE + 5):
        _session(store, f"chat {n}")
    _session(store, "other route", provider="mistral", model="magistral-medium-latest")
    first = pages.list_page(store, tenant=None, query="", page=1)
    assert (first.total, first.pages, len(first.rows)) == (pages.PAGE_SIZE + 6, 2, 25)
    assert first.rows[0]["title"] == "other route"  # newest first
    second = pages.list_page(store, tenant=None, query="", page=2)
    assert len(second.rows) == 6 and second.rows[-1]["title"] == "chat 0"
    assert [r["title"] for r in pages.list_page(store, tenant=None, query="MAGISTRAL",
                                                page=1).rows] == ["other route"]
    assert pages.list_page(store, tenant=None, query="magistral", page=9).page == 1


def test_chart_marks_compactions_and_a_window_in_scale() -> None:
    records = [{"time": 10.0 + i, "prompt_tokens": t} for i, t in enumerate((400, 800, 300))]
    records.insert(2, {"time": 11.5})  # a request that reported no tokens
    chart = request_view.chart(records, compactions=[11.8], window=1000)
    assert [p["request"] for p in chart["points"]] == [1, 2, 4]
    assert chart["missing"] == 1
    assert [line.count(",") for line in chart["lines"]] == [2, 1]  # not drawn across the gap
    assert chart["window_y"] is not None and chart["window_y"] < min(
        p["y"] for p in chart["points"])  # above every point (SVG y grows downwards)
    [mark] = chart["compactions"]
    assert mark["request"] == 4
    xs = {p["request"]: p["x"] for p in chart["points"]}
    assert xs[2] < mark["x"] < xs[4]
    huge = request_view.chart(records, compactions=[], window=1_000_000)
    assert huge["window_y"] is None and huge["window"] == 1_000_000


def test_reads_a_postgresql_store(tmp_path: Path) -> None:
    import psycopg

    server = os.environ.get("THOUGHTLINE_TEST_DATABASE_URL",
                            "postgresql://postgres@127.0.0.1:5432/test")
    schema = f"tl_ui_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            sep = "&" if "?" in server else "?"
            store = open_store(f"{server}{sep}options=-csearch_path%3D{schema}", tmp_path)
            try:
                sid = _session(store, "on postgres", tenant=tenant_id(TOKEN_A))
                client = _client(store, tmp_path)
                assert tenant_id(TOKEN_A) in client.get("/").text
                page = client.get(f"/sessions/{sid}")
                assert page.status_code == 200 and "hello on postgres" in page.text
            finally:
                store.close()
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_odd_stored_fields_are_shown_not_crashed_on(store: Store, tmp_path: Path) -> None:
    record = store.create_session(title="odd", model_config={
        "provider": "not a table", "verdicts": [{"drop": 5, "provider": 1}, "not a verdict"],
        "fingerprints": 7})
    RequestLog(tmp_path / "logs").write({
        "session": record.id, "route": "default", "status": 400, "outcome": "error",
        "verdicts": [{"drop": "abc", "reason": "<b>bold</b>"}], "repairs": 5,
        "reports": "a string", "carriers": {"reasoning_content": 1}})
    client = _client(store, tmp_path)
    page = client.get(f"/sessions/{record.id}")
    assert page.status_code == 200 and "no learned verdicts" not in page.text
    assert "1 @ - / ?: no change" in page.text
    requests = client.get(f"/sessions/{record.id}/requests")
    assert requests.status_code == 200
    assert "learned: ? @ - / ?: no change (&lt;b&gt;bold&lt;/b&gt;)" in requests.text
    assert "reasoning_content ×1" in requests.text


def test_cli_serves_the_pages_and_opens_a_browser(tmp_path: Path) -> None:
    import httpx

    home = tmp_path / "home"
    store = open_store(None, home)
    try:
        sid = _session(store, "served by the cli")
    finally:
        store.close()
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if k != "THOUGHTLINE_GATEWAY_TOKENS"},
           "BROWSER": f"{browser} %s"}
    proc = subprocess.Popen([sys.executable, "-m", "thoughtline.cli.main", "--home", str(home),
                             "ui", "--port", "0", "--open"], env=env, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the announce line (bounded by the suite's timeout)
        assert line.startswith("thoughtline ui on http://127.0.0.1:"), line
        url = line.split()[3]
        page = httpx.get(f"{url}sessions/{sid}", timeout=10)
        assert page.status_code == 200 and "hello served by the cli" in page.text
        for _ in range(200):  # the browser is started in the background
            if opened.exists() and opened.read_text():
                break
            time.sleep(0.05)
        assert opened.read_text() == url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_gateway_session_is_shown_under_its_tenant(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from thoughtline.gateway.app import Gateway
    from thoughtline.gateway.app import create_app as gateway_app
    from thoughtline.gateway.config import parse
    from thoughtline.testing import ChatEmulator
    from thoughtline.testing.loopback import LoopbackServer

    monkeypatch.setenv("TL_UI_TEST_UPSTREAM_KEY", "sk-upstream-test")
    store = open_store(None, tmp_path)
    try:
        with ChatEmulator("deepseek") as emu:
            config = parse({"server": {"tokens_env": "TL_UI_TEST_TOKENS"}, "upstream": [{
                "name": "ds", "provider": "deepseek", "base_url": emu.base_url,
                "api_key_env": "TL_UI_TEST_UPSTREAM_KEY", "models": ["deepseek-v4-pro"]}]})
            gateway = Gateway(config, store, environ={"TL_UI_TEST_TOKENS": TOKEN_A},
                              request_log=RequestLog(tmp_path / "logs"))
            server = LoopbackServer(gateway_app(gateway), name="gateway").start()
            try:
                reply = httpx.post(f"{server.origin}/v1/chat/completions", timeout=30,
                                   headers={"Authorization": f"Bearer {TOKEN_A}"},
                                   json={"model": "ds/deepseek-v4-pro", "messages": [
                                       {"role": "user", "content": "hello from a client"}]})
            finally:
                server.stop()
        assert reply.status_code == 200, reply.text
        sid = reply.headers["x-thoughtline-session"]
        client = _client(store, tmp_path)  # local, no tokens: every session, tenant labelled
        listing = client.get("/").text
        assert tenant_id(TOKEN_A) in listing and TOKEN_A not in listing
        page = client.get(f"/sessions/{sid}").text
        assert "hello from a client" in page and 'class="reasoning"' in page
        assert f'<span class="mono tenant">{tenant_id(TOKEN_A)}</span>' in page
        requests = client.get(f"/sessions/{sid}/requests").text
        assert 'id="request-1"' in requests and "sk-upstream-test" not in requests
    finally:
        store.close()


def test_an_unknown_session_is_a_404_page_with_the_name_escaped(
        store: Store, tmp_path: Path) -> None:
    client = _client(store, tmp_path)
    page = client.get("/sessions/%3Cb%3Eno%1Bsuch%3C%5Cb%3E")
    assert page.status_code == 404
    assert "&lt;b&gt;no\\x1bsuch&lt;" in page.text and "<b>" not in page.text
    assert client.get("/sessions/%3Cb%3E/requests").status_code == 404
