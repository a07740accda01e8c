"""Compaction (docs/compact.md): the pipeline and its commit protocol (`pipeline`), the summariser
ladder, the summarisers, two-pass prefire, artifacts and spend.

Empty on purpose: a reader of the segments archive (which lives in `session.segments`) or of one
summariser must not load the whole pipeline."""
