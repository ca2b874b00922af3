"""Helpers the tests share (not part of the library)."""
