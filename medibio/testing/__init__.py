"""Helpers for tests and CI that build real-looking inputs from local material (no network)."""
