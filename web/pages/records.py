"""The year's records as one download from the Reports page: the folder ``sewerwatch export
--year`` writes (every table as CSV and Parquet, the signed reports, notices and bills as their
files, the manifest of SHA-256 sums, the README of the columns), made by the same function
(:func:`enforcement.export.export_year`) and sent as a zip of that folder.

Staff who may look at the program's records (``view``, as the Reports page's other files) may
download it; an industrial user's portal account may not (the guard refuses it, 403).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from litestar import Request, get
from litestar.background_tasks import BackgroundTask
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from litestar.response import File

from web import authz

VIEW = {authz.OPT: "view"}


def file_name(year: int) -> str:
    """The download's name: ``records-2026.zip`` (its folder inside: ``records-2026``)."""
    return f"records-{year}.zip"


@get("/reports/{year:str}/records.zip", opt=VIEW, sync_to_thread=True)
def records_zip(request: Request, year: FromPath[str]) -> File:
    """The year's export as a zip, written into a folder of its own in the state folder and
    removed once it is sent."""
    from enforcement import export

    if not year.isdigit():
        raise NotFoundException(f"no year {year}")
    office = request.app.state.office
    y = int(year)
    work = Path(tempfile.mkdtemp(prefix="export-", dir=_scratch(office)))
    try:
        folder = work / f"records-{y}"
        office.read(lambda conn: export.export_year(conn, office.cfg, y, folder))
        target = export.zip_folder(folder, work / file_name(y))
        shutil.rmtree(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return File(path=target, filename=file_name(y), media_type="application/zip",
                background=BackgroundTask(shutil.rmtree, work, ignore_errors=True))


def _scratch(office) -> Path:
    """The state folder's ``exports`` folder (on the disk the records are on, not /tmp)."""
    path = office.state_dir / "exports"
    path.mkdir(parents=True, exist_ok=True)
    return path


ROUTES = [records_zip]
