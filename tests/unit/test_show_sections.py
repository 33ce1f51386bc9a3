"""`citewise show` prints a document's sections as a tree, headings with no text of their own included."""

from __future__ import annotations

import pytest

from citewise.app.show import _print
from citewise.index.inspect import Reading, Section


def test_a_heading_with_no_paragraph_of_its_own_is_printed_over_its_subsections(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # testflow's guide: "6 Application ..." and "6.1 Acrobat Reader" hold no paragraph before 6.1.1, so
    # 6.1.1 was printed right under 5.12, as though it were a part of it
    paths = [
        ("", 4),
        ("5 Results > 5.12 Duplex Alignment Test", 1),
        ("6 Application Information > 6.1 Acrobat Reader > 6.1.1 Version Information", 6),
        ("6 Application Information > 6.1 Acrobat Reader > 6.1.2 Configuration Information", 3),
        ("6 Application Information > 6.2 Dvips > 6.2.1 Version Information", 9),
        ("6 Application Information > 6.3 Ghostscript", 6),
    ]
    reading = Reading("Testflow", "testflow_doc.pdf", "pdf", [Section(p, n) for p, n in paths], [])
    _print(reading)
    tree = capsys.readouterr().out.split("paragraphs):\n", 1)[1].split("references")[0]
    assert tree.splitlines() == [
        "  (no section)  [4]",
        "  5 Results",
        "    5.12 Duplex Alignment Test  [1]",
        "  6 Application Information",
        "    6.1 Acrobat Reader",
        "      6.1.1 Version Information  [6]",
        "      6.1.2 Configuration Information  [3]",
        "    6.2 Dvips",
        "      6.2.1 Version Information  [9]",
        "    6.3 Ghostscript  [6]",
    ]
