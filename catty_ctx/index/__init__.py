"""The search index: an incremental SQLite FTS5 index of every session's text under some ROOTs,
which `search` asks for the files that may hold a match (docs/search.md#the-index)."""
from .literals import needles
from .store import Index, Report, index_path, ranked, unit_files

__all__ = ["Index", "Report", "index_path", "needles", "ranked", "unit_files"]
