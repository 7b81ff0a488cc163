"""Architectures: how a program's package instance maps to the target's pipeline (v1model today)."""
