"""The inspector on what a new user trips on (issue 46 item 7), in a real headless Chromium: the
search box shows control characters escaped, compaction requests are labelled (and in ``logs``),
a long session is paged, and the model that answered last is shown after a switch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from ui_support import DemoHome, Served

from thoughtline.messages import Message, Origin, Reasoning, Text
from thoughtline.store import open_store
from thoughtline.ui.pages import TURNS_PAGE


def _open(browser: Any, url: str, shot: Path) -> None:
    browser.get(url)
    WebDriverWait(browser, 10).until(
        lambda b: b.execute_script("return document.readyState") == "complete")
    browser.save_screenshot(str(shot))


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "THOUGHTLINE_HOME": str(home), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "thoughtline.cli.main", "--home", str(home),
                           *args], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done


def _import(home: Path, title: str, model: str, messages: list[Message]) -> str:
    store = open_store(None, home)
    try:
        return store.import_session(title=title, messages=messages, model_config={
            "provider": {"id": "deepseek", "model": model}}).id
    finally:
        store.close()


def _answer(model: str, text: str) -> Message:
    origin = Origin(api="openai-chat", provider="deepseek", host="127.0.0.1", model=model)
    return Message(role="assistant", origin=origin, parts=(
        Reasoning(kind="text", text=f"thinking {text}", origin=origin), Text(text=text)))


def test_the_search_box_shows_control_characters_escaped(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    query = quote("hostile \x1b[31mred")
    _open(browser, f"{served.url}/?q={query}", tmp_path / "search.png")
    box = browser.find_element(By.NAME, "q")
    assert box.get_attribute("value") == "hostile \\x1b[31mred"
    assert "\x1b" not in browser.page_source
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#sessions tbody td a")]
    assert len(titles) == 1 and titles[0].startswith("hostile ")
    # Searched again as shown (the escape typed as text), it still finds the session.
    box.submit()
    WebDriverWait(browser, 10).until(lambda b: "%5Cx1b" in b.current_url)
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#sessions tbody td a")]
    assert len(titles) == 1 and titles[0].startswith("hostile ")
    assert "\x1b" not in browser.page_source


def test_a_long_session_is_paged(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    messages: list[Message] = []
    for i in range(250):
        messages += [Message(role="user", parts=(Text(text=f"question {i}"),)),
                     _answer("ds", f"answer {i}")]
    long = _import(demo_home.home, "five hundred turns", "ds", messages)
    _open(browser, f"{served.url}/sessions/{long}", tmp_path / "long.png")
    turns = browser.find_elements(By.CSS_SELECTOR, "#turns article.turn")
    assert len(turns) == TURNS_PAGE < 500
    assert browser.find_elements(By.ID, "turn-0") and not browser.find_elements(
        By.ID, f"turn-{TURNS_PAGE}")
    pager = browser.find_element(By.ID, "turn-pager-top")
    assert f"turns 0–{TURNS_PAGE - 1} of 500" in pager.text
    pager.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
    WebDriverWait(browser, 10).until(lambda b: "page=2" in b.current_url)
    assert browser.find_elements(By.ID, f"turn-{TURNS_PAGE}")
    assert not browser.find_elements(By.ID, "turn-0")
    _open(browser, f"{served.url}/sessions/{long}?page=99", tmp_path / "long-last.png")
    assert browser.find_elements(By.ID, "turn-499")  # past the end: the last page


def test_the_model_that_answered_last_is_shown_after_a_switch(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    # As the gateway stores it: the config keeps the first request's model, the client switched.
    switched = _import(demo_home.home, "switched models", "model-first", [
        Message(role="user", parts=(Text(text="one"),)), _answer("model-first", "1"),
        Message(role="user", parts=(Text(text="two"),)), _answer("model-second", "2")])
    _open(browser, f"{served.url}/sessions/{switched}", tmp_path / "switched.png")
    assert browser.find_element(By.ID, "answered-by").text == "model-second"
    models = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "article.turn .model")]
    assert models == ["model-first", "model-second"]


def test_compaction_requests_are_labelled_in_the_view_and_in_logs(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    # Last in this module: the compaction changes a session the other tests do not read.
    title = "demo: cerebras (reasoning only)"
    _cli(demo_home.home, "sessions", "compact", title, "--keep", "1")
    session = demo_home.ids[title]
    _open(browser, f"{served.url}/sessions/{session}/requests", tmp_path / "requests.png")
    rows = browser.find_elements(By.CSS_SELECTOR, "#requests tbody tr")
    labelled = [r for r in rows if r.find_elements(By.CSS_SELECTOR, ".tag.purpose")]
    assert len(labelled) == 1 and labelled[0] == rows[-1]
    assert "compaction request" in labelled[0].text
    assert all("compaction request" not in r.text for r in rows[:-1])
    lines = _cli(demo_home.home, "logs", "--session", session).stdout.splitlines()
    assert "(compaction request" in lines[-1]
    assert not any("compaction request" in line for line in lines[:-1])
