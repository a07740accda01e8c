"""The library's tunable defaults, in one leaf module that imports nothing.

Each mechanism takes its defaults from here, and the command line declares its options'
defaults from the same names: one value per rule, and `--help` shows them without loading
the mechanisms that use them.
"""

# Writers (store)
DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a writer waits for the session lock, then exit 75

# A Dask cluster (--scheduler)
CONNECT_TIMEOUT = 10.0  # seconds to reach the scheduler (and for a first worker), then exit 69
CONNECT_TIMEOUT_MIN = 0.1  # the least --connect-timeout taken

# Large payloads (blobs)
USER_LIMIT = 25_000  # bytes of a user message kept inline (reference: first prompt > 25 KB)
TOOL_LIMIT = 40_000  # bytes of a tool output kept inline (reference: general tools 40 KB)
ASSISTANT_LIMIT = 40_000  # bytes of an assistant message kept inline (as a tool output: a long line is a slow log)
SHELL_LIMIT = 20_000  # characters of a terminal's output kept inline (the seed: terminal results 20,000 characters)
# The tools whose output is a terminal's (any case): the agents' names for their shell.
SHELL_TOOLS = ("bash", "bashoutput", "shell", "exec_command", "local_shell", "local_shell_call", "run_shell_command",
               "run_terminal_cmd", "execute_command", "terminal", "container.exec", "write_stdin")

# Compaction (compact)
DEFAULT_THRESHOLD = 85.0  # % of the window at which a session is compacted (the seed's auto-compact)
COMPACT_MODES = ("summary", "transcript", "segments")
SEGMENT_DETAILS = ("none", "minimal", "balanced", "verbose")
COMPACT_MODE = "summary"  # what the summary carrier points at: nothing, the log's seq range, a segment
SEGMENT_DETAIL = "verbose"  # how much of each item a segment keeps
SUMMARIZER = "extractive"  # who writes the summary: offline extraction
MIN_SUMMARY_CHARS = 500  # a model summary shorter than this is degenerate and retried
MAX_RESPONSE_BYTES = 32 << 20  # an openai: answer (a streamed one's bytes in all) longer than this is cut
COMPACT_DEADLINE = 300.0  # seconds a compaction may wait for its summariser (the seed's backstop), then the minimal head

# Two-pass compaction (the seed's M7)
PREFIRE_LEAD = 10.0  # points below the threshold at which a ROOT's --prefire takes a session
PREFIRE_SPLIT = 0.95  # share of the view's estimated tokens pass 1 summarises (clamped 0.05-0.95)
NOTE1_CAP = 12_000  # characters of pass 1's note kept
NOTE1_MIN_BLOCK = 1_000  # a <summary> block is the note only when longer than this (characters)

# The summariser's retries and input ladder (the seed's M6)
ATTEMPTS_PER_STAGE = 3  # attempts at each stage of the ladder
RETRY_BACKOFF = 3.0  # seconds before the second attempt (doubling); CATTY_CTX_RETRY_BACKOFF overrides
FITTED_RESERVE = 32_768  # tokens the fitted stage (and pass 2) leaves free of the window
LOSSY_FRACTION = 0.70  # share of the window the lossy stage fits into

# The segments archive (the seed's M4)
SEGMENT_CAP = 512 * 1024  # bytes of one segment file, cut between whole events
SEGMENT_KEYWORDS = 8  # keywords per segment in INDEX.md

# Announcements of skills, tools and MCP servers (the view)
DESCRIPTION_LIMIT = 400  # bytes of one description in a listing
ANNOUNCE_SHARE = 0.01  # share of the window a whole listing may take

# The token estimator (the seed's M1)
BYTES_PER_TOKEN = 4  # bytes of an item's canonical form per estimated token
IMAGE_TOKENS = 765  # tokens per image

# The continuation eval (eval)
EVAL_MODE = "segments"  # the compaction mode evaluated
EVAL_COMPACTIONS = 3  # compactions per session: its turns are split into this many parts
EVAL_JOBS = 1  # sessions evaluated at once

# Request-copy pruning (prune): grok-build's values (and Anthropic's clear_tool_uses knobs)
PRUNE_STRATEGIES = ("cache-aware", "tiered")
PRUNE_STRATEGY = "cache-aware"
WRITEBACK_AGENTS = ("claude", "codex", "grok")  # the agents `fork --to` writes sessions of
PRUNE_MIN_PERCENT = 50.0  # tiered runs only when the request is at least this % of the window
PRUNE_KEEP_TURNS = 3  # results younger than this many turns are never touched
PRUNE_OMIT_AGE = 10  # tiered: from this age on, a placeholder
PRUNE_TRIM_OVER = 4000  # tiered: in between, results longer than this (characters) are trimmed
PRUNE_TRIM_HEAD = 1500
PRUNE_TRIM_TAIL = 1500
PRUNE_HIGH_PERCENT = 90.0  # cache-aware: a batch starts when the request reaches this %
PRUNE_LOW_PERCENT = 30.0  # cache-aware: ... and clears until it is at most this %
PRUNE_IMAGE_HIGH_MIB = 47.0  # images: the oldest go when the request body reaches this many MiB ...
PRUNE_IMAGE_LOW_MIB = 25.0  # ... until it is at most this many
PRUNE_KEEP = 0  # the most recent tool results never touched (clear_tool_uses `keep`; keep_turns already guards)
PRUNE_CLEAR_AT_LEAST = 0  # a rewrite must clear at least this many tokens

