"""The curated public API: sorted, complete, importable, and lazy."""

import subprocess
import sys

import thoughtline


def test_all_is_sorted_and_unique() -> None:
    assert thoughtline.__all__ == sorted(set(thoughtline.__all__))


def test_every_public_name_resolves() -> None:
    for name in thoughtline.__all__:
        assert getattr(thoughtline, name) is not None, name


def test_importing_the_package_does_not_load_the_network_stack() -> None:
    code = ("import sys, thoughtline, thoughtline.cli.main; "
            "print(sorted(m for m in ('httpx', 'rich', 'starlette', 'prompt_toolkit', "
            "'thoughtline.session') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
