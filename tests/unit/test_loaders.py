"""File loaders: every format, the unarXive and BEIR layouts, errors, and the bundled sample corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

import docx
import pytest

import citewise
from citewise.index.document import BibEntry, Document, LoadError, Paragraph
from citewise.index.loaders import SUPPORTED_SUFFIXES, iter_files, load_path, unsupported_files

SAMPLES = Path(citewise.__file__).parent / "samples"
UNARXIVE = SAMPLES / "unarxive_sample.jsonl"
"""Three real unarXive records (the bundled sample): the tests read nothing outside the repository."""
CC_BY = "http://creativecommons.org/licenses/by/4.0/"


def load_one(path: Path) -> Document:
    documents = load_path(path)
    assert len(documents) == 1
    return documents[0]


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal valid PDF: one Helvetica text line per string, top to bottom, with a correct xref table."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for lines in pages:
        shown = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines]
        stream = "\n".join(["BT /F1 10 Tf 14 TL 50 750 Td", *(f"({line}) Tj T*" for line in shown), "ET"])
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    trailer = f"/Size {len(objects) + 1} /Root 1 0 R"
    if title is not None:
        objects.append(f"<< /Title ({title}) >>")
        trailer += f" /Info {len(objects)} 0 R"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


# --- iter_files and dispatch ---------------------------------------------------------------------------


def test_iter_files_walks_sorted_skips_hidden_and_unsupported(tmp_path: Path) -> None:
    for name in [
        "b.md",
        "a.txt",
        "sub/c.pdf",
        "sub/deeper/d.jsonl",
        ".hidden.txt",
        ".git/e.txt",
        "notes.xyz",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    explicit = tmp_path / "notes.xyz"
    files = iter_files([tmp_path, explicit, tmp_path / "a.txt"])
    assert files == [
        tmp_path / "a.txt",
        tmp_path / "b.md",
        tmp_path / "sub" / "c.pdf",
        tmp_path / "sub" / "deeper" / "d.jsonl",
        explicit,
    ]


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG")
    with pytest.raises(LoadError, match=r"unsupported file type '\.png'.*\.txt"):
        load_path(path)
    assert ".md" in SUPPORTED_SUFFIXES and ".jsonl" in SUPPORTED_SUFFIXES


def test_missing_and_empty_and_badly_encoded_files(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="no such file"):
        load_path(tmp_path / "missing.txt")
    (tmp_path / "blank.md").write_text(" \n\n \n")
    with pytest.raises(LoadError, match="empty file"):
        load_path(tmp_path / "blank.md")
    (tmp_path / "binary.txt").write_bytes(b"PK\x03\x04\x00\x00\xff\xfe\x00" * 50)
    with pytest.raises(LoadError, match="a binary file, not text"):
        load_path(tmp_path / "binary.txt")


def test_a_latin_1_text_file_is_read_in_its_encoding(tmp_path: Path) -> None:
    text = "Le caf\xe9 cr\xe8me co\xfbte deux euros \xe0 la gare. " * 3
    (tmp_path / "latin.txt").write_bytes(f"Caf\xe9s\n\n{text}\n".encode("latin-1"))
    (document,) = load_path(tmp_path / "latin.txt")
    assert "caf\xe9 cr\xe8me co\xfbte" in " ".join(p.text for p in document.paragraphs)


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("El ni\u00f1o comi\u00f3 pi\u00f1a en la ma\u00f1ana.", "latin-1"),  # read as cp1250: "ni\u0144o"
        ("Die Stra\u00dfe ist sch\u00f6n und gr\u00fcn.", "cp1252"),
        ("Le c\u0153ur a ses raisons \u2014 dit-on.", "cp1252"),
        ("Za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144, to jest polski tekst.", "cp1250"),
        ("Привет, как дела? Это русский текст.", "cp1251"),
    ],
)
def test_a_short_text_in_a_legacy_encoding_reads_right(tmp_path: Path, text: str, encoding: str) -> None:
    (tmp_path / "short.txt").write_bytes(text.encode(encoding))
    (document,) = load_path(tmp_path / "short.txt")
    assert " ".join(p.text for p in document.paragraphs) == text


def test_a_folders_files_of_other_types_are_named_not_skipped_silently(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nKiwi birds cannot fly.\n")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    (tmp_path / "sheet.xlsx").write_bytes(b"PK")
    (tmp_path / ".hidden.bin").write_bytes(b"x")
    assert [p.name for p in iter_files([tmp_path])] == ["notes.md"]
    assert [p.name for p in unsupported_files([tmp_path])] == ["photo.png", "sheet.xlsx"]


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("Some text.")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(LoadError, match="unreadable: Permission denied"):
        load_path(path)


# --- plain text ----------------------------------------------------------------------------------------

TXT = """Evidence Matters

