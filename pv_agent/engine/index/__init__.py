"""The search index: reader interface, SQLite sidecar and PostgreSQL stores, embedders, indexer."""
