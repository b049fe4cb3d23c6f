from thoughtline.routes import resolve


def test_groq_is_strict() -> None:
    assert resolve("groq").carriers == frozenset()
