"""``thoughtline demo``: the offline walkthrough exits 0 and shows what each route received."""

from __future__ import annotations

import json

from cli_support import ANSI, Cli, DemoRun

from thoughtline.cli.demo import SCENARIOS


def test_demo_exits_0_with_the_table(demo_run: DemoRun) -> None:
    result = demo_run.result
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    out = result.stdout
    assert not ANSI.search(out)  # not a terminal: plain text
    assert "What each route received" in out
    for column in ("route", "row", "requests", "restart"):
        assert column in out
    for scenario in SCENARIOS:
        assert f"✓ {scenario.label}" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert sum("ok" in row for row in rows) == len(SCENARIOS)
    assert sum("identical" in row for row in rows) == len(SCENARIOS)
    assert "CHANGED" not in out
    assert "1 rejected → learned" in out  # the strict relay, once
    assert "replayed byte-identical: yes" in out
    assert f"state kept in {demo_run.home}" in out


def test_demo_sessions_are_in_the_given_home(demo_run: DemoRun) -> None:
    assert (demo_run.home / "state.db").exists()
    records = [line for line in (demo_run.home / "logs" / "requests.jsonl").read_text()
               .splitlines() if line]
    assert len(records) == 6 * len(SCENARIOS) + 1  # 6 requests a route, plus the relay's 400


def test_every_demo_session_resumes_with_chat_r(demo_copy: Cli) -> None:
    """Issue 31 item 4: the demo's emulators are gone when it exits, so ``chat -r`` on its
    sessions failed ("could not reach"). Each resumes against a freshly started emulator of its
    scenario, and the stored reasoning goes with it (a route that checks signatures, seals or
    must-echo carriers would reject the turn otherwise)."""
    for scenario in SCENARIOS:
        title = f"demo: {scenario.label}"
        before = next(s for s in demo_copy.sessions() if s["title"] == title)
        result = demo_copy.run("chat", "-r", title, "-p", "And in Milan?", "--json",
                               env={"DEEPSEEK_API_KEY": "sk-never-sent-4417"})
        assert result.returncode == 0, (scenario.label, result.stderr)
        assert "Traceback" not in result.stderr
        out = json.loads(result.stdout)
        assert out["session"] == before["id"]
        assert out["reply"]["text"] or out["reply"]["tool_calls"], out
        assert "fingerprint" not in result.stderr and "without" not in result.stderr, \
            result.stderr  # nothing was rejected and dropped on the way
        after = demo_copy.show(before["id"])
        assert len(after["turns"]) == before["turns"] + 2
        assert after["provider"]["key_env"] == ""

