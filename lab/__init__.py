"""lab: see README.md beside this file."""