Citation practices differ across fields (Lee et al., 2021). Some prefer
numbers, others names and years, as Park (2019a) notes.

1 Introduction

Retrieval grounds answers in sources
(Lee & Kim 2020; Park, 2019a). x[0] is not a citation.

2. Methods

We did three things:
- one
- two

References

Lee, J., Park, S., and Kim, H. 2021. Grounded answers.
  Journal of Retrieval, 12(3).
Lee, J. and Kim, H. 2020. Hybrid search. In Proc. SIGIR.
Park, S. 2019a. Names and years. Citation Quarterly.
"""


def test_txt_sections_paragraphs_bibliography_and_citations(tmp_path: Path) -> None:
    path = tmp_path / "paper.txt"
    path.write_text(TXT)
    document = load_one(path)
    assert document.title == "Evidence Matters"
    assert document.source == str(path)
    assert [(p.section, p.citations) for p in document.paragraphs] == [
        ("", ("lee2021", "park2019a")),
        ("1 Introduction", ("lee2020", "park2019a")),
        ("2. Methods", ()),
    ]
    assert document.paragraphs[1].text == (
        "Retrieval grounds answers in sources (Lee & Kim 2020; Park, 2019a). x[0] is not a citation."
    )
    assert document.paragraphs[2].text == "We did three things:\n- one\n- two"
    assert list(document.bibliography) == ["lee2021", "lee2020", "park2019a"]
    assert document.bibliography["lee2021"].text.endswith("Journal of Retrieval, 12(3).")


def test_txt_title_falls_back_to_the_stem(tmp_path: Path) -> None:
    path = tmp_path / "plain-notes.txt"
    path.write_text("This opening line is a sentence.\n\nAnother paragraph.\n")
    document = load_one(path)
    assert document.title == "plain-notes"
    assert [p.text for p in document.paragraphs] == ["This opening line is a sentence.", "Another paragraph."]


def test_document_id_is_stable_and_follows_the_text(tmp_path: Path) -> None:
    path = tmp_path / "paper.txt"
    path.write_text(TXT)
    first, second = load_one(path).id, load_one(path).id
    assert first == second
    path.write_text(TXT.replace("three things", "four things"))
    assert load_one(path).id != first


# --- Markdown ------------------------------------------------------------------------------------------

MD = """---
layout: post
---
# A Guide to *Citations*

