"""``thoughtline demo``: the offline walkthrough exits 0 and shows what each route received."""

from __future__ import annotations

from cli_support import ANSI, DemoRun

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
