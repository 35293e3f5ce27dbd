"""Small calculations."""
