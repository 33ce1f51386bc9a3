"""The docs site (docs/, mkdocs.yml) builds strictly and the README stays a short way in."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
# CI (.ci/run) runs the README's test command: it must stay there, on a line of its own, exactly so
TEST_COMMAND = (
    'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install -e ".[test]"'
    " && pytest -q"
)


def nav_pages(nav: list) -> list[str]:
    """Every page a MkDocs nav names, nested sections included."""
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            pages.extend(nav_pages(value))
        elif not re.match(r"^[a-z]+://", value):
            pages.append(value)
    return pages


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_readme_is_short_and_keeps_the_test_command() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines: move reference material to docs/"
    assert TEST_COMMAND in lines, "README.md lost its test command, which CI runs verbatim"


def test_every_page_in_the_nav_exists() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    docs_dir = REPO / config.get("docs_dir", "docs")
    pages = nav_pages(config["nav"])
    assert pages, "mkdocs.yml lists no pages"
    missing = [page for page in pages if not (docs_dir / page).is_file()]
    assert not missing, f"pages in mkdocs.yml's nav that do not exist: {missing}"


def test_the_readme_links_only_to_docs_that_exist() -> None:
    readme = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#\s]+)(?:#[^)\s]*)?\)", readme)
    assert targets, "README.md links to no docs page"
    missing = sorted({target for target in targets if not (REPO / target).is_file()})
    assert not missing, f"README.md links to missing files: {missing}"


def test_how_it_works_embeds_the_saved_drawing() -> None:
    # tests/unit/test_graph_picture.py keeps docs/graph.mmd and the README current; this keeps the docs copy
    drawing = (DOCS / "graph.mmd").read_text(encoding="utf-8")
    page = (DOCS / "how-it-works.md").read_text(encoding="utf-8")
    assert f"```mermaid\n{drawing}```" in page, "docs/how-it-works.md's graph differs from docs/graph.mmd"
