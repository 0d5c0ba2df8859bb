"""sewerwatch: industrial wastewater compliance monitoring for a village sewer utility."""

__version__ = "0.1.0"
