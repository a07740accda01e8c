"""Pass 1 of a proxy conversation's two-pass compaction, in a process of its own
(docs/proxy.md#what-it-changes-in-a-request).

`python -m catty_ctx.proxy.pass1` reads one JSON object on its stdin, `{"folder": DIR,
"summarizer": WHO}` (WHO a `--summarizer` string, or the upstream summariser's spec with
the client's headers), runs `compact --prefire` on the session, and exits as `compact`
does: 0, or one line on stderr and the documented code. The client's credentials reach it
through the pipe alone, never its arguments or environment.
"""
from __future__ import annotations

import sys

import orjson

from ..compact.pipeline import CompactOptions, compact_session
from ..errors import CattyError, ExitCode
from ..redact import redact_text
from ..session.store import Session
from .summarize import summarizer_of


def main() -> int:
    try:
        job = orjson.loads(sys.stdin.buffer.read())
        opts = CompactOptions(prefire=True, force=True, mode="segments", summarizer=summarizer_of(job["summarizer"]))
        compact_session(Session.open(job["folder"]), opts)
    except CattyError as exc:
        print(f"catty-ctx: {redact_text(str(exc))[0]}", file=sys.stderr)
        return int(exc.exit_code)
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        print(f"catty-ctx: pass 1: a job it cannot read ({type(exc).__name__})", file=sys.stderr)
        return int(ExitCode.USAGE)
    except Exception as exc:  # one line for the proxy's log, never a traceback
        print(f"catty-ctx: pass 1 failed ({type(exc).__name__}: {redact_text(str(exc))[0]})", file=sys.stderr)
        return int(ExitCode.INTERNAL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
