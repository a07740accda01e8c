"""Credentials in artifacts are replaced by a marker naming their kind."""
from __future__ import annotations

import pytest

from catty_ctx.redact import redact, redact_text, secret_pieces

SECRETS = {
    "openai_key": "sk-proj-" + "a1B2" * 10,
    "anthropic_key": "sk-ant-api03-" + "Zx9_" * 10,
    "aws_access_key": "AKIA" + "ABCDEFGHIJKLMNOP",
    "github_token": "ghp_" + "x" * 36,
    "slack_token": "xoxb-1234567890-abcdefghij",
    "google_api_key": "AIza" + "S" * 35,
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_shape_is_redacted(kind: str) -> None:
    text = f"export X={SECRETS[kind]} and more"
    out, n = redact_text(text)
    assert SECRETS[kind] not in out and f"[REDACTED:{kind}]" in out and n == 1
    assert out.endswith(" and more")


def test_private_key_blocks_bearer_tokens_and_assignments() -> None:
    text = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
        "Authorization: Bearer abcdefghijklmnop1234\n"
        'config = {"password": "hunter2hunter2", "api_key": "k3y-v4lu3-xyz"}\n'
    )
    out, n = redact_text(text)
    assert "b3BlbnNzaC1rZXktdjEAAAA" not in out and "[REDACTED:private_key]" in out
    assert "abcdefghijklmnop1234" not in out and "hunter2hunter2" not in out and "k3y-v4lu3-xyz" not in out
    assert '"password": "[REDACTED:secret_assignment]"' in out and n == 4


def test_ordinary_text_is_left_alone() -> None:
    text = "The task: fix parse() in src/parse.py; password policy is documented; skip-list of keys."
    assert redact_text(text) == (text, 0)


def test_nested_values_are_redacted_and_counted() -> None:
    value = {"items": [{"text": SECRETS["openai_key"]}, {"args": {"token": SECRETS["github_token"]}}], "n": 3}
    out, n = redact(value)
    assert n == 2 and out["n"] == 3 and SECRETS["openai_key"] not in str(out)


def test_secret_pieces_are_each_values_own_and_a_value_with_no_secret_gives_none() -> None:
    """Each value is searched alone: a key block left open in one value does not run into the
    next, and values that only hold a secret's words (`token`, `session`) give no piece."""
    values = [{"role": "tool", "output": "token counts and the session log\n" * 1000},
              {"role": "user", "text": f"use {SECRETS['openai_key']} please"},
              {"role": "tool", "output": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAabcdefgh"},
              {"role": "assistant", "text": "reading the configuration file now -----END RSA PRIVATE KEY-----"}]
    pieces = secret_pieces(values)
    assert pieces[0] == SECRETS["openai_key"].removeprefix("sk-proj-") and "MIIEowIBAAKCAQEAabcdefgh" in pieces
    assert not any(p in ("configuration", "reading") for p in pieces)
    assert secret_pieces([values[0], values[3]]) == []
