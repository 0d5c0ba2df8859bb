"""alerts: see README.md beside this file."""
