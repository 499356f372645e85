"""Test and benchmark helpers that are not part of the library."""
