"""Subcommands of ``snapcheck``; each module exposes ``register(group)``."""
