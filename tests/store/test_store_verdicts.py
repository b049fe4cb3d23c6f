"""The global verdict ledger: record merges, list, forget with filters, survives reopen."""

from __future__ import annotations

from store_backends import Backend

from thoughtline.replay import Verdict
from thoughtline.store import SqlStore


def _v(provider: str = "deepseek", host: str = "api.deepseek.com", model: str = "m",
       **kw: object) -> Verdict:
    return Verdict(provider=provider, host=host, model=model, **kw)  # type: ignore[arg-type]


def test_record_merges_drop_pad_and_reason(store: SqlStore) -> None:
    first = store.record_verdict(_v(drop=frozenset({"reasoning"}), reason="unknown field"))
    assert first == _v(drop=frozenset({"reasoning"}), reason="unknown field")
    merged = store.record_verdict(_v(drop=frozenset({"reasoning_details"}), pad=True,
                                     reason="must echo"))
    assert merged == _v(drop=frozenset({"reasoning", "reasoning_details"}), pad=True,
                        reason="unknown field; must echo")
    again = store.record_verdict(_v(drop=frozenset({"reasoning"}), reason="unknown field"))
    assert again == merged  # learning the same thing twice changes nothing
    assert store.verdicts() == [merged]


def test_verdicts_are_listed_in_key_order_and_survive_reopen(backend: Backend) -> None:
    backend.store.record_verdict(_v(provider="openrouter", pad=True))
    backend.store.record_verdict(_v(provider="groq", drop=frozenset({"reasoning_content"})))
    rows = backend.sql("SELECT provider, learned_at FROM verdicts ORDER BY provider")
    assert [r[0] for r in rows] == ["groq", "openrouter"] and all(r[1] > 0 for r in rows)
    listed = backend.reopen().verdicts()
    assert [v.provider for v in listed] == ["groq", "openrouter"]
    assert listed[0].drop == frozenset({"reasoning_content"}) and listed[1].pad


def test_forget_with_filters(store: SqlStore) -> None:
    for provider, host, model in [("a", "h1", "m1"), ("a", "h1", "m2"), ("a", "h2", "m1"),
                                  ("b", "h1", "m1")]:
        store.record_verdict(_v(provider=provider, host=host, model=model, pad=True))
    assert store.forget_verdicts(provider="a", host="h1", model="m2") == 1
    assert store.forget_verdicts(provider="zzz") == 0
    assert store.forget_verdicts(host="h1") == 2
    assert [v.key for v in store.verdicts()] == [("a", "h2", "m1")]
    assert store.forget_verdicts() == 1
    assert store.verdicts() == []


def test_a_tenants_ledger_is_its_own(store: SqlStore) -> None:
    learned = _v(drop=frozenset({"reasoning_content"}), reason="unknown field")
    assert store.record_verdict(learned, tenant="gw:alice") == learned
    assert store.verdicts() == []  # the global ledger never sees a tenant's lesson
    assert store.verdicts(tenant="gw:bob") == []
    assert store.verdicts(tenant="gw:alice") == [learned]
    shared = store.record_verdict(_v(provider="groq", pad=True))
    assert store.verdicts(tenant="gw:alice") == [shared, learned]  # global first, then its own
    assert store.verdicts(tenant="gw:bob") == [shared]
    assert store.forget_verdicts(provider="deepseek") == 1  # forgetting reaches every ledger
    assert store.verdicts(tenant="gw:alice") == [shared]
