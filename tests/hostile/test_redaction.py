"""24 secret shapes planted in a session: none survives into compaction_requests/ or stderr,
and ordinary text near them is kept."""
from __future__ import annotations

from pathlib import Path

import pytest

from catty_ctx.redact import redact_text, redact_url
from support import cli, msg, result, call, session_event, write_log

# (what the value is, the text that holds it, the secret that must not survive)
SHAPES = [
    ("openai", "key sk-proj-Abcdefghijklmnopqrstuvwx1234", "Abcdefghijklmnopqrstuvwx1234"),
    ("anthropic", "ANTHROPIC=sk-ant-api03-Zx9_Zx9_Zx9_Zx9_Zx9_Zx9_", "Zx9_Zx9_Zx9_Zx9_Zx9_Zx9_"),
    ("aws access key", "id AKIAABCDEFGHIJKLMNOP here", "AKIAABCDEFGHIJKLMNOP"),
    ("github", "ghp_" + "q" * 36, "q" * 36),
    ("slack token", "xoxb-1234567890-abcdefghijkl", "1234567890-abcdefghijkl"),
    ("google", "AIza" + "G" * 35, "G" * 35),
    ("stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "dozjgNryP4J3jVmNHl0w5N"),
    ("bearer", "Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234"),
    ("private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq9\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA7bq9"),
    ("password=", "password=hunter2hunter2", "hunter2hunter2"),
    ("api_key:", '"api_key": "k3y-v4lu3-xyz"', "k3y-v4lu3-xyz"),
    ("AWS_SECRET_ACCESS_KEY=", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    ("Authorization: Basic", "Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
    ("private key cut before END", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAEbm9uZQAAAAAAAAAB", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    ("PGP private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0PGPSECRETxyz\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
     "lQOYBF0PGPSECRETxyz"),
    ("password in a URL", "DATABASE_URL is postgres://app:s3cr3tPW@db.internal:5432/app", "s3cr3tPW"),
    ("short DB_PASSWORD", "DB_PASSWORD=pw42x", "pw42x"),
    ("hugging face", "hf_" + "H" * 34, "H" * 34),
    ("gitlab", "glpat-" + "L" * 20, "L" * 20),
    ("*_TOKEN=", "export NPM_TOKEN=npmTok3nValue99", "npmTok3nValue99"),
    ("slack webhook", "curl https://hooks.slack.com/services/T0000/B0000/XXXXSLACKHOOK", "XXXXSLACKHOOK"),
    ("cookie", "Cookie: sessionid=c00kieVal; csrftoken=csrfV4l", "c00kieVal"),
    ("apiKey in escaped JSON", '{\\"apiKey\\": \\"escAp3dKeyValue\\"}', "escAp3dKeyValue"),
]


def test_there_are_24_shapes() -> None:
    assert len(SHAPES) == 24


@pytest.mark.parametrize("name, text, secret", SHAPES, ids=[s[0] for s in SHAPES])
def test_each_shape_is_redacted(name: str, text: str, secret: str) -> None:
    out, n = redact_text(f"before {text} after")
    assert secret not in out and n >= 1 and out.startswith("before "), out
    if name not in ("private key cut before END", "cookie"):  # (those run to the end of their lines: a word may be base64)
        assert out.endswith(" after"), out


def test_no_shape_survives_into_the_artifact_or_stderr(tmp_path: Path) -> None:
    events = [session_event(), msg("system", "sys")]
    for i, (_name, text, _secret) in enumerate(SHAPES):
        events.append(msg("user", f"step {i}: {text}", f"u{i}"))
        events.append(call(f"c{i}", "sh", {"cmd": f"echo {text}"}))
        events.append(result(f"c{i}", f"output {i}: {text}"))
    s = write_log(tmp_path / "s", events)
    proc = cli("compact", str(s), "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    stored = b"".join(p.read_bytes() for p in (s / "compaction_requests").glob("*.json"))
    assert stored
    survived = [name for name, _text, secret in SHAPES if secret.encode() in stored or secret.encode() in proc.stderr]
    assert survived == []


def test_ordinary_text_is_kept() -> None:
    text = ("max_tokens: 4096; the tokenizer splits words; password policy is documented; "
            "def login(password: str, token: str = None) -> None; see https://example.com/docs@v2")
    assert redact_text(text) == (text, 0)


def test_a_url_shows_its_user_but_never_its_password() -> None:
    assert redact_url("https://svc:pw%40x@host:8443/v1") == "https://svc:[REDACTED:url_password]@host:8443/v1"
    assert redact_url("https://host/v1") == "https://host/v1"
