"""limits: see README.md beside this file."""
