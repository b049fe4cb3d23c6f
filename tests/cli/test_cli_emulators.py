"""``python -m thoughtline.testing``: any emulator in its own process, its base URL printed first.

Issue 31 item 2: trying thoughtline (or its gateway) against Anthropic, Gemini, Bedrock or the
Responses API needed Python code. Each test starts the emulator as a subprocess, reads the URL it
printed, sends one turn to it through ``thoughtline chat --base-url URL``, and stops it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from cli_support import Cli

from thoughtline.testing.personalities import PERSONALITIES

MAIN = [sys.executable, "-m", "thoughtline.testing"]
#: Fake AWS keys for botocore's SigV4 (the emulator checks the signature's region scope).
AWS = {"AWS_ACCESS_KEY_ID": "AKIAEMULATORTEST0000", "AWS_SECRET_ACCESS_KEY": "not-a-real-key",
       "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


@contextmanager
def emulator(*args: str) -> Iterator[str]:
    proc = subprocess.Popen([*MAIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if not url else "")
        yield url
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


@pytest.mark.parametrize(("name", "provider", "env"), [
    ("anthropic", "anthropic", {"ANTHROPIC_API_KEY": "sk-emulated"}),
    ("gemini", "gemini", {"GEMINI_API_KEY": "emulated"}),
    ("bedrock", "bedrock", AWS),
    ("responses", "openai-responses", {"OPENAI_API_KEY": "sk-emulated"}),
    ("responses-xai", "xai-responses", {"XAI_API_KEY": "emulated"}),
    ("deepseek", "deepseek", {"DEEPSEEK_API_KEY": "sk-emulated"}),
])
def test_each_emulator_serves_a_chat_at_the_url_it_prints(cli: Cli, name: str, provider: str,
                                                           env: dict[str, str]) -> None:
    with emulator(name, "--no-auth") as url:
        out = cli.json("chat", "--provider", provider, "--base-url", url, "-p", "hello there",
                       "--json", env=env)
    assert out["reply"]["text"] and out["reply"]["reasoning"], out
    [record] = cli.log_records()
    assert (record["provider"], record["status"]) == (provider, 200)


def test_help_lists_every_emulator() -> None:
    result = subprocess.run([*MAIN, "--help"], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    listed = result.stdout
    for name in ("anthropic", "gemini", "bedrock", "responses", *PERSONALITIES):
        assert f" {name}" in listed, name
    for preset in ("anthropic", "gemini", "bedrock", "openai-responses"):
        assert f'provider = "{preset}"' in listed
    unknown = subprocess.run([*MAIN, "no-such-api"], capture_output=True, text=True,
                             timeout=60, check=False)
    assert unknown.returncode == 2 and "no-such-api" in unknown.stderr


def test_chunk_delay_is_refused_where_it_does_nothing() -> None:
    result = subprocess.run([*MAIN, "gemini", "--chunk-delay", "0.1"], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2 and "--chunk-delay" in result.stderr
    assert result.stdout == ""  # no URL printed: nothing was started
