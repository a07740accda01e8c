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

# Compaction (compact)
DEFAULT_THRESHOLD = 85.0  # % of the window at which a session is compacted (the seed's auto-compact)
COMPACT_MODES = ("summary", "transcript", "segments")
SEGMENT_DETAILS = ("none", "minimal", "balanced", "verbose")
COMPACT_MODE = "summary"  # what the summary carrier points at: nothing, the log's seq range, a segment
SEGMENT_DETAIL = "verbose"  # how much of each item a segment keeps
SUMMARIZER = "extractive"  # who writes the summary: offline extraction
MIN_SUMMARY_CHARS = 500  # a model summary shorter than this is degenerate and retried
COMPACT_DEADLINE = 300.0  # seconds a compaction may wait for its summariser (the seed's backstop), then the minimal head

# The continuation eval (eval)
EVAL_MODE = "segments"  # the compaction mode evaluated
EVAL_COMPACTIONS = 3  # compactions per session: its turns are split into this many parts
EVAL_JOBS = 1  # sessions evaluated at once

# Request-copy pruning (prune): grok-build's values (and Anthropic's clear_tool_uses knobs)
PRUNE_STRATEGIES = ("cache-aware", "tiered")
PRUNE_STRATEGY = "cache-aware"
WRITEBACK_AGENTS = ("claude", "codex")  # the agents `fork --to` writes sessions of
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

# Request formats (resume)
RESUME_FORMATS = ("items", "openai", "anthropic")
RESUME_FORMAT = "items"

# The usage ledger (usage)
USAGE_BY = ("model", "day", "week", "month", "session", "project", "agent")  # the row keys of --by
