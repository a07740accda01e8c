"""Compaction: the pipeline and its commit protocol (reference 3.6-3.8).

Kept import-light: the view imports `continuation` from here on every read.
"""
