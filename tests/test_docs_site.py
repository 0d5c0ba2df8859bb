"""The guide (``docs/`` as a MkDocs site, ``mkdocs.yml``): ``mkdocs build --strict`` passes (no
broken link or anchor, no page outside the nav: MkDocs' own validation, set in
``mkdocs.yml``), every page under ``docs/`` is in the nav (read here from the file, so the
check does not rest on MkDocs' settings alone), the built site loads nothing from the
internet, and every page of the office links to a section of it that exists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from web import guide

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built by ``mkdocs build --strict`` as the suite's check of it."""
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-4000:]
    return out


def _nav_pages(items) -> list[str]:
    pages = []
    for item in items:
        if isinstance(item, str):
            pages.append(item)
        elif isinstance(item, dict):
            for v in item.values():
                pages += _nav_pages(v) if isinstance(v, list) else [v]
    return pages


def test_the_guide_builds_strict(site):
    assert (site / "index.html").is_file() and (site / "office" / "lab" / "index.html").is_file()
    assert (site / "images" / "office" / "today-desktop.png").is_file()        # the screenshots, linked in


def test_every_page_under_docs_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    pages = sorted(str(Path(folder, n).relative_to(DOCS)) for folder, _d, names in os.walk(DOCS, followlinks=True)
                   for n in names if n.endswith(".md"))
    assert sorted(set(nav)) == sorted(nav), "a page twice in the nav"
    assert [p for p in pages if p not in nav] == [], "pages under docs/ that no nav entry names"
    assert [p for p in nav if p not in pages] == [], "nav entries without a page"


def test_the_guide_loads_nothing_from_the_internet(site):
    outside = []
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        outside += [f"{page.relative_to(site)}: {m}" for m in
                    re.findall(r'<(?:script|img|link|iframe|source)\b[^>]*?(?:src|href)="(?:https?:)?//[^"]+"', text)]
    assert outside == []
    css = "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*.css"))
    assert not re.search(r"@import\s+url\(\s*['\"]?https?:|fonts\.googleapis", css)


def test_every_office_page_links_to_a_section_of_the_guide_that_exists(site):
    templates = sorted(p.name for p in (ROOT / "web" / "templates").glob("*.html")
                       if '{% extends "base.html" %}' in p.read_text(encoding="utf-8"))
    assert len(templates) > 30
    assert [t for t in templates if t not in guide.PAGES and t != "error.html"] == [], \
        "pages of the office without their section of the guide (web/guide.py PAGES)"
    missing = []
    for name, (target, question) in {**guide.PAGES, **{"staff " + k: v for k, v in guide.STAFF_PAGES.items()}}.items():
        assert question.startswith("How do I ") and question.endswith("?"), question
        page, _, anchor = target.partition("#")
        html = site / page / "index.html"
        if not html.is_file():
            missing.append(f"{name}: no page {page}")
        elif anchor and f'id="{anchor}"' not in html.read_text(encoding="utf-8"):
            missing.append(f"{name}: {page} has no section #{anchor}")
    assert missing == []


def test_the_guides_own_policy_allows_its_inline_scripts_by_hash(site):
    policy = guide.csp(site)
    inline = {m for p in site.rglob("*.html") for m in re.findall(rb"<script>(.*?)</script>", p.read_bytes(), re.S)}
    assert inline, "the theme's inline scripts were looked for and not found"
    assert policy.count("'sha256-") == len(inline) and "unsafe-inline" not in policy


def test_the_readme_is_short_and_its_links_and_pictures_lead_somewhere():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)|<img [^>]*src=\"([^\"]+)\"", text)
    paths = [a or b for a, b in targets if not (a or b).startswith(("http://", "https://"))]
    assert len(paths) > 20 and any(p.endswith(".png") for p in paths)
    assert [p for p in paths if not (ROOT / p).is_file()] == []
    # the first hour and the two commands stay in the README (the guide's first page includes them)
    assert "## Your first hour" in text and "make demo\nmake test\n" in text


@pytest.mark.slow
def test_an_install_without_the_checkout_serves_the_guide(tmp_path):
    """Installed as a deployment installs it (a wheel of the package, nothing of the checkout
    beside it, no extra): the guide's tools come with the package's own requirements, its
    sources are installed below the prefix, every one of them, and the office's guide finds and
    builds them there."""
    wheels, prefix, state = tmp_path / "wheels", tmp_path / "prefix", tmp_path / "state"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    # built from a copy of the project's files: a build in the checkout writes its build/ and
    # egg-info there, beside the tests running on the other worker
    src = tmp_path / "src"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60)
    for name in filter(None, tracked.stdout.decode().split("\0")):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():            # the guide's office pictures are the previews
            (src / name).symlink_to(os.readlink(ROOT / name))
        elif (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    r = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    # (--ignore-installed: otherwise pip would first remove this environment's own install)
    r = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--ignore-installed", "--prefix", str(prefix),
                        *map(str, wheels.glob("sewerwatch-*.whl"))], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    share = prefix / guide.INSTALLED
    wanted = {f.relative_to(ROOT).as_posix() for f in guide.Guide(tmp_path, ROOT).sources()}
    assert {f.relative_to(share).as_posix() for f in share.rglob("*") if f.is_file()} == wanted
    site_packages = next(prefix.glob("lib/python3*/site-packages"))
    code = ("import importlib.metadata, re\n"
            "from pathlib import Path\n"
            "import web\nfrom web import guide\n"
            "needs = {re.split(r'[<>=!~ ;\\[]', r)[0] for r in importlib.metadata.requires('sewerwatch') "
            "if 'extra ==' not in r}\n"
            f"site = guide.Guide(Path({str(state)!r})).ensure()\n"
            "print(Path(web.__file__).resolve().parent.parent, guide.sources_root(), site, "
            "'mkdocs-material' in needs, 'mkdocs' in needs)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(site_packages)})
    assert r.returncode == 0, r.stderr[-3000:]
    packages, root, site, material, mkdocs = r.stdout.split()
    assert Path(packages) == site_packages.resolve() and Path(root) == share.resolve()
    assert (material, mkdocs) == ("True", "True")
    assert (Path(site) / "office" / "lab" / "index.html").is_file()
    assert list((Path(site) / "images" / "office").glob("*.png"))
