"""Documents for people: the one letter-size page template and PDF renderer (WeasyPrint) of
bills, notices and reports; the bill as JSON, printable HTML and PDF with its inline SVG
loadings chart; and the plain-text surcharge table of ``sewerwatch surcharge``.
"""

from lab.documents.bill_page import render_html, summary, write_bills
from lab.documents.loadings_chart import chart_series, loadings_figure, loadings_svg
from lab.documents.pdf import Letterhead, document, letterhead, page_count, page_png, page_size, pdf_text, write_pdf
from lab.documents.text_tables import surcharge_table

__all__ = ["Letterhead", "chart_series", "document", "letterhead", "loadings_figure", "loadings_svg", "page_count",
           "page_png", "page_size", "pdf_text", "render_html", "summary", "surcharge_table", "write_bills", "write_pdf"]
