"""``codecs.common.SerializedPrefix``: a steady request splices the bytes of the items earlier
requests carried; whatever happens to the array, the bytes are those of serializing it."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from thoughtline.codecs.common import SerializedPrefix

VALUES = st.one_of(st.text(max_size=8), st.integers(-1000, 1000), st.none())
ITEMS = st.dictionaries(st.sampled_from(["role", "content", "a", "b"]), VALUES, max_size=3)
# Each step: grow by some new items, replace one item by an equal copy (new identity, maybe a
# different key order), or cut the array short.
STEPS = st.lists(st.one_of(
    st.tuples(st.just("grow"), st.lists(ITEMS, max_size=4)),
    st.tuples(st.just("replace"), st.integers(0, 50)),
    st.tuples(st.just("cut"), st.integers(0, 50))), max_size=12)


@given(STEPS)
def test_the_spliced_array_is_byte_identical_to_serializing_it(steps: list[Any]) -> None:
    prefix = SerializedPrefix()
    items: list[dict[str, Any]] = []
    for kind, arg in steps:
        if kind == "grow":
            items = [*items, *arg]
        elif kind == "replace" and items:
            at = arg % len(items)
            items = [*items[:at], dict(reversed(list(items[at].items()))), *items[at + 1:]]
        elif kind == "cut":
            items = items[:arg % (len(items) + 1)]
        assert orjson.dumps(prefix.parts(items)) == orjson.dumps(items)


def test_a_growing_array_splices_what_the_last_request_carried() -> None:
    prefix = SerializedPrefix()
    first = [{"role": "user", "content": "q"}]
    second = [*first, {"role": "assistant", "content": "a"}]
    third = [*second, {"role": "user", "content": "q2"}]
    assert prefix.parts(first) == first  # a cold array: nothing serialized ahead of need
    parts = prefix.parts(second)
    assert type(parts[0]) is orjson.Fragment and parts[1:] == second[1:]
    parts = prefix.parts(third)
    assert [type(p) for p in parts] == [orjson.Fragment, orjson.Fragment, dict]
    assert orjson.dumps(parts) == orjson.dumps(third)
