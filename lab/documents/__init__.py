"""Documents for people: the bill as JSON and as a printable HTML page with its inline SVG
loadings chart, and the plain-text surcharge table of ``sewerwatch surcharge``.
"""

from lab.documents.bill_page import render_html, write_bills
from lab.documents.loadings_chart import loadings_svg
from lab.documents.text_tables import surcharge_table

__all__ = ["loadings_svg", "render_html", "surcharge_table", "write_bills"]
