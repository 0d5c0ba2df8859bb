"""sewerwatch: industrial wastewater compliance monitoring for a village sewer utility."""

__version__ = "0.2.0"

#: The shell: nothing imports it; its entry point is ``sewerwatch.cli:main``.
__all__ = ["__version__"]