Intro with **bold**, a [link](https://example.org), `code` and __more__ [1].

## Methods

### Data

We used data_set_one and *emphasis* here [2-3].

```python
x = y[0]

print(x)
```

> Quoted text [1].

## References

1. Smith, A. 2020. First.
2. Jones, B. 2019. Second.
3. Doe, C. 2018. Third.
"""


def test_markdown_headings_emphasis_code_and_references(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MD)
    document = load_one(path)
    assert document.title == "A Guide to Citations"
    assert [(p.section, p.text, p.citations) for p in document.paragraphs] == [
        ("", "Intro with bold, a link, code and more [1].", ("1",)),
        ("Methods > Data", "We used data_set_one and emphasis here [2-3].", ("2", "3")),
        ("Methods > Data", "x = y[0]\n\nprint(x)", ()),
        ("Methods > Data", "Quoted text [1].", ("1",)),
    ]
    assert document.bibliography == {
        "1": BibEntry("1", "Smith, A. 2020. First."),
        "2": BibEntry("2", "Jones, B. 2019. Second."),
        "3": BibEntry("3", "Doe, C. 2018. Third."),
    }


def test_markdown_without_h1_uses_front_matter_title_or_stem(tmp_path: Path) -> None:
    titled = tmp_path / "a.md"
    titled.write_text('---\ntitle: "From Front Matter"\n---\n## Part\n\nText.\n')
    assert load_one(titled).title == "From Front Matter"
    untitled = tmp_path / "b-notes.md"
    untitled.write_text("## Part\n\nText.\n\n## Other\n\nMore.\n")
    document = load_one(untitled)
    assert document.title == "b-notes"
    assert [(p.section, p.text) for p in document.paragraphs] == [("Part", "Text."), ("Other", "More.")]


# --- HTML ----------------------------------------------------------------------------------------------

HTML = """<html><head><title>Page Title</title><style>p {color: red}</style><script>var a = 1;</script></head>
<body><nav><p>Menu entry</p></nav>
<h1>Page Title</h1>
<p>Hello <b>world</b><sup>[1]</sup>, see Lee (2021).</p>
<h2>Part A</h2><h3>Sub</h3>
<ul><li>item one</li><li>item <p>two</p></li></ul>
<blockquote><p>quote</p><p>more</p></blockquote>
<pre>code
  block</pre>
<h2>References</h2>
<ol><li>Some Author. A work. 2020.</li><li>Lee, K. 2021. Other.</li></ol>
</body></html>"""


def test_html_title_sections_blocks_and_references(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(HTML)
    document = load_one(path)
    assert document.title == "Page Title"
    assert [(p.section, p.text, p.citations) for p in document.paragraphs] == [
        ("", "Hello world [1], see Lee (2021).", ("1", "2")),
        ("Part A > Sub", "item one", ()),
        ("Part A > Sub", "item two", ()),
        ("Part A > Sub", "quote more", ()),
        ("Part A > Sub", "code\n  block", ()),
    ]
    assert document.bibliography == {
        "1": BibEntry("1", "Some Author. A work. 2020."),
        "2": BibEntry("2", "Lee, K. 2021. Other."),
    }
    assert not any("Menu" in p.text or "var a" in p.text or "color" in p.text for p in document.paragraphs)


def test_htm_title_from_h1_when_there_is_no_title_tag(tmp_path: Path) -> None:
    path = tmp_path / "page.htm"
    path.write_text("<h1>Heading One</h1><p>Text.</p><h2>Two</h2><p>More.</p>")
    document = load_one(path)
    assert document.title == "Heading One"
    assert [(p.section, p.text) for p in document.paragraphs] == [("", "Text."), ("Two", "More.")]


# --- DOCX ----------------------------------------------------------------------------------------------


def test_docx_title_headings_table_and_references(tmp_path: Path) -> None:
    word = docx.Document()
    word.add_heading("A Word Paper", level=0)
    word.add_heading("Background", level=1)
    word.add_paragraph("Prior work showed this [1].")
    word.add_heading("Details", level=2)
    word.add_paragraph("More details (Smith, 2020).")
    table = word.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "left", "right"
    word.add_heading("Results", level=1)
    word.add_paragraph("It works [2].")
    word.add_heading("References", level=1)
    word.add_paragraph("[1] Smith, J. 2020. A paper.")
    word.add_paragraph("[2] Jones, K. 2019. Another.")
    path = tmp_path / "paper.docx"
    word.save(str(path))
    document = load_one(path)
    assert document.title == "A Word Paper"
    assert [(p.section, p.text, p.citations) for p in document.paragraphs] == [
        ("Background", "Prior work showed this [1].", ("1",)),
        ("Background > Details", "More details (Smith, 2020).", ("1",)),
        ("Background > Details", "left | right", ()),
        ("Results", "It works [2].", ("2",)),
    ]
    assert list(document.bibliography) == ["1", "2"]


def test_corrupt_docx(tmp_path: Path) -> None:
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    with pytest.raises(LoadError, match="corrupt or unreadable DOCX"):
        load_path(path)


# --- PDF -----------------------------------------------------------------------------------------------

PDF_PAGES = [
    [
        "Learning to Cite Sources",
        "1 Introduction",
        "Retrieval systems answer questions from documents and they need to show where each",
        "claim comes from, as earlier work argued [1]. A good exam-",
        "ple is a report that cites its sources.",
        "Short closing line here.",
        "The second paragraph starts here and continues with more words to fill the line out to",
        "the usual width of a line in the document [2, 3].",
    ],
    [
        "2 Methods",
        "We split text into paragraphs and link the markers to entries of the list of references",
        "that closes the paper, following the approach of earlier systems built for the task.",
        "References",
        "[1] A. Smith. Citing sources. Journal of Examples, 2020.",
        "[2] B. Jones. Retrieval at scale.",
        "Proceedings of Things, 2019. [3] C. Doe. Another paper. 2018.",
    ],
]


def test_pdf_paragraphs_headings_dehyphenation_and_references(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(PDF_PAGES))
    document = load_one(path)
    assert document.title == "Learning to Cite Sources"
    assert document.metadata == {"pages": 2}
    assert [(p.section, p.citations) for p in document.paragraphs] == [
        ("1 Introduction", ("1",)),
        ("1 Introduction", ()),
        ("1 Introduction", ("2", "3")),
        ("2 Methods", ()),
    ]
    assert document.paragraphs[0].text == (
        "Retrieval systems answer questions from documents and they need to show where each claim comes "
        "from, as earlier work argued [1]. A good example is a report that cites its sources."
    )
    assert document.paragraphs[1].text == "Short closing line here."
    assert document.bibliography == {
        "1": BibEntry("1", "A. Smith. Citing sources. Journal of Examples, 2020."),
        "2": BibEntry("2", "B. Jones. Retrieval at scale. Proceedings of Things, 2019."),
        "3": BibEntry("3", "C. Doe. Another paper. 2018."),
    }


def test_pdf_title_from_metadata(tmp_path: Path) -> None:
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(PDF_PAGES, title="Metadata Title"))
    document = load_one(path)
    assert document.title == "Metadata Title"
    assert [(p.section, p.text) for p in document.paragraphs[:2]] == [
        ("", "Learning to Cite Sources"),
        ("1 Introduction", load_one(path).paragraphs[1].text),
    ]
    same = tmp_path / "same.pdf"
    same.write_bytes(make_pdf(PDF_PAGES, title="Learning to Cite Sources"))
    assert load_one(same).paragraphs[0].section == "1 Introduction"


def test_pdf_without_text_and_corrupt_pdf(tmp_path: Path) -> None:
    scanned = tmp_path / "scan.pdf"
    scanned.write_bytes(make_pdf([[]]))
    with pytest.raises(LoadError, match=r"no extractable text \(scanned PDF\?\)"):
        load_path(scanned)
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.4\nthis is garbage, not objects\n")
    with pytest.raises(LoadError, match="corrupt or unreadable PDF"):
        load_path(corrupt)


# --- JSONL: BEIR ---------------------------------------------------------------------------------------


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_beir_jsonl_one_document_per_line(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            {
                "_id": "4983",
                "title": "Microstructural development",
                "text": "Alterations of the architecture.",
            },
            {"_id": 5836, "title": "", "text": "Second abstract."},
        ],
    )
    documents = load_path(path)
    assert [(d.key, d.title, d.metadata) for d in documents] == [
        ("4983", "Microstructural development", {"beir_id": "4983"}),
        ("5836", "5836", {"beir_id": "5836"}),
    ]
    assert documents[0].paragraphs == [Paragraph("Alterations of the architecture.", "")]
    assert documents[0].bibliography == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"_id": "1", "title": "t", "text": "x"}\n\n{"_id": "2", "text": \n', r"line 3: malformed JSON"),
        ('{"_id": "1", "text": "x"}\n[1, 2]\n', r"line 2: expected a JSON object, got list"),
        ('{"_id": "1", "text": "x"}\n{"title": "no id"}\n', r"line 2: not a BEIR record"),
        ('{"foo": 1}\n', r"line 1: unknown JSONL layout"),
        ("\n  \n", r"empty file"),
    ],
)
def test_bad_jsonl(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(LoadError, match=message):
        load_path(path)


# --- JSONL: unarXive -----------------------------------------------------------------------------------


def unarxive_record(**overrides: object) -> dict[str, object]:
    record: dict[str, object] = {
        "paper_id": "2200.00001",
        "metadata": {
            "title": "A Small\n  Paper",
            "authors": "Ada Lovelace,\n  Alan Turing",
            "license": CC_BY,
            "categories": "cs.CL",
        },
        "discipline": "Computer Science",
        "abstract": {"section": "Abstract", "text": "  We study\nthings {{cite:b}}.\n"},
        "body_text": [
            {
                "section": "Introduction",
                "sec_number": "1",
                "text": "See {{cite:b}} and {{cite:a}}, again {{cite:b}}; "
                "{{formula:f1}} in {{figure:g1}} and {{table:t1}}.",
            },
            {"section": "Introduction", "sec_number": "1", "text": "{{formula:f2}}\n"},
            {"section": "Thanks", "sec_number": "-1", "text": "We thank {{cite:missing}} people."},
        ],
        "bib_entries": {
            "a": {"bib_entry_raw": "A. First. 2001."},
            "b": {"bib_entry_raw": "B. Second.\n 2002."},
        },
    }
    record.update(overrides)
    return record


def test_unarxive_markers_sections_bibliography_and_metadata(tmp_path: Path) -> None:
    document = load_one(write_jsonl(tmp_path / "papers.jsonl", [unarxive_record()]))
    assert document.key == "2200.00001"
    assert document.title == "A Small Paper"
    assert document.metadata == {
        "arxiv_id": "2200.00001",
        "authors": "Ada Lovelace, Alan Turing",
        "license": CC_BY,
        "categories": "cs.CL",
        "discipline": "Computer Science",
    }
    assert document.bibliography == {
        "a": BibEntry("a", "A. First. 2001."),
        "b": BibEntry("b", "B. Second. 2002."),
    }
    assert document.paragraphs == [
        Paragraph("We study things [2].", "Abstract", ("b",)),
        Paragraph(
            "See [2] and [1], again [2]; [formula] in [figure] and [table].", "1 Introduction", ("b", "a")
        ),
        Paragraph("We thank [?] people.", "Thanks", ()),
    ]


def test_unarxive_footnotes_glued_into_a_word_and_ref_placeholders_read_as_text(tmp_path: Path) -> None:
    glued = (
        "GJ 486bAlternative names include: Wolf 437b and TOI 1827b. is a 1.3 R{{formula:f}}  exoplanet. "
        "Examples are in Table REF . Section REF shows more (Fig. REF ); McDonald said so. "
        "and the RoBERTa model works."
    )
    record = unarxive_record(body_text=[{"section": "Introduction", "sec_number": "1", "text": glued}])
    document = load_one(write_jsonl(tmp_path / "papers.jsonl", [record]))
    assert document.paragraphs[1].text == (
        "GJ 486b is a 1.3 R[formula] exoplanet. Examples are in a table. "
        "Another section shows more (a figure); McDonald said so. and the RoBERTa model works. "
        "(Footnote: Alternative names include: Wolf 437b and TOI 1827b.)"
    )


def test_the_sample_s_glued_footnote_is_moved_out_of_its_sentence() -> None:
    gj486b = next(d for d in load_path(UNARXIVE) if d.key == "2212.11816")
    text = " ".join(p.text for p in gj486b.paragraphs)
    assert "486bAlternative" not in text and "REF" not in text and "[formula]" not in text.split("Table")[0]
    assert "GJ 486b is a 1.3 R and 2.8 M" in text  # its R_\\oplus came as "_": left out, not "[formula]"
    assert "did not account for clouds, the constraints" in text  # "(see Section )" carried nothing


@pytest.mark.parametrize(
    ("raw", "readable"),
    [
        ("We deduce Theorem REF from Lemmas REF and REF .", "We deduce a theorem from lemmas."),
        ("Combining (REF ), (REF ) and (REF ) completes it.", "Combining equations completes it."),
        ("Satisfying (REF ), it holds.", "Satisfying an equation, it holds."),
        ("the curve in figure REF ) and section REF .", "the curve in a figure) and another section."),
        ("See Eq.(REF ) and Fig.\u00a0REF (a).", "See an equation and a figure (a)."),
        ("Clouds (see Section ), then Properties REF and REF .", "Clouds, then properties."),
        ("Prior work [3] REF shows it; Table ref stays.", "Prior work [3] shows it; Table ref stays."),
        ("Proposition REF holds.", "A proposition holds."),
    ],
)
def test_unarxive_numberless_pointers_read_as_words(tmp_path: Path, raw: str, readable: str) -> None:
    record = unarxive_record(body_text=[{"section": "Results", "sec_number": "2", "text": raw}])
    document = load_one(write_jsonl(tmp_path / "papers.jsonl", [record]))
    assert document.paragraphs[-1].text == readable


def test_unarxive_malformed_record_names_the_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "papers.jsonl", [unarxive_record(), unarxive_record(body_text=[42])])
    with pytest.raises(LoadError, match="line 2: malformed unarXive record"):
        load_path(path)


def test_real_unarxive_record(tmp_path: Path) -> None:
    raw = next(line for line in UNARXIVE.open(encoding="utf-8") if '"paper_id": "2212.11808"' in line[:40])
    record = json.loads(raw)
    path = tmp_path / "one.jsonl"
    path.write_text(raw)
    document = load_one(path)
    assert document.key == "2212.11808"
    assert document.title == "A Mutation-based Text Generation for Adversarial Machine Learning Applications"
    assert document.metadata["license"] == CC_BY
    assert document.metadata["authors"] == "Jesus Guerrero, Gongbo Liang and Izzat Alsmadi"
    assert document.paragraphs[0].section == "Abstract"
    assert document.paragraphs[1].section == "1 Introduction"
    assert "1.1 Poisoning attacks: AML attacks on the learning stage: Manipulating the training data" in {
        p.section for p in document.paragraphs
    }
    bib_order = list(record["bib_entries"])
    assert list(document.bibliography) == bib_order
    assert document.bibliography[bib_order[0]].text.startswith("Alex M Lamb, Anirudh Goyal")
    assert not any("{{" in p.text for p in document.paragraphs)
    cited = [p for p in document.paragraphs if p.citations]
    assert len(cited) >= 10
    for paragraph in cited:  # every "[n]" in the text is the n-th bibliography entry, and is in citations
        numbers = [int(n) for n in re.findall(r"\[(\d+)\]", paragraph.text)]
        assert tuple(dict.fromkeys(bib_order[n - 1] for n in numbers)) == paragraph.citations
    originals = [entry["text"] for entry in record["body_text"] if "{{cite:" in entry["text"]]
    first_ids = list(dict.fromkeys(re.findall(r"\{\{cite:([^}]+)\}\}", originals[0])))
    assert cited[0].citations == tuple(first_ids)


# --- bundled sample corpus -----------------------------------------------------------------------------


def test_bundled_samples_are_small_cc_by_papers_with_linked_references() -> None:
    sample = SAMPLES / "unarxive_sample.jsonl"
    assert sample.stat().st_size < 400_000
    documents = load_path(sample)
    assert len(documents) == 3
    attribution = (SAMPLES / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for document in documents:
        assert document.metadata["license"] == CC_BY
        assert document.key in attribution and document.title in attribution
        assert len(document.bibliography) >= 25
        linked = {key for p in document.paragraphs for key in p.citations}
        assert linked and linked <= set(document.bibliography)


def test_a_word_broken_over_a_line_end_is_joined_and_a_compound_keeps_its_hyphen() -> None:
    from citewise.index.document import Paragraph
    from citewise.index.loaders import BREAK, _unbroken

    paragraphs = [
        Paragraph(f"An exam{BREAK}ple of mutation{BREAK}based testing and eccen{BREAK}tricity."),
        Paragraph(f"A small{BREAK}cell network; small-cell sites; a data{BREAK}set, and another dataset."),
    ]
    texts = [p.text for p in _unbroken(paragraphs)]
    assert texts == [
        "An example of mutation-based testing and eccentricity.",  # dictionary: a word; two words; neither
        "A small-cell network; small-cell sites; a dataset, and another dataset.",  # the document says
    ]
