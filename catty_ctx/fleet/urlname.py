"""Whether a PATH argument names a URL: a test on the name alone, in a leaf module.

Its own module so that what tests a name only (the usage walk, on the cached answer's path)
loads neither the errors nor fsspec's support (`urls`).
"""
from __future__ import annotations


def is_url(target: object) -> bool:
    """Whether TARGET names a URL (scheme://…) rather than a local path."""
    if not isinstance(target, str):
        return False
    scheme, sep, _ = target.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").replace("-", "").replace(".", "").isalnum()