# The live request path (proxy): docs/proxy.md
PROXY_PORT = 8742  # --listen's default port on 127.0.0.1
PROXY_MAX_BODY_BYTES = 32 << 20  # a request body longer than this passes through unprocessed
PROXY_SUMMARIZER = "upstream"  # who writes the proxy's summaries: upstream (the client's own, its credentials and model) or a --summarizer spec
PROXY_STEPS = "repair,prune,compact,prefire"  # the lifecycle steps run on each request copy (any subset, comma-separated)
PROXY_PRUNE_HIGH_PERCENT = 70.0  # cache-aware prune of the request copy: a batch starts at this % of the window ...
PROXY_PRUNE_LOW_PERCENT = 40.0  # ... and clears old results until the request is at most this %
PROXY_PREFIRE_LEAD = 10.0  # pass 1 of a two-pass compaction starts this many points before the threshold
PROXY_PREFIRE_WAIT = 30.0  # seconds a request at the threshold waits for a pass 1 still running, then one pass
PROXY_TAIL_PERCENT = 10.0  # % of the conversation's tokens a compaction keeps verbatim after the summary (the live tail)

# Request formats (resume)
RESUME_FORMATS = ("items", "openai", "anthropic")
RESUME_FORMAT = "items"
EXPORT_FORMATS = ("md", "html", "txt")  # export's transcript forms

# The usage ledger (usage)
USAGE_BY = ("model", "day", "week", "month", "session", "project", "agent", "block")  # the row keys of --by

# Patterns a user or a model gives (search -E, segment grep -E, recall_search): the seconds of
# matching a regular expression may spend on one session's text, then it is refused (patterns).
REGEX_BUDGET = 1.0

# The agents' hooks (docs/agents.md): the time a hook command takes at most before it gives up
# (exit 0, one line), so a compaction is never held up by us.
HOOK_DEADLINE = 10.0

# -- calibration -----------------------------------------------------------------------------
# These are one runtime's choices, to be calibrated on one's own traces (docs/design.md#m2):
# every tunable constant above can be set in one TOML file, read once when this module loads:
# `--config FILE` (which sets CATTY_CTX_CONFIG), else $XDG_CONFIG_HOME/catty-ctx/config.toml.
# Keys are the constants' names in lower case (`default_threshold = 80`). `catty-ctx config
# show` lists every one with its value and where it came from. A file that cannot be used is
# not half-applied: nothing of it is, and CONFIG_PROBLEM says why (the command line stops on it).
import os as _os  # noqa: E402 - the interpreter has loaded os and sys already
import sys  # noqa: E402

# Vocabularies, not tunables: the values a command accepts.
_FIXED = frozenset({"SHELL_TOOLS", "COMPACT_MODES", "SEGMENT_DETAILS", "PRUNE_STRATEGIES", "RESUME_FORMATS", "USAGE_BY", "WRITEBACK_AGENTS", "EXPORT_FORMATS"})
TUNABLE: tuple[str, ...] = tuple(n for n, v in list(globals().items())
                                 if n.isupper() and n not in _FIXED and type(v) in (int, float, str))
SOURCES: dict[str, str] = dict.fromkeys(TUNABLE, "default")
CONFIG_FILE: str | None = None
CONFIG_PROBLEM: str | None = None
# The range of the settings the kinds below do not bound (inclusive): a deadline of 0 would turn
# it off, a budget of 0 refuse every pattern.
_BOUNDS: dict[str, tuple[float, float]] = {
    "DEFAULT_LOCK_TIMEOUT": (0.0, 86_400.0), "CONNECT_TIMEOUT": (CONNECT_TIMEOUT_MIN, 86_400.0), "CONNECT_TIMEOUT_MIN": (0.001, 3600.0),
    "MAX_RESPONSE_BYTES": (1, 1 << 40), "COMPACT_DEADLINE": (0.1, 86_400.0), "HOOK_DEADLINE": (0.1, 3600.0), "REGEX_BUDGET": (0.01, 86_400.0),
}


def config_path() -> str:
    """The config file this run reads (it may not exist)."""
    named = _os.environ.get("CATTY_CTX_CONFIG")
    if named:
        return named
    base = _os.environ.get("XDG_CONFIG_HOME") or _os.path.join(_os.path.expanduser("~"), ".config")
    return _os.path.join(base, "catty-ctx", "config.toml")


