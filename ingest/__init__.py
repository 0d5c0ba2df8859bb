"""ingest: see README.md beside this file."""
