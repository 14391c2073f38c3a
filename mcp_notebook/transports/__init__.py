"""Transports: bytes in and out of the sans-IO protocol core."""
