"""Test helpers that ship with the app: a fake clock and a local GitHub stand-in."""
