"""Subcommands of ``tools/pv-agent`` (one module each) and the helpers they share."""
