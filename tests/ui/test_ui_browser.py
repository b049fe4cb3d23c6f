"""The inspector in a real headless Chromium: what a person sees on each page.

Sessions made by ``thoughtline demo --keep`` (plus the extra ones of ``conftest``): every demo
route's session is listed, a session shows its branch tree, generations and turns with reasoning
collapsed until clicked, the request view shows the carriers each request sent and the chart, and
a payload with markup and control characters is shown as text, never run. Each page's screenshot
is written to the test's temporary folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from ui_support import GATEWAY_TOKEN, HOSTILE, DemoHome, Served

from thoughtline.cli.demo import SCENARIOS
from thoughtline.cli.sessions import _turn_summary
from thoughtline.gateway.tenancy import tenant_id
from thoughtline.store import open_store


def _open(browser: Any, url: str, shot: Path) -> None:
    browser.get(url)
    WebDriverWait(browser, 10).until(
        lambda b: b.execute_script("return document.readyState") == "complete")
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 1000


def test_sessions_page_lists_every_demo_route_and_searches(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    _open(browser, served.url + "/", tmp_path / "sessions.png")
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#sessions tbody td a")]
    for scenario in SCENARIOS:
        assert f"demo: {scenario.label}" in titles
    # The gateway tenant's session is listed under its tenant id; the token is never shown.
    assert tenant_id(GATEWAY_TOKEN) in browser.find_element(By.ID, "sessions").text
    assert GATEWAY_TOKEN not in browser.page_source

    box = browser.find_element(By.NAME, "q")
    box.send_keys("bedrock")
    box.submit()
    WebDriverWait(browser, 10).until(lambda b: "q=bedrock" in b.current_url)
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#sessions tbody td a")]
    assert titles == ["demo: bedrock claude (SigV4)"]
    browser.save_screenshot(str(tmp_path / "sessions-search.png"))


def test_session_page_tree_and_reasoning_after_a_click(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    deepseek = demo_home.ids["demo: deepseek (must-echo)"]
    _open(browser, f"{served.url}/sessions/{deepseek}", tmp_path / "session.png")
    tree = browser.find_element(By.ID, "tree")
    assert "demo: deepseek (must-echo)" in tree.text
    assert "what if: colder" in tree.text and "from turn 4" in tree.text
    assert "generation 0" in browser.find_element(By.ID, "generations").text

    first = browser.find_element(By.CSS_SELECTOR, "#turn-1 details.reasoning")
    thought = first.find_element(By.CSS_SELECTOR, "pre.thought")
    assert not thought.is_displayed()  # collapsed by default
    first.find_element(By.TAG_NAME, "summary").click()
    WebDriverWait(browser, 5).until(lambda b: thought.is_displayed())
    assert "What's the weather in Florence?" in thought.text
    browser.save_screenshot(str(tmp_path / "session-reasoning-open.png"))

    # Signed reasoning (Anthropic) is described, not dumped.
    anthropic = demo_home.ids["demo: anthropic (signed thinking)"]
    _open(browser, f"{served.url}/sessions/{anthropic}", tmp_path / "session-signed.png")
    browser.find_element(By.ID, "expand-all").click()
    sealed = browser.find_element(By.CSS_SELECTOR, "#turn-1 p.sealed").text
    assert sealed.startswith("signed, ") and "bytes, digest " in sealed
    assert "scope anthropic:anthropic@127.0.0.1/claude-opus-4-5" in sealed


def test_compacted_session_and_its_chart(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    compacted = demo_home.ids["compacted"]
    _open(browser, f"{served.url}/sessions/{compacted}", tmp_path / "compacted.png")
    generations = browser.find_element(By.ID, "generations").text
    assert "generation 0" in generations and "compacted to 5 turns, ~900 → ~300 tokens" \
        in generations
    _open(browser, f"{served.url}/sessions/{compacted}/requests", tmp_path / "chart.png")
    chart = browser.find_element(By.ID, "chart")
    rows = browser.find_elements(By.CSS_SELECTOR, "#requests tbody tr")
    assert len(chart.find_elements(By.CSS_SELECTOR, "circle.point")) == len(rows) > 1
    assert len(chart.find_elements(By.CSS_SELECTOR, "line.compaction")) == 1
    # kimi-k2.6's window dwarfs a demo session: named, with the share the peak used.
    assert "Context window: 262,144 tokens (above the scale" in chart.text


def test_a_branch_made_before_a_compaction_is_shown_at_its_real_turn(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    # Six turns, a branch at turn 2, then a compaction keeping the last 2 turns: the branch was
    # made from turn 2 of generation 0, not from the compacted history (where turn 2 is "turn 5
    # of six"), and the store's fork point of a detached branch is 0.
    six, branch = demo_home.ids["six"], demo_home.ids["early branch"]
    _open(browser, f"{served.url}/sessions/{six}", tmp_path / "early-branch-parent.png")
    assert browser.find_element(By.CSS_SELECTOR, "#turn-2 .text").text == "turn 5 of six"
    node = browser.find_element(By.CSS_SELECTOR, "#tree li li")
    assert node.text.startswith("branched early ")
    assert node.text.endswith(" 2 turns, from turn 2 of generation 0, before its compaction")
    link = node.find_element(By.CSS_SELECTOR, ".branched a.generation")
    assert link.get_attribute("href") == f"{served.url}/sessions/{six}#generation-0"
    assert "generation 0 · 6 turns" in browser.find_element(By.ID, "generation-0").text

    _open(browser, f"{served.url}/sessions/{branch}", tmp_path / "early-branch.png")
    assert "branch of " + six[:12] + " at turn 2 of generation 0, before its compaction" in \
        browser.find_element(By.CSS_SELECTOR, "p.meta").text
    shown = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "article.turn .text")]
    assert shown == ["turn 0 of six", "turn 1 of six"]


def test_request_view_shows_the_carriers_each_request_sent(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    deepseek = demo_home.ids["demo: deepseek (must-echo)"]
    _open(browser, f"{served.url}/sessions/{deepseek}/requests", tmp_path / "requests.png")
    rows = browser.find_elements(By.CSS_SELECTOR, "#requests tbody tr")
    assert len(rows) >= 4
    assert "no reasoning fields" in rows[0].text  # the first request has no assistant turn yet
    carriers = [r.find_element(By.CSS_SELECTOR, "td.carriers").text for r in rows[1:4]]
    assert carriers == ["reasoning_content ×1", "reasoning_content ×2",
                        "reasoning_content ×3"]
    assert all("default" in r.text and "200" in r.text for r in rows)

    relay = demo_home.ids["demo: unlisted strict relay"]
    _open(browser, f"{served.url}/sessions/{relay}/requests", tmp_path / "requests-relay.png")
    table = browser.find_element(By.ID, "requests").text
    assert "400" in table and "learned: " in table and "applied: " in table
    _open(browser, f"{served.url}/sessions/{relay}", tmp_path / "relay.png")
    assert "custom @ 127.0.0.1 / relay-reasoner: drop" in browser.find_element(
        By.ID, "verdicts").text


def test_hostile_payload_is_shown_as_text(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    hostile = demo_home.ids["hostile"]
    _open(browser, f"{served.url}/sessions/{hostile}", tmp_path / "hostile.png")
    browser.find_element(By.ID, "expand-all").click()
    shown = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">" \
            "\\x1b]0;owned\\x07\\x1b[31mred\\u202eevil"
    assert browser.find_element(By.CSS_SELECTOR, "#turn-0 .text").text == shown
    assert browser.find_element(By.CSS_SELECTOR, "#turn-1 pre.thought").text == \
        f"thinking {shown}"
    assert browser.find_element(By.CSS_SELECTOR, "#turn-1 .tool pre").text == shown
    assert browser.find_element(By.CSS_SELECTOR, "#turn-2 .tool pre").text == shown
    assert shown in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.execute_script("return window.pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img")
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in browser.page_source
    assert HOSTILE not in browser.page_source  # only its escaped form is there


def test_request_log_records_the_prompt_tokens_providers_report(demo_home: DemoHome) -> None:
    from thoughtline.requestlog import RequestLog

    records = list(RequestLog(demo_home.home / "logs").read())
    deepseek = [r for r in records if r["session"] == demo_home.ids["demo: deepseek (must-echo)"]]
    assert deepseek and all(r["prompt_tokens"] > 0 for r in deepseek)
    # A response that reports no usage (the strict relay's emulator) logs no count, not a 0.
    assert all(r["prompt_tokens"] > 0 for r in records if "prompt_tokens" in r)
    assert any("prompt_tokens" not in r for r in records)


def test_damaged_turns_and_provider_reports_are_marked(
        browser: Any, served: Served, demo_home: DemoHome, tmp_path: Path) -> None:
    _open(browser, f"{served.url}/sessions/{demo_home.ids['damaged']}", tmp_path / "damaged.png")
    turns = browser.find_elements(By.CSS_SELECTOR, "#turns article.turn")
    assert [t.get_attribute("id") for t in turns] == ["turn-0", "turn-1", "turn-2"]
    lost = browser.find_element(By.ID, "turn-1")
    assert "damaged" in lost.get_attribute("class").split()
    assert "stored row is corrupt" in lost.text and "lost" not in lost.text
    assert "second question" in browser.find_element(By.ID, "turn-2").text

    signed = demo_home.ids["demo: anthropic (signed thinking)"]
    _open(browser, f"{served.url}/sessions/{signed}", tmp_path / "reports.png")
    reports = browser.find_element(By.ID, "reports").text
    assert "thinking_dropped" in reports and "messages[1]" in reports
    # Shown as the JSON the log holds, whose escapes keep the ESC inert; the bidi override,
    # which JSON leaves raw, is made visible.
    assert "\\u001b]0;owned" in reports and "\\u202eevil" in reports
    assert "\x1b" not in browser.page_source and "\u202e" not in browser.page_source


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.label)
def test_every_demo_route_shows_its_reasoning_and_what_each_request_carried(
        scenario: Any, browser: Any, served: Served, demo_home: DemoHome,
        tmp_path: Path) -> None:
    from thoughtline.requestlog import RequestLog

    sid = demo_home.ids[f"demo: {scenario.label}"]
    _open(browser, f"{served.url}/sessions/{sid}", tmp_path / "session.png")
    assert browser.find_elements(By.CSS_SELECTOR, "#turns details.reasoning")
    assert not browser.find_elements(By.CSS_SELECTOR, "#turns details[open]")
    # Opaque values outside reasoning parts: the same ones `sessions show` lists.
    store = open_store(None, demo_home.home)
    try:
        listed = [p for m in store.load_history(sid).messages
                  for p in _turn_summary(m.seq, m.message, m.id)["payloads"]]
    finally:
        store.close()
    shown = browser.find_elements(By.CSS_SELECTOR, "#turns p.payload")
    assert len(shown) == len(listed)
    assert all(p["field"] in line.text for p, line in zip(listed, shown, strict=True))

    _open(browser, f"{served.url}/sessions/{sid}/requests", tmp_path / "requests.png")
    logged = [r for r in RequestLog(demo_home.home / "logs").read() if r["session"] == sid]
    shown = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#requests td.carriers")]
    expected = []
    for record in logged:  # every count the codec logged, whatever the API calls them
        counts = [f"{k} ×{v}" for k, v in sorted(record.get("carriers", {}).items())]
        counts += [f"native {k} ×{v}" for k, v in sorted(record.get("native", {}).items())]
        counts += [f"{field} {k} ×{v}" for field in sorted(record)
                   if field not in ("carriers", "native", "usage")  # usage: the answer's
                   and isinstance(record[field], dict)
                   for k, v in sorted(record[field].items())]
        expected.append(" ".join(counts) or "no reasoning fields")
    assert shown == expected and len(shown) >= 4
    points = browser.find_elements(By.CSS_SELECTOR, "#chart circle.point")
    assert len(points) == sum(1 for r in logged if "prompt_tokens" in r)