def _load_config() -> None:
    global CONFIG_FILE, CONFIG_PROBLEM
    path = config_path()
    if not _os.path.isfile(path):
        if _os.environ.get("CATTY_CTX_CONFIG"):
            CONFIG_PROBLEM = f"{path}: no such config file (--config)"
        return
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    data, text = b"", ""
    try:
        with open(path, "rb") as f:
            data = f.read()
        text = data.decode()
        doc = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        CONFIG_PROBLEM = f"{path}:{data.count(_NEWLINE, 0, exc.start) + 1}: not a readable TOML file (not UTF-8)"
        return
    except (OSError, ValueError, RecursionError) as exc:
        CONFIG_PROBLEM = f"{path}{_decode_line(str(exc), text)}: not a readable TOML file ({exc})"
        return
    values = globals()
    changes: dict[str, object] = {}
    for key, value in doc.items():
        name = str(key).upper()
        where = f"{path}{_key_line(text, str(key))}"
        if name not in TUNABLE:
            CONFIG_PROBLEM = f"{where}: unknown setting {key!r} (catty-ctx config show lists them)"
            return
        kind = type(values[name])
        if kind is float and type(value) is int:
            value = float(value)
        if type(value) is not kind:
            CONFIG_PROBLEM = f"{where}: {key} must be {kind.__name__}, not {type(value).__name__} ({value!r})"
            return
        bad = _out_of_range(name, value)
        if bad:
            CONFIG_PROBLEM = f"{where}: {key} = {value!r}: {bad}"
            return
        changes[name] = value
    values.update(changes)
    SOURCES.update(dict.fromkeys(changes, path))
    CONFIG_FILE = path


_NEWLINE = b"\n"


def _decode_line(message: str, text: str) -> str:
    """`:N` for the line a TOML error MESSAGE names ("at line N, column C", or the document's end)."""
    if "(at end of document)" in message:
        return f":{len(text.splitlines())}" if text.strip() else ""
    _, found, rest = message.rpartition("(at line ")
    number = rest.split(",", 1)[0]
    return f":{number}" if found and number.isdigit() else ""


def _key_line(text: str, key: str) -> str:
    """`:N` for the line of TEXT that sets KEY at the top level (a bare or quoted key), "" when none does."""
    for number, line in enumerate(text.splitlines(), 1):
        head = line.split("=", 1)[0].strip() if "=" in line else line.strip()
        if head in (key, f'"{key}"', f"'{key}'", f"[{key}]", f"[[{key}]]") or head.startswith((f"{key}.", f"[{key}.")):
            return f":{number}"
    return ""


# What each kind of setting must be: shares of 1, percents, counts of at least 1, the rest >= 0.
SHARES = frozenset({"PREFIRE_SPLIT", "LOSSY_FRACTION", "ANNOUNCE_SHARE"})
PERCENTS = frozenset({"DEFAULT_THRESHOLD", "PREFIRE_LEAD", "PRUNE_MIN_PERCENT", "PRUNE_HIGH_PERCENT", "PRUNE_LOW_PERCENT"})
AT_LEAST_ONE = frozenset({"ATTEMPTS_PER_STAGE", "BYTES_PER_TOKEN", "NOTE1_CAP", "SEGMENT_CAP", "EVAL_COMPACTIONS", "EVAL_JOBS",
                           "USER_LIMIT", "TOOL_LIMIT", "ASSISTANT_LIMIT", "SHELL_LIMIT"})
CHOICES = {"COMPACT_MODE": COMPACT_MODES, "SEGMENT_DETAIL": SEGMENT_DETAILS, "EVAL_MODE": COMPACT_MODES, "PRUNE_STRATEGY": PRUNE_STRATEGIES,
            "RESUME_FORMAT": RESUME_FORMATS}


def _out_of_range(name: str, value: object) -> str:
    """Why VALUE cannot be NAME's ("" when it can)."""
    if name in CHOICES:
        return "" if value in CHOICES[name] else f"must be one of {', '.join(CHOICES[name])}"
    if not isinstance(value, (int, float)):
        return ""
    if value != value or value in (float("inf"), float("-inf")):
        return "must be a finite number"
    if name in _BOUNDS:
        low, high = _BOUNDS[name]
        return "" if low <= value <= high else f"must be from {low:g} to {high:g}"
    if name in SHARES:
        return "" if 0 < value <= 1 else "must be a share of 1 (more than 0, at most 1)"
    if name in PERCENTS:
        return "" if 0 <= value <= 100 else "must be a percentage (0 to 100)"
    if name in AT_LEAST_ONE:
        return "" if value >= 1 else "must be at least 1"
    return "" if value >= 0 else "must not be negative"


_load_config()
