"""Small behaviours (issue 10) that need no live session: ambiguous references, id prefix case,
human log lines, the unknown-provider list, prompt-history permissions, the Mistral thinking fold,
the ``routes`` examples of the README and the docs pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import Cli, seed_sessions

from thoughtline import config
from thoughtline.codecs.openai_chat.fold import StreamFold
from thoughtline.errors import UsageError
from thoughtline.messages import Origin
from thoughtline.requestlog import RequestLog
from thoughtline.store import open_store

ROOT = Path(__file__).resolve().parents[2]
#: Every page a user copies commands from: the README and the docs site's pages.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def retitle(home: Path, ids: list[str], title: str) -> None:
    store = open_store(None, config.ensure_home(home))
    try:
        for sid in ids:
            store.set_title(sid, title)
    finally:
        store.close()


def test_an_ambiguous_title_is_an_error_listing_the_candidates(cli: Cli) -> None:
    ids = seed_sessions(cli.home, 3)
    retitle(cli.home, ids, "dup")
    for args in (("sessions", "rm", "dup", "-y"), ("sessions", "show", "dup"),
                 ("sessions", "export", "dup")):
        result = cli.run(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "ambiguous" in result.stderr
        assert all(sid in result.stderr for sid in ids)
    assert len(cli.sessions()) == 3  # nothing was removed


def test_id_prefixes_match_in_any_case(cli: Cli) -> None:
    [sid] = seed_sessions(cli.home, 1)
    assert cli.show(sid[:8].upper())["id"] == sid
    assert cli.show(sid.upper())["id"] == sid


def test_human_log_lines_say_what_happened(cli: Cli) -> None:
    log = RequestLog(cli.home / "logs")
    base = {"session": "s" * 32, "route": "r", "provider": "p", "host": "h", "model": "m"}
    log.write({**base, "status": None, "outcome": "cancelled"})
    log.write({**base, "status": None, "outcome": "error"})
    log.write({**base, "status": 200, "outcome": "interrupted"})
    log.write({**base, "status": 200, "outcome": "ok"})
    log.write({**base, "status": 200, "outcome": "unsaved"})
    lines = cli.invoke("logs").stdout.splitlines()
    assert [line.split()[2] for line in lines] == [
        "cancelled", "unreachable", "200-broken-stream", "200", "200-unsaved"]
    assert not any("None" in line for line in lines)


def test_the_unknown_provider_list_names_demo() -> None:
    with pytest.raises(UsageError) as caught:
        config.provider("nope")
    known = str(caught.value).split("Known providers: ")[1]
    assert re.search(r"\bdemo\b", known)


def test_prompt_history_is_owner_only(tmp_path: Path) -> None:
    from thoughtline.cli.interactive import private_file

    fresh = private_file(tmp_path / "prompt-history")
    assert fresh.stat().st_mode & 0o777 == 0o600
    old = tmp_path / "old-history"
    old.write_text("secret prompt\n")
    old.chmod(0o644)
    private_file(old)
    assert old.stat().st_mode & 0o777 == 0o600
    assert old.read_text() == "secret prompt\n"


class CountingStr(str):
    """A fragment that counts how often it is concatenated onto a growing string."""

    joins = 0

    def __radd__(self, other: str) -> str:
        CountingStr.joins += 1
        return str.__add__(other, self)


def test_mistral_thinking_fragments_are_joined_once_not_one_by_one() -> None:
    # Magistral streams thinking as one content-chunk list per delta (fold.py cites the shape).
    fold = StreamFold(Origin(api="openai-chat", provider="mistral", model="magistral"))
    CountingStr.joins = 0
    pieces = [CountingStr(f"w{i} ") for i in range(2000)]
    for piece in pieces:
        fold.add({"choices": [{"index": 0, "delta": {"content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": piece}]}]}}]})
    fold.add({"choices": [{"index": 0, "delta": {"content": "answer"},
                           "finish_reason": "stop"}]})
    done = fold.finish()
    assert CountingStr.joins == 0
    assert done.message.reasoning_text() == "".join(pieces)
    assert done.message.text == "answer"


def test_the_documented_routes_examples_use_providers_that_exist() -> None:
    known = set(config.presets()) | {config.DEMO_PROVIDER, "NAME"}  # NAME: the placeholder
    found = 0
    for page in PAGES:
        for match in re.finditer(r"thoughtline routes[^\n]*--provider (\S+)", page.read_text()):
            assert match.group(1).strip("`") in known, (page.name, match.group(0))
            found += 1
    assert found >= 5  # the README's example and the CLI and providers pages'
