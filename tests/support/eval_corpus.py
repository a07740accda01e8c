"""Sessions with planted facts for the eval tests: what a successor must keep, and where it hides."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from support import call, msg, result, session_event, write_log

TODO = "Add a regression test for nested parentheses"
JOB = "npm run watch:grammar"
EDITED = "src/grammar/parser.py"
CONSTRAINT = "Never push to the main branch without a review."
ERROR = "E   ValueError: unexpected token ')' at line 42 of grammar.py"
FACTS = [
    {"kind": "state", "text": TODO},
    {"kind": "state", "text": JOB},
    {"kind": "state", "text": EDITED},
    {"kind": "instruction", "text": CONSTRAINT},
    {"kind": "detail", "text": ERROR},
]
POOR = "The user and the agent worked on the code together and made progress. "


def planted_session(path: Path, *, turns: int = 9, sid: str = "planted", facts: bool = True, window: int = 200_000) -> Path:
    """A coding session: the constraint and the error early, the state set along the way."""
    evs: list[dict[str, Any]] = [session_event(sid, window=window), msg("system", "You are a coding agent.", "sys")]
    evs.append(msg("user", f"The parser breaks on nested parentheses; fix it. {CONSTRAINT}", "u1"))
    evs += [msg("assistant", "Running the grammar tests first.", "a1"), call("c1", "run_terminal_cmd", {"command": "pytest tests/test_grammar.py"})]
    evs.append(result("c1", f"tests/test_grammar.py::test_nested FAILED\n{ERROR}\n1 failed, 11 passed", is_error=True))
    evs.append({"kind": "state", "facet": "jobs", "value": [{"id": "j1", "command": JOB, "status": "running"}]})
    for t in range(2, turns + 1):
        evs.append(msg("user", f"Step {t}: keep going with the parser work, turn {t}.", f"u{t}"))
        evs.append(msg("assistant", f"Reading and editing for step {t}.", f"a{t}"))
        evs.append(call(f"r{t}", "read_file", {"path": f"src/grammar/mod_{t}.py"}))
        evs.append(result(f"r{t}", "\n".join(f"def rule_{t}_{i}(tokens): return tokens[{i}:]" for i in range(40))))
        evs.append(call(f"e{t}", "edit_file", {"path": EDITED, "old": f"x{t}", "new": f"y{t}"}))
        evs.append(result(f"e{t}", f"edited {EDITED}"))
        if t == 3:
            evs.append({"kind": "state", "facet": "todos", "value": [{"text": TODO, "status": "pending"}, {"text": "Fix the tokenizer", "status": "completed"}]})
        evs.append(msg("assistant", f"Step {t} done.", f"a{t}.end"))
    write_log(path, evs)
    if facts:
        (path / "eval.json").write_bytes(orjson.dumps({"facts": FACTS}))
    return path


def poor_summarizer(folder: Path) -> str:
    """`cmd:` spec of a summariser that answers one fixed sentence, repeated past the degenerate floor."""
    script = folder / "poor.py"
    script.write_text(f"import sys\nsys.stdin.read()\nprint({POOR!r} * 12)\n")
    return f"cmd:{sys.executable} {script}"


def copying_summarizer(folder: Path) -> str:
    """`cmd:` spec of a summariser that answers its whole input as the summary (its own tags
    defused): a summary then holds a detail exactly when the summariser was shown it."""
    script = folder / "copying.py"
    script.write_text("import sys\nprint('<summary>' + sys.stdin.read().replace('<', '(') + '</summary>')\n")
    return f"cmd:{sys.executable} {script}"


def failing_summarizer(folder: Path) -> str:
    script = folder / "broken.py"
    script.write_text("import sys\nsys.stdin.read()\nsys.stderr.write('model weights not found\\n')\nsys.exit(4)  # 3 is the documented overflow status\n")
    return f"cmd:{sys.executable} {script}"


def reader_judge(folder: Path) -> str:
    """`cmd:` spec of a judge that reads perfectly and nothing more: it answers the rest of
    every line of its conversation holding the quoted start (so it knows what its context holds)."""
    script = folder / "judge.py"
    script.write_text(
        "import re, sys\n"
        "text = sys.stdin.read()\n"
        "context, question = text.split('<conversation>', 1)[1].split('</conversation>', 1)\n"
        "start = re.search('«(.*?)»', question).group(1)\n"
        "found = [line[line.find(start):] for line in context.splitlines() if start in line]\n"
        "print('\\n'.join(found) or 'I do not know.')\n"
    )
    return f"cmd:{sys.executable} {script}"


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ROOT with its bytes (what 'byte-identical' compares)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
