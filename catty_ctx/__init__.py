"""catty-ctx: the context lifecycle of LLM-agent sessions, as a library and a CLI.

The public API is imported lazily so that `import catty_ctx` (and the CLI's start-up)
stays light.
"""
from __future__ import annotations

from ._version import __version__

TYPE_CHECKING = False  # typing costs milliseconds to import; annotations here are strings
if TYPE_CHECKING:
    from typing import Any

_API = {
    "Session": ("session.store", "Session"),
    "create_session": ("session.create", "create_session"),
    "open_session": ("sources", "open_session"),
    "view": ("view.fold", "view"),
    "stream_view": ("view.fold", "stream_view"),
    "canonical": ("view.fingerprint", "canonical"),
    "prefix_fp": ("view.fingerprint", "prefix_fp"),
    "item_tokens": ("view.tokens", "item_tokens"),
    "inspect_session": ("inspect.session", "inspect_session"),
    "compact_session": ("compact.pipeline", "compact_session"),
    "externalize": ("session.blobs", "externalize"),
    "discover_instructions": ("instructions", "discover_instructions"),
    "context_report": ("view.snapshot", "context_report"),
    "prune": ("prune.pipeline", "prune"),
    "PruneOptions": ("prune.pipeline", "PruneOptions"),
    "prefix_reuse": ("prune.reuse", "prefix_reuse"),
    "import_events": ("importers.pipeline", "import_events"),
    "import_to_dir": ("importers.pipeline", "import_to_dir"),
    "detect_format": ("importers.detect", "detect"),
    "analyse": ("repair.plan", "analyse"),
    "repair_session": ("repair.fix", "repair_session"),
    "repaired_items": ("repair.fix", "repaired_items"),
    "fork": ("fork", "fork"),
    "resume": ("fork", "resume"),
    "run_eval": ("eval.pipeline", "run_eval"),
    "EvalOptions": ("eval.pipeline", "EvalOptions"),
    "ExitCode": ("errors", "ExitCode"),
    "CattyError": ("errors", "CattyError"),
    "DataError": ("errors", "DataError"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _API[name]
    except KeyError:
        raise AttributeError(f"module 'catty_ctx' has no attribute {name!r}") from None
    import importlib  # (not at the top: a cached usage answer, which needs none of the API, loads no importlib)

    return getattr(importlib.import_module(f".{module}", __name__), attr)
