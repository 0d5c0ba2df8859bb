"""dashboards: see README.md beside this file."""
