"""The search index: an incremental SQLite FTS5 index of every session's text under some ROOTs,
which `search` asks for the files that may hold a match, and each session's texts, which
`search` matches without reading the session again (docs/search.md#the-index)."""
from .literals import needles
from .store import Index, Report, index_path, ranked, unit_files
from .texts import Texts, event_texts, read_texts

__all__ = ["Index", "Report", "Texts", "event_texts", "index_path", "needles", "ranked", "read_texts", "unit_files"]
