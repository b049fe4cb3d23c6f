"""Every API's route table has one row format, ``routes/`` is data and matching only, and the
user's must-echo option is set once on the profile, never passed through a codec's ``resolve``."""

from __future__ import annotations

import ast
import inspect
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from thoughtline.codecs import registry
from thoughtline.codecs.base import Echo
from thoughtline.codecs.openai_chat.profile import resolve_chat
from thoughtline.errors import ConfigError
from thoughtline.routes import parse_api_table

ROUTES = Path(__file__).resolve().parents[1] / "src" / "thoughtline" / "routes"
ROW_KEYS = {"id", "providers", "hosts", "paths", "catch_all", "local_endpoint", "explain",
            "profile"}
#: The APIs the registry lists (read at collection, before any test registers a stub API).
APIS = registry.apis()
TABLES = [f"{api}.toml" for api in APIS]


def test_every_api_has_its_route_table() -> None:
    assert {"openai-chat", "anthropic", "openai-responses"} <= set(APIS)
    for name in TABLES:
        assert resources.files("thoughtline.routes").joinpath(name).is_file(), name


@pytest.mark.parametrize("name", TABLES)
def test_every_table_uses_the_shared_row_format(name: str) -> None:
    raw = tomllib.loads(resources.files("thoughtline.routes").joinpath(name).read_text("utf-8"))
    for row in raw["row"]:
        assert set(row) <= ROW_KEYS, (name, row["id"], set(row) - ROW_KEYS)
        assert isinstance(row.get("profile", {}), dict), (name, row["id"])
    table = parse_api_table(name.removesuffix(".toml"), raw)
    assert [row.id for row in table.rows] == [row["id"] for row in raw["row"]]


def _table(*rows: dict[str, object]) -> dict[str, object]:
    return {"row": [*rows, {"id": "rest", "catch_all": True}]}


def test_a_local_endpoint_row_is_a_feature_of_every_table() -> None:
    table = parse_api_table("any-api", _table(
        {"id": "vendor", "providers": ["vendor"], "hosts": ["vendor.example"]},
        {"id": "local", "local_endpoint": True}))
    assert table.match("custom", "http://127.0.0.1:8080/v1").id == "local"
    assert table.match("custom", "http://192.168.1.9/v1").id == "local"
    assert table.match("custom", "https://llm.example.net/v1").id == "rest"
    assert table.match("custom", None).id == "rest"
    # a listed provider id keeps its row at a loopback address (tests aim real routes at emulators)
    assert table.match("vendor", "http://127.0.0.1:8080/v1").id == "vendor"
    # the local row is never matched by provider id or host
    assert table.match("local", "https://llm.example.net/v1").id == "rest"
    without = parse_api_table("any-api", _table({"id": "vendor", "providers": ["vendor"]}))
    assert without.match("custom", "http://127.0.0.1:8080/v1").id == "rest"


def test_a_catch_all_row_may_list_its_own_providers_and_hosts() -> None:
    table = parse_api_table("any-api", {"row": [
        {"id": "local", "local_endpoint": True},
        {"id": "rest", "catch_all": True, "providers": ["known"], "hosts": ["known.example"]}]})
    assert table.match("known", "http://127.0.0.1:1/v1").id == "rest"
    assert table.match("custom", "https://api.known.example/v1").id == "rest"
    assert table.match("custom", "http://127.0.0.1:1/v1").id == "local"


def test_two_local_endpoint_rows_are_a_config_error() -> None:
    with pytest.raises(ConfigError):
        parse_api_table("any-api", _table({"id": "a", "local_endpoint": True},
                                          {"id": "b", "local_endpoint": True}))


# --- routes/ is data and matching only -------------------------------------------------------


def _imported(tree: ast.AST) -> list[str]:
    """Every module a tree imports, at any depth (function-level and TYPE_CHECKING included)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return found


def test_routes_never_import_a_codec() -> None:
    offenders = [f"{path.name}: {name}" for path in sorted(ROUTES.glob("*.py"))
                 for name in _imported(ast.parse(path.read_text("utf-8")))
                 if name.startswith(("thoughtline.codecs", "thoughtline.replay"))]
    assert offenders == []


def test_the_import_check_sees_lazy_and_type_only_imports() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from thoughtline.codecs.base import Codec\n"
                     "def f():\n    from thoughtline.codecs import registry\n")
    assert {"thoughtline.codecs.base", "thoughtline.codecs"} <= set(_imported(tree))


# --- echo: one profile field, set once -------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_no_codec_takes_echo_in_resolve(api: str) -> None:
    assert list(inspect.signature(registry.codec(api).resolve).parameters) == [
        "provider", "base_url", "model"]


@pytest.mark.parametrize("echo", ["auto", "always", "never"])
@pytest.mark.parametrize(("provider", "base_url", "model"), [
    ("deepseek", None, "deepseek-reasoner"),
    ("custom", "https://openrouter.ai/api/v1", "deepseek/deepseek-r1"),
    ("custom", "http://127.0.0.1:9/v1", "qwen3"),
    ("mistral", None, "magistral-medium"),
])
def test_echo_set_on_the_chat_profile_is_the_table_rule(provider: str, base_url: str | None,
                                                        model: str, echo: Echo) -> None:
    route = registry.resolve("openai-chat", provider, base_url, model, echo=echo)
    expected = resolve_chat(provider, base_url, model, echo=echo)
    assert route == expected
    assert route.profile.describe() == expected.profile.describe()
    assert route.profile.echo == echo
    reads_rc = "reasoning_content" in route.profile.carriers
    if echo == "never" or not reads_rc:
        assert route.profile.must_echo is False and route.profile.pad is False
    if echo == "always" and reads_rc:
        assert route.profile.must_echo is True and route.profile.pad is True


@pytest.mark.parametrize("api", [api for api in APIS if api != "openai-chat"])
@pytest.mark.parametrize("echo", ["always", "never"])
def test_echo_leaves_other_apis_alone(api: str, echo: Echo) -> None:
    auto = registry.resolve(api, "custom", "http://127.0.0.1:9/v1", "some-model")
    chosen = registry.resolve(api, "custom", "http://127.0.0.1:9/v1", "some-model", echo=echo)
    assert chosen == auto
    assert chosen.to_json() == auto.to_json()
