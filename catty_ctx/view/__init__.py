"""The fold into provider items (docs/architecture.md#view): the fold itself (`fold`), canonical
fingerprints, token estimates, the head a compaction leaves, announcements, the pairing check and
its in-memory and persisted repairs, provider documents, prompt-context snapshots.

Names live in the modules; importing one of them does not load the others."""
