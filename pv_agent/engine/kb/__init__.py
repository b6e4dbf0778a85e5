"""Knowledge base: load, validate, chunk and write entries (the one markdown parser lives here)."""
