"""Fixtures for the inspector: a home made by the demo, the app served on loopback, a real
headless Chromium driven through chromedriver (selenium).

The demo runs once per module as a subprocess of the real entry point (``thoughtline demo
--keep``). Then a few sessions the demo does not make are added through the store's public API: a
payload full of markup and terminal control characters, a branch, a compacted session, a session
compacted after a branch was made from it, and a gateway tenant's session. Chromium missing is a
failure, never a skip: ``scripts/test-services`` installs it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import CHROMEDRIVER, CHROMIUM, GATEWAY_TOKEN, HOSTILE, DemoHome, Served

from thoughtline.gateway.tenancy import tenant_id
from thoughtline.messages import Message, Origin, Reasoning, Text, ToolCall, ToolResult
from thoughtline.requestlog import RequestLog
from thoughtline.store import encode_message, open_store
from thoughtline.ui.app import Inspector


def _run_demo(home: Path) -> None:
    env = {**os.environ, "THOUGHTLINE_HOME": str(home), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "thoughtline.cli.main", "--home", str(home),
                           "demo", "--keep"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def _extra_sessions(home: Path, ids: dict[str, str]) -> None:
    origin = Origin(api="anthropic", provider="anthropic", host="127.0.0.1", model="m")
    store = open_store(None, home)
    try:
        hostile = store.import_session(
            title=f"hostile {HOSTILE}",
            model_config={"provider": {"id": "custom", "model": "evil-model"}},
            messages=[Message(role="user", parts=(Text(text=HOSTILE),)),
                      Message(role="assistant", origin=origin, parts=(
                          Reasoning(kind="text", text=f"thinking {HOSTILE}", origin=origin),
                          ToolCall(id="call_1", name="run", arguments=HOSTILE))),
                      Message(role="tool", parts=(ToolResult(call_id="call_1",
                                                             content=HOSTILE),))])
        ids["hostile"] = hostile.id
        deepseek = ids["demo: deepseek (must-echo)"]
        ids["branch"] = store.branch(deepseek, at=4, title="what if: colder").id
        compacted = ids["demo: kimi (must-echo, keep)"]
        loaded = store.load_history(compacted)
        kept = [m.message for m in loaded.messages][-4:]
        store.replace_history(compacted, [Message(role="user", parts=(Text(text="summary"),)),
                                          *kept],
                              note={"ended_by": "compaction", "turns_after": 5,
                                    "tokens_before": 900, "tokens_after": 300})
        ids["compacted"] = compacted
        # Six turns, a branch at turn 2, then a compaction keeping the last 2 turns.
        six = store.import_session(
            title="six turns", model_config={"provider": {"id": "deepseek", "model": "ds"}},
            messages=[Message(role="user" if i % 2 == 0 else "assistant",
                              parts=(Text(text=f"turn {i} of six"),)) for i in range(6)])
        ids["six"] = six.id
        ids["early branch"] = store.branch(six.id, at=2, title="branched early").id
        tail = [m.message for m in store.load_history(six.id).messages][-2:]
        store.replace_history(six.id, [Message(role="user", parts=(Text(text="summary"),)),
                                       *tail],
                              note={"ended_by": "compaction", "turns_after": 3,
                                    "tokens_before": 60, "tokens_after": 30})
        tenant = store.create_session(title="gateway conversation", tenant=tenant_id(
            GATEWAY_TOKEN), model_config={"provider": {"id": "deepseek", "model": "ds"}})
        store.append(tenant.id, [Message(role="user", parts=(Text(text="hi from a client"),))])
        ids["tenant"] = tenant.id
        damaged = store.import_session(
            title="damaged", model_config={"provider": {"id": "deepseek", "model": "ds"}},
            messages=[Message(role="user", parts=(Text(text="first question"),)),
                      Message(role="assistant", origin=origin, parts=(Text(text="lost"),)),
                      Message(role="user", parts=(Text(text="second question"),))])
        ids["damaged"] = damaged.id
        broken = encode_message(store.load_history(damaged.id).messages[1].message).id
    finally:
        store.close()
    with sqlite3.connect(home / "state.db") as conn:  # the row's bytes no longer decode
        conn.execute("UPDATE messages SET skeleton = ? WHERE digest = ?", (b"{garbage", broken))
    # A provider report about one of the signed session's requests (e.g. thinking dropped).
    RequestLog(home / "logs").write({
        "session": ids["demo: anthropic (signed thinking)"], "route": "default",
        "api": "anthropic", "provider": "anthropic", "host": "127.0.0.1",
        "model": "claude-opus-4-5", "status": 200, "outcome": "ok", "attempt": 1,
        "stream": False, "duration_ms": 3.0, "retries": 0, "assistant_turns": 6,
        "carriers": {}, "pads": 0, "native": {}, "body_extras": [], "verdicts": [],
        "prompt_tokens": 700,
        "reports": [{"type": "thinking_dropped", "path": "messages[1]", "reason": HOSTILE}]})
    # One request after the compaction, so the chart has a request on each side of it.
    RequestLog(home / "logs").write({
        "session": compacted, "route": "default", "api": "openai-chat", "provider": "kimi",
        "host": "127.0.0.1", "model": "kimi-k2.6", "status": 200, "outcome": "ok",
        "attempt": 1, "stream": True, "duration_ms": 12.5, "retries": 0,
        "assistant_turns": 2, "carriers": {"reasoning_content": 2}, "pads": 0, "native": {},
        "body_extras": [], "verdicts": [], "prompt_tokens": 120})


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> DemoHome:
    home = tmp_path_factory.mktemp("ui-home")
    _run_demo(home)
    store = open_store(None, home)
    try:
        ids = {r.title: r.id for r in store.list_sessions()}
    finally:
        store.close()
    _extra_sessions(home, ids)
    return DemoHome(home=home, ids=ids)


@pytest.fixture(scope="module")
def served(demo_home: DemoHome) -> Iterator[Served]:
    store = open_store(None, demo_home.home)
    running = Served(Inspector(store=store, logs=demo_home.home / "logs"))
    try:
        yield running
    finally:
        running.stop()
        store.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, quiet on a machine without network, with a fresh profile."""
    assert Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists(), (
        "the browser tests need Debian's chromium and chromium-driver: "
        "apt-get install -y chromium chromium-driver (scripts/test-services does this)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="thoughtline-ui-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
