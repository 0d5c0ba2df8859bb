"""Letters the utility writes: templates held as data, edited and previewed in the office,
issued and kept as issued, exported as DOCX, brought back as PDF.

===================  ===========================================================================
module               holds
===================  ===========================================================================
``templates``        the kinds: the program's (``defaults/``) and the utility's folder
                     (``[documents] letters``); the office's save (atomic, every text kept)
``rendering``        the sandboxed Jinja2 rendering; errors in one line naming the line
``kinds``            what each kind is about (the same subject is issued once) and adds
``issuing``          preview, issue, the letters issued, their PDFs, a PDF brought back
``docx``             a letter as an editable DOCX (docxtpl)
===================  ===========================================================================

The office (``web/pages/letters.py``) and ``sewerwatch letters`` (:mod:`enforcement.cli_letters`)
call these same functions. docs/office/letters.md is the guide.
"""

from __future__ import annotations

from enforcement.letters.issuing import issue, issued_document, letter, letters, pdf, preview, replace_pdf  # noqa: F401
from enforcement.letters.templates import kinds, save, template  # noqa: F401
