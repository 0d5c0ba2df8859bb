"""simulators: see README.md beside this file."""
