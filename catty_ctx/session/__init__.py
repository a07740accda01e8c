"""The session folder on disk (docs/architecture.md#session): events and their validation, the
JSON Lines reader, compressed logs, whole-file writes, the folder's layout, the store (open,
stream, append under the lock), event ids, new sessions, blobs and the segments archive.

Names live in the modules; importing one of them does not load the others."""
