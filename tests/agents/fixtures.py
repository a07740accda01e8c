"""The pytest side of the harness: the `agents` marker's rule and the fixtures (imported by
tests/conftest.py, so every test file can use them).

A test that runs a CLI carries `@pytest.mark.agents` (optionally naming the CLIs it needs:
`@pytest.mark.agents("claude")`). Without the CLI or the namespace it is skipped — except in
CI (CI=true or CATTY_CTX_REQUIRE_AGENTS=1), where it fails: CI never passes by skipping them."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .anthropic_fake import FakeAnthropic
from .netns import LoopbackNamespace, NamespaceUnavailable, unavailable_reason
from .openai_fake import FakeResponses
from .runner import Claude, Codex, Grok, locate
from .xai_fake import FakeXai

REQUIRE_ENV = "CATTY_CTX_REQUIRE_AGENTS"


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1" or os.environ.get("CI", "").lower() in ("true", "1")


def unavailable(reason: str) -> None:
    if required():
        pytest.fail(f"{reason}: CI runs the tests marked `agents` (see tests/agents/README.md)", pytrace=False)
    pytest.skip(reason)


def require(agent: str) -> Path:
    exe, why = locate(agent)
    if exe is None:
        unavailable(why)
    assert exe is not None
    return exe


def agents_setup(item: pytest.Item) -> None:
    """pytest_runtest_setup's part for the marker: the CLIs it names must be there."""
    marker = item.get_closest_marker("agents")
    if marker is None:
        return
    reason = unavailable_reason()
    if reason:
        unavailable(reason)
    for agent in marker.args:
        require(agent)


def _marked(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("agents") is None:
        pytest.fail("a test that runs the agent CLIs carries @pytest.mark.agents", pytrace=False)


@pytest.fixture(scope="session")
def loopback() -> Iterator[LoopbackNamespace]:
    """One loopback-only network namespace per test process."""
    try:
        with LoopbackNamespace() as ns:
            yield ns
    except NamespaceUnavailable as e:
        unavailable(str(e))


@pytest.fixture
def fake_anthropic(loopback: LoopbackNamespace) -> Iterator[FakeAnthropic]:
    """A fake Anthropic server in the namespace, empty script (push replies onto it)."""
    with FakeAnthropic(loopback.listen()) as server:
        yield server


@pytest.fixture
def fake_openai(loopback: LoopbackNamespace) -> Iterator[FakeResponses]:
    """A fake OpenAI Responses server in the namespace, empty script."""
    with FakeResponses(loopback.listen()) as server:
        yield server


@pytest.fixture
def claude(request: pytest.FixtureRequest, loopback: LoopbackNamespace, fake_anthropic: FakeAnthropic, tmp_path: Path) -> Claude:
    """Claude Code with a fresh HOME (tmp_path/claude-home) and project (tmp_path/project)."""
    _marked(request)
    exe = require("claude")
    (tmp_path / "project").mkdir(exist_ok=True)
    return Claude(loopback, fake_anthropic, exe, tmp_path / "claude-home", tmp_path / "project")


@pytest.fixture
def codex(request: pytest.FixtureRequest, loopback: LoopbackNamespace, fake_openai: FakeResponses, tmp_path: Path) -> Codex:
    """Codex with a fresh HOME and CODEX_HOME (tmp_path/codex-home/.codex) and project."""
    _marked(request)
    exe = require("codex")
    (tmp_path / "project").mkdir(exist_ok=True)
    return Codex(loopback, fake_openai, exe, tmp_path / "codex-home", tmp_path / "project")


@pytest.fixture
def fake_xai(loopback: LoopbackNamespace) -> Iterator[FakeXai]:
    """A fake xAI server in the namespace (Responses, chat completions, the model list), empty script."""
    with FakeXai(loopback.listen()) as server:
        yield server


@pytest.fixture
def grok(request: pytest.FixtureRequest, loopback: LoopbackNamespace, fake_xai: FakeXai, tmp_path: Path) -> Grok:
    """Grok Build with a fresh HOME (tmp_path/grok-home, GROK_HOME its .grok) and project."""
    _marked(request)
    exe = require("grok")
    (tmp_path / "project").mkdir(exist_ok=True)
    return Grok(loopback, fake_xai, exe, tmp_path / "grok-home", tmp_path / "project")
