"""Mutation fuzzing of ``sessions import`` (issue 22, item 5): real export files, one change each.

One session per API is made the way ``chat`` makes it (``Session.send`` through the real turn
engine, answered by a recorded reply that carries reasoning) and exported with ``sessions export
--format json``. Each case changes one thing in one export with the shared mutator
(``fuzz_corpus.mutate``) and imports it through the real CLI entry (``main()``, in process). The
contract: no uncaught exception — exit 0, or exit 2 with one clear line; a rejected file stores
nothing; an accepted one resumes as ``chat -r`` resumes it and builds its next request, without
an error of any kind (a file ``chat -r`` cannot use is rejected at import, naming the field).

Bounded and derandomized like the other fuzzers; a crash found later becomes an ``@example``.
Case count: ``pytest tests/robustness/test_fuzz_import.py
--hypothesis-show-statistics``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from fuzz_corpus import APIS, INDEX, ODD_JSON, OPS, mutate, wholes
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from reply_support import PROVIDERS, CannedTransport, run_reply

from thoughtline import config
from thoughtline.cli.main import main
from thoughtline.cli.trust import settle_params, settle_provider
from thoughtline.errors import UsageError
from thoughtline.messages import Reasoning, user
from thoughtline.session import Session
from thoughtline.store import SQLiteStore
from thoughtline.turn import TurnOptions

IMPORT_CASES = 300


@dataclass
class Exports:
    home: Path
    files: dict[str, Any]  # per API, the parsed ``sessions export --format json`` file


def invoke(home: Path, *args: str) -> tuple[int, str, str, BaseException | None]:
    """``thoughtline --home HOME ARGS`` through ``main()`` (its exit-code mapping), in process:
    (exit code, stdout, stderr, the exception that escaped ``main()`` if any)."""
    argv = sys.argv
    with CliRunner().isolation(env={"THOUGHTLINE_DATABASE_URL": None}) as (out, err, _):
        sys.argv = ["thoughtline", "--home", str(home), *args]
        code, escaped = 0, None
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException as exc:  # the contract: nothing else gets out
            code, escaped = 1, exc
        finally:
            sys.argv = argv
        return code, out.getvalue().decode(), err.getvalue().decode(), escaped


def _answer(api: str) -> Any:
    """The first recorded whole reply of ``api`` whose answer carries reasoning."""
    for recording in wholes(api):
        outcome = run_reply(api, recording.whole, stream=False)
        if outcome.done is not None and any(
                isinstance(p, Reasoning) for p in outcome.done.message.parts):
            return recording.whole
    raise AssertionError(f"no recorded {api} reply with reasoning")


def _session(store: SQLiteStore, api: str) -> str:
    preset, model = PROVIDERS[api]
    provider = config.provider(preset, base_url="http://127.0.0.1:9/v1", model=model)
    if api == "bedrock":
        provider = dataclasses.replace(provider, region="us-east-1")
    session = Session.create(store, provider, title=f"fuzz {api}",
                             transport=CannedTransport(_answer(api)))
    asyncio.run(session.send("What is the weather in Paris?", TurnOptions(stream=False)))
    return session.record.id


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Exports:
    home = tmp_path_factory.mktemp("fuzz-import") / "home"
    config.ensure_home(home)
    store = SQLiteStore(home / "state.db")
    try:
        ids = {api: _session(store, api) for api in APIS}
    finally:
        store.close()
    files = {}
    for api, sid in ids.items():
        code, out, err, escaped = invoke(home, "sessions", "export", sid, "--format", "json")
        assert code == 0 and escaped is None, (api, err, escaped)
        files[api] = json.loads(out)
        assert any(p["t"] == "reasoning" for m in files[api]["messages"] for p in m["parts"])
    return Exports(home=home, files=files)


def session_ids(home: Path) -> set[str]:
    with sqlite3.connect(home / "state.db") as conn:
        return {row[0] for row in conn.execute("SELECT id FROM sessions")}


def resume_and_build(home: Path, sid: str) -> None:
    """What ``chat -r SID -p hello`` does before it sends: resume, settle the untrusted provider
    and params, build the next request (no network)."""
    cfg = config.load_config(home)
    store = SQLiteStore(home / "state.db")
    try:
        session = Session.resume(store, sid, config=cfg)
        prov = settle_provider(session.provider, session.record.model_config, cfg, trust=False,
                               say=lambda text: None)
        if prov != session.provider:
            session.set_provider(prov)
        settle_params(session, trust=False, say=lambda text: None)
        body, _ = session.build_request([user("hello")], stream=True)
        orjson.dumps(body)
    finally:
        store.close()


@settings(max_examples=IMPORT_CASES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(api=st.sampled_from(APIS), pick=INDEX, op=st.sampled_from(OPS), new=ODD_JSON)
# Found by this fuzzer: an API naming no codec was imported, and every resume then failed.
@example(api="anthropic", pick=("session", "model_config", "provider", "api"), op="replace",
         new=None)
@example(api="gemini", pick=("session", "model_config", "provider", "api"), op="replace",
         new="gemini-v2")
def test_sessions_import_survives_mutated_real_exports(
        exports: Exports, tmp_path_factory: pytest.TempPathFactory, api: str,
        pick: int | tuple[Any, ...], op: str, new: Any) -> None:
    data = mutate(exports.files[api], pick, op, new)
    path = tmp_path_factory.mktemp("case") / "in.json"
    path.write_text(json.dumps(data))
    before = session_ids(exports.home)
    code, _, err, escaped = invoke(exports.home, "sessions", "import", str(path))
    assert escaped is None, f"{type(escaped).__name__}: {escaped}"
    after = session_ids(exports.home)
    if code != 0:
        event("rejected")
        assert code == 2, (code, err)
        assert after == before, "a rejected import stored something"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and len(lines[0]) > 10, err
        return
    event("accepted")
    [sid] = after - before
    try:
        resume_and_build(exports.home, sid)
    except UsageError as exc:  # e.g. a provider id no preset or config names: said, not crashed
        event("refused on resume")
        text = str(exc)
        assert "\n" not in text.strip() and len(text) > 10, text


def test_every_api_has_an_export_with_reasoning(exports: Exports) -> None:
    assert set(exports.files) == set(APIS)
    for data in exports.files.values():
        assert data["format"] == "thoughtline.session/1"
        assert [m["role"] for m in data["messages"]][:2] == ["user", "assistant"]

