"""Shared pytest configuration: every test has a timeout (pyproject `timeout`), markers are strict."""
