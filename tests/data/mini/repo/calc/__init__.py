"""Tiny calculator."""
