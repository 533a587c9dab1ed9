"""Chunkers: structural chunks from a sections table, size-matched fixed windows, prefixes."""
