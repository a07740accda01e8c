"""Names of a session's files and folders on disk (SPEC "The session directory").

Kept apart from the store, with no imports, so a quick reader (the usage ledger's walk) can
tell sessions from staging folders without loading the store.
"""
LOG_NAME = "updates.jsonl"
# A new session (fork DEST, import --out) is built in a hidden staging folder named
# ".<DEST>.<what>-<random>.tmp" beside DEST, its log named PART_NAME until the tree is whole,
# then renamed into place. A kill can leave a staging folder (even a whole one, between the
# last two renames): a ROOT walk skips it, so it is never taken for a session.
PART_NAME = LOG_NAME + ".part"
STAGING_SUFFIX = ".tmp"
SUMMARY_NAME = "summary.json"
QUARANTINE_NAME = "quarantine"


def is_staging(name: str) -> bool:
    """Whether a folder name is a writer's staging folder (never a session)."""
    return name.startswith(".") and name.endswith(STAGING_SUFFIX)
