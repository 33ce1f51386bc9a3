"""Typeset a test set of scientific-paper PDFs, with a known truth, from unarXive records.

A PDF reader's structure recovery (paragraphs, section headings, citations, references, running heads,
footnotes) can only be measured against a truth; real arXiv PDFs have none. This script takes papers from an
unarXive 2022 JSONL file, typesets the first body paragraphs of each with pdflatex in four layouts
(1col/2col x numbered/authoryear citations), and writes per paper `<name>.tex`, `<name>.pdf` and
`<name>.json` (the truth: the words a perfect reader would see), plus `index.json`. One cleaning function
produces both the LaTeX and the truth text, so they agree by construction.

    python bench/pdfset.py --unarxive ../shared/data/unarxive --out bench/.cache/pdfset
    python bench/pdfset.py --unarxive ../shared/data/unarxive --out bench/.cache/pdfset-chromium \
        --producer chromium

`--producer chromium` writes the same papers as HTML and prints them with Debian's Chromium (headless,
`--print-to-pdf`, its own header and footer kept: date, page title, file URL and "n/m" are the page furniture
a browser adds), in four layouts: one or two columns (a wrapper element with `column-count`: Chromium prints
a body that is itself a multi-column box as one cut page), justified or ragged. `--producer office` writes
them as DOCX (python-docx: Word's Title and Heading styles, a running head in the header, one or two
columns, justified or not) converted by LibreOffice (`soffice --headless --convert-to pdf`, Debian's
libreoffice-writer-nogui). `--producer journals` sets them in nine journal classes (JOURNALS). The browser
and office truths have no footnotes
and no display equations; the page title is the running head the reader must leave out.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import tempfile
import time
import unicodedata
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

COMBOS = [("1col", "numbered"), ("2col", "numbered"), ("1col", "authoryear"), ("2col", "authoryear")]
HTML_LAYOUTS = ["1col-justified", "2col-justified", "1col-ragged", "2col-ragged"]
"""The Chromium family's layouts: columns and alignment (citation styles alternate with them)."""
HTML_STYLE = """body {{ font-family: {font}; font-size: 10.5pt; margin: 0; }}
h1 {{ font-size: 17pt; text-align: center; margin: 0 0 4pt 0; }}
.authors {{ text-align: center; margin: 0 0 10pt 0; }}
.body {{ column-count: {columns}; column-gap: 18pt; text-align: {align}; hyphens: manual; }}
h2 {{ font-size: 12pt; margin: 10pt 0 4pt 0; }}
h3 {{ font-size: 10.5pt; font-style: italic; margin: 8pt 0 3pt 0; }}
p {{ margin: 0 0 4pt 0; text-indent: 14pt; }}
h2 + p, h3 + p {{ text-indent: 0; }}
.refs p {{ text-indent: -14pt; padding-left: 14pt; font-size: 9pt; }}
table {{ margin: 6pt auto; font-size: 9.5pt; text-align: left; break-inside: avoid; }}
caption {{ margin-bottom: 3pt; }}
td, th {{ padding: 1pt 5pt; }}
td + td, th + th {{ text-align: right; }}
table.grid {{ border-collapse: collapse; }}
table.grid td, table.grid th {{ border: 0.6pt solid black; }}
table.booktabs {{ border-collapse: collapse; border-top: 1pt solid black; border-bottom: 1pt solid black; }}
table.booktabs thead {{ border-bottom: 0.6pt solid black; }}"""
RIGHT_HEAD = "citewise typeset test set"
FOOTNOTE = "Typesetting note {n}: this footnote belongs to no paragraph of the paper."
EQUATION = r"\begin{equation} f(x) = \sum_{i=1}^{n} a_i x^{i} + \int_0^1 g(t)\,dt \end{equation}"
MARKER = re.compile(
    r"(?P<cites>\{\{cite:[^{}]*\}\}(?:[\s,;]*\{\{cite:[^{}]*\}\})*)|\{\{(?P<kind>formula|figure|table):[^{}]*\}\}"
)
CITE_ID = re.compile(r"\{\{cite:([^{}]*)\}\}")
# fmt: off
TRANSLIT = str.maketrans({"–": "-", "—": "-", "−": "-", "‐": "-", "“": '"', "”": '"', "„": '"', "‘": "'",
                          "’": "'", "ł": "l", "Ł": "L", "ı": "i", "đ": "d", "Đ": "D", "œ": "oe", "Œ": "OE"})
SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
           "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
           '"': r"\textquotedbl{}", "'": r"\textquotesingle{}", "`": r"\textasciigrave{}",
           "<": r"\textless{}", ">": r"\textgreater{}"}
ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
           ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "r": "\u030a",
           "k": "\u0328"}
SYMBOLS = {"ss": "ß", "o": "ø", "O": "Ø", "l": "ł", "L": "Ł", "aa": "å", "AA": "Å", "ae": "æ", "AE": "Æ",
           "oe": "œ", "OE": "Œ", "i": "ı"}
INITIAL = re.compile(r"^(?:[A-Z][a-z]?\.-?)+$|^[A-Z]{1,2}$")
PARTICLES = {"de", "van", "von", "der", "den", "da", "del", "della", "di", "la", "le", "du", "dos", "das",
             "ter"}
# fmt: on
YEAR = re.compile(r"(?<![\w./:-])((?:19|20)\d\d)[a-z]?(?![\w/-]|\.\d)")


def unicode_clean(text: str) -> str:
    """NFKC-normalise, keep latin-1 (others are transliterated, lose their accent or go), squash spaces."""
    out = []
    for ch in unicodedata.normalize("NFKC", text).translate(TRANSLIT):
        if ch.isspace():
            out.append(" ")
        elif ord(ch) < 256:
            out.append("" if unicodedata.category(ch) in ("Cc", "Cf") else ch)
        else:
            base = unicodedata.normalize("NFKD", ch)
            out.append("".join(c for c in base if ord(c) < 256 and not unicodedata.combining(c)))
    return re.sub(" +", " ", "".join(out)).strip()


def escape(text: str) -> str:
    """Escape clean text for LaTeX (T1) so it typesets as exactly these characters (no ligatures)."""
    out = "".join(SPECIAL.get(ch, ch) for ch in text)
    return re.sub(r"([-,])(?=[-,])", r"\1{}", out)


def delatex(text: str) -> str:
    """Turn a LaTeX metadata string (title, authors, abstract) into plain text with `{{formula:}}` markers."""
    s = re.sub(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|(?<!\\)\$.*?(?<!\\)\$", "\x01", text, flags=re.S)
    s = re.sub(r"\\cite[pt]?\*?(?:\[[^\]]*\])*\{[^}]*\}", "", s)
    s = re.sub(
        r"\\([`'^\"~=.]|[uvHcrk](?![a-zA-Z]))\s*\{?\\?([a-zA-Z])\}?",
        lambda m: m.group(2) + ACCENTS[m.group(1)],
        s,
    )
    s = re.sub(
        r"\\(ss|aa|AA|ae|AE|oe|OE|o|O|l|L|i)(?![a-zA-Z])\s*(?:\{\})?", lambda m: SYMBOLS[m.group(1)], s
    )
    s = re.sub(r"\\([%&_#$])", r"\1", s).replace("``", '"').replace("''", '"').replace("--", "-")
    s = re.sub(r"\\\\|~", " ", s)
    s = re.sub(r"\\[a-zA-Z]+\*?|\\.|[{}]", "", s)
    return unicodedata.normalize("NFC", s).replace("\x01", "{{formula:m}}")


class Refs:
    """The cited bibliography of one paper in one citation style: keys, labels and citation rendering."""

    def __init__(self, bib: dict[str, Any], cited: list[str], style: str) -> None:
        self.style = style
        self.text = {bid: render(bib[bid].get("bib_entry_raw", ""))[0] for bid in cited}
        self.name: dict[str, str] = {}
        self.year: dict[str, str] = {}
        if style == "authoryear":
            for bid in cited:
                author, years = author_label(self.text[bid]), YEAR.findall(self.text[bid])
                if author and years:
                    self.name[bid], self.year[bid] = author, years[-1]
            cited = [bid for bid in cited if bid in self.name]
        self.key = {bid: f"ref{n}" for n, bid in enumerate(cited, 1)}
        self.order = cited
        if style == "authoryear":
            self.order = sorted(cited, key=lambda b: (self.name[b].lower(), self.year[b], cited.index(b)))
            groups: dict[tuple[str, str], list[str]] = {}
            for bid in self.order:
                groups.setdefault((self.name[bid], self.year[bid]), []).append(bid)
            for same in groups.values():
                for n, bid in enumerate(same if len(same) > 1 else []):
                    self.year[bid] += "abcdefghijklmnopqrstuvwxyz"[n]

    def label(self, bid: str) -> str:
        """Truth label of an entry: `[n]` or `Surname et al. (2019)`."""
        if self.style == "numbered":
            return f"[{self.key[bid][3:]}]"
        return f"{self.name[bid]} ({self.year[bid]})"

    def cite(self, ids: list[str]) -> tuple[str, str, list[str]] | None:
        """Render a citation group as natbib does: (truth, LaTeX, keys), or None if nothing is citable."""
        bids = list(dict.fromkeys(b for b in ids if b in self.key))
        if not bids:
            return None
        keys = [self.key[b] for b in bids]
        command = "cite" if self.style == "numbered" else "citep"
        latex = rf"\{command}{{{','.join(keys)}}}"
        if self.style == "numbered":
            return "[" + ", ".join(k[3:] for k in keys) + "]", latex, keys
        parts: list[str] = []
        for i, bid in enumerate(bids):
            prev = bids[i - 1] if i else None
            name, year = self.name[bid], self.year[bid]
            if prev and self.name[prev] == name:
                same_year = self.year[prev][:4] == year[:4] and len(year) == 5 and len(self.year[prev]) == 5
                parts.append("," + year[4] if same_year else ", " + year)
            else:
                parts.append(("; " if parts else "") + f"{name}, {year}")
        return "(" + "".join(parts) + ")", latex, keys


def author_name(segment: str) -> str | None:
    """Surname (with particles) if `segment` looks like one person's name, else None."""
    toks = segment.split()
    if not 1 <= len(toks) <= 5 or any(ch.isdigit() for ch in segment):
        return None
    if not all(INITIAL.match(t) or t in PARTICLES or t[0].isupper() for t in toks):
        return None
    while len(toks) > 1 and INITIAL.match(toks[-1]) and not INITIAL.match(toks[0]):  # "Surname A. B."
        toks.pop()
    if INITIAL.match(toks[-1]) or not toks[-1][0].isupper():
        return None
    i = len(toks) - 1
    while i > 0 and toks[i - 1] in PARTICLES:
        i -= 1
    return " ".join(toks[i:]).strip(".,")


def author_label(raw: str) -> str | None:
    """Natbib short name from a raw reference: `Surname`, `Surname and Other` or `Surname et al.`."""
    s = re.sub(r"^[\W\d_]+", "", raw)
    head = re.split(r"(?<=[^\W\d_]{2})\. |: | \(|,? \"|\. (?=(?:19|20)\d\d)", s, maxsplit=1)[0]
    segs = [x.strip() for x in re.split(r"[,;]\s*(?:and\s+|&\s*)?|\s+and\s+|\s*&\s*", head) if x.strip()]
    names: list[str] = []
    etal = False
    if len(segs) > 1 and all(INITIAL.match(t) for t in segs[1].split()):  # "Surname, I., Other, J."
        for i in range(0, len(segs) - 1, 2):
            name = author_name(segs[i])
            if not name or not INITIAL.match(segs[i + 1].split()[0]):
                break
            names.append(name)
    else:  # "I. Surname, J. Other" or "Given Surname, Given Other"
        initials_only = bool(segs) and all(INITIAL.match(t) or t in PARTICLES for t in segs[0].split()[:-1])
        for seg in segs:
            etal = bool(re.search(r"\set al\.?$", seg))
            name = author_name(re.sub(r"\set al\.?$", "", seg))
            if not name or (names and initials_only and not INITIAL.match(seg.split()[0])):
                break
            names.append(name)
            if etal:
                break
    if not names:
        first = re.search(r"\b[A-Z][^\W\d_]+\b", head)
        names = [first.group(0)] if first else []
    if not names:
        return None
    if etal or len(names) > 2:
        return f"{names[0]} et al."
    return " and ".join(names)


def render(
    text: str, refs: Refs | None = None, figs: dict[str, int] | None = None
) -> tuple[str, str, list[str]]:
    """Clean marked-up text into (truth text, LaTeX, cited keys); cites are dropped when `refs` is None."""
    text, figs = unicode_clean(text), figs if figs is not None else {}
    truth: list[str] = []
    latex: list[str] = []
    keys: list[str] = []
    pos, nformula = 0, 0
    for m in MARKER.finditer(text):
        truth.append(text[pos : m.start()])
        latex.append(escape(text[pos : m.start()]))
        pos = m.end()
        if m.group("cites"):
            done = refs.cite(CITE_ID.findall(m.group("cites"))) if refs else None
            t, x, k = done if done else ("\x00", "\x00", [])
            keys += k
        elif m.group("kind") == "formula":
            nformula += 1
            t, x = f"x{nformula}", f"$x_{{{nformula}}}$"
        else:
            kind = m.group("kind").capitalize()
            number = figs.setdefault(m.group(0), 1 + sum(f.startswith("{{" + m.group("kind")) for f in figs))
            t, x = f"{kind} {number}", f"{kind}~{number}"
        truth.append(t)
        latex.append(x)
    truth.append(text[pos:])
    latex.append(escape(text[pos:]))

    def tidy(s: str) -> str:
        s = re.sub(r" *\x00(?= |[.,;:)]|$)", "", s).replace("\x00", "")
        return re.sub(" +", " ", s).strip()

    return tidy("".join(truth)), tidy("".join(latex)), keys


TABLE_AFTER = (3, 12, 24)
"""With `--tables`, a table follows these body paragraphs (1-based), so a paper of 40 has three."""
TABLE_STYLES = ("booktabs", "grid", "plain")
"""How a table is ruled: rules above, below and under the header; every cell boxed; no rules at all."""
LABEL_HEADS = ("Method", "Model", "Setting", "Dataset", "Configuration")
VALUE_HEADS = ("Accuracy", "F1", "Precision", "Recall", "Time (s)", "Params (M)", "Error (%)", "BLEU", "AUC",
               "Samples", "Memory (GB)", "Epochs", "Speed-up", "Loss")  # fmt: skip


def make_table(rec: dict[str, Any], number: int, style: str) -> dict[str, Any]:
    """A results table for a paper: a header, 3-7 rows labelled with the paper's own words, numbers.

    Its cells are the truth a reader must recover; the paper's id seeds it, so a set is made again the same.
    """
    rng = random.Random(f"{rec['paper_id']}-{number}")
    texts = (re.sub(r"\{\{[^{}]*\}\}", " ", p["text"]) for p in rec["body_text"])
    words = sorted({w for text in texts for w in re.findall(r"\b[a-z]{6,12}\b", text)})
    rng.shuffle(words)
    columns = rng.randint(3, 5)
    header = [rng.choice(LABEL_HEADS), *rng.sample(VALUE_HEADS, columns - 1)]
    rows = [header]
    forms = [rng.choice(("{:.3f}", "{:.1%}", "{:.0%}", "{:.4f}")) for _ in header[1:]]  # one form a column
    for r in range(rng.randint(3, 7)):
        label = words[r % max(1, len(words))].capitalize() if words else f"Variant {r + 1}"
        if rng.random() < 0.4 and len(words) > 20:
            label += f" {words[-1 - r]}"
        rows.append([label, *(form.format(rng.random()) for form in forms)])
    task = words[0] if words else "test"
    caption = f"Table {number}: {header[1]} of each {header[0].lower()} on the {task} task."
    return {"caption": caption, "style": style, "rows": rows}


def table_tex(table: dict[str, Any], wide: bool) -> list[str]:
    """A table float in LaTeX: booktabs rules, a boxed grid or no rules, caption above."""
    columns = len(table["rows"][0])
    rows = [" & ".join(escape(cell) for cell in row) + r" \\" for row in table["rows"]]
    caption = escape(table["caption"].split(": ", 1)[1])
    if table["style"] == "booktabs":
        body = [rf"\begin{{tabular}}{{l{'r' * (columns - 1)}}}", r"\toprule", rows[0], r"\midrule", *rows[1:],
                r"\bottomrule"]  # fmt: skip
    elif table["style"] == "grid":
        body = [rf"\begin{{tabular}}{{|l|{'r|' * (columns - 1)}}}", r"\hline"]
        body += [part for row in rows for part in (row, r"\hline")]
    else:
        body = [rf"\begin{{tabular}}{{l{'r' * (columns - 1)}}}", *rows]
    float_ = "table*" if wide else "table"
    start = [rf"\begin{{{float_}}}[htbp]", r"\centering", rf"\caption{{{caption}}}"]
    return ["", *start, *body, r"\end{tabular}", rf"\end{{{float_}}}", ""]


def kept_paragraphs(rec: dict[str, Any], max_paragraphs: int, drop: set[int]) -> list[int]:
    """Indices of the body paragraphs to typeset: real paragraphs of >= 8 words, not mostly formulas."""
    kept: list[int] = []
    for i, par in enumerate(rec["body_text"]):
        if len(kept) >= max_paragraphs:
            break
        if par.get("content_type") != "paragraph" or i in drop:
            continue
        words = len(render(par["text"])[0].split())
        if words >= 8 and par["text"].count("{{formula:") * 6 <= words:
            kept.append(i)
    return kept


def cited_ids(rec: dict[str, Any], kept: list[int]) -> list[str]:
    """Bib entry ids cited in the kept paragraphs, in order of first citation."""
    ids = (b for i in kept for b in CITE_ID.findall(rec["body_text"][i]["text"]) if b in rec["bib_entries"])
    return list(dict.fromkeys(ids))


JOURNALS = {
    "ieee-conference": ("numbered", r"\documentclass[conference]{IEEEtran}"),
    "ieee-journal": ("numbered", r"\documentclass[journal]{IEEEtran}"),
    "revtex-aps": ("numbered", r"\documentclass[aps,pra,twocolumn,nofootinbib]{revtex4-2}"),
    "acmart-sigconf": ("numbered", r"\documentclass[sigconf,nonacm]{acmart}"),
    "elsarticle-numbered": ("numbered", r"\documentclass[preprint,12pt]{elsarticle}"),
    "elsarticle-authoryear": ("authoryear", r"\documentclass[preprint,12pt,authoryear]{elsarticle}"),
    "llncs": ("numbered", r"\documentclass{llncs}"),
    "aastex-linenumbers": ("authoryear", r"\documentclass[linenumbers]{aastex631}"),
    "mnras": ("authoryear", r"\documentclass[fleqn,usenatbib]{mnras}"),
}
"""Journal classes of Debian's texlive-publishers (`--journal`): the citation style each is set in, and its
\\documentclass line. Each sets the paper in its own way: its title block, headings, running heads and
reference list."""


def journal_front(journal: str, title: str, authors: str, abstract: str, style: str) -> list[str]:
    """The preamble after \\documentclass and the front matter up to the first section, in `journal`'s way."""
    # T1 for the escaped quotes; the class's own fonts (T1 needs cm-super, else they are bitmaps)
    common = [r"\usepackage[T1]{fontenc}", r"\usepackage[utf8]{inputenc}", r"\usepackage{amsmath}"]
    if journal.startswith("elsarticle"):
        return [*common, r"\begin{document}", r"\begin{frontmatter}", rf"\title{{{title}}}",
                rf"\author{{{authors}}}", r"\begin{abstract}", abstract, r"\end{abstract}",
                r"\end{frontmatter}"]  # fmt: skip
    if journal.startswith("revtex"):
        return [*common, r"\begin{document}", rf"\title{{{title}}}", rf"\author{{{authors}}}",
                r"\affiliation{A University}", r"\begin{abstract}", abstract, r"\end{abstract}",
                r"\maketitle"]  # fmt: skip
    if journal == "acmart-sigconf":
        return [*common, r"\settopmatter{printacmref=false}", r"\begin{document}", rf"\title{{{title}}}",
                rf"\author{{{authors}}}", r"\affiliation{\institution{A University}\country{Nowhere}}",
                r"\begin{abstract}", abstract, r"\end{abstract}", r"\maketitle"]  # fmt: skip
    if journal == "llncs":
        return [*common, r"\begin{document}", rf"\title{{{title}}}", rf"\author{{{authors}}}",
                r"\institute{A University}", r"\maketitle", r"\begin{abstract}", abstract,
                r"\end{abstract}"]  # fmt: skip
    if journal == "mnras":
        return [*common, rf"\title{{{title}}}", rf"\author{{{authors}}}", r"\begin{document}",
                r"\maketitle", r"\begin{abstract}", abstract, r"\end{abstract}"]  # fmt: skip
    if journal.startswith("aastex"):
        return [*common, r"\begin{document}", rf"\title{{{title}}}", rf"\author{{{authors}}}",
                r"\begin{abstract}", abstract, r"\end{abstract}"]  # fmt: skip
    # IEEEtran
    author = rf"\author{{\IEEEauthorblockN{{{authors}}}}}"
    return [*common, r"\begin{document}", rf"\title{{{title}}}", author, r"\maketitle",
            r"\begin{abstract}", abstract, r"\end{abstract}"]  # fmt: skip


def build(
    rec: dict[str, Any],
    layout: str,
    style: str,
    max_paragraphs: int,
    drop: set[int],
    font: str = "lmodern",
    journal: str = "",
    tables: bool = False,
) -> dict[str, Any]:
    """Make the LaTeX source, the truth and a map from .tex line number to body paragraph index."""
    meta = rec["metadata"]
    kept = kept_paragraphs(rec, max_paragraphs, drop)
    refs = Refs(rec["bib_entries"], cited_ids(rec, kept), style)
    title, title_tex, _ = render(delatex(meta.get("title", "")))
    authors, authors_tex, _ = render(delatex(meta.get("authors", "")))
    abstract = rec["abstract"]["text"] if isinstance(rec["abstract"], dict) else rec["abstract"]
    abstract, abstract_tex, _ = render(delatex(abstract or ""))
    short = " ".join(title.split()[:6])
    heads = (
        rf"\fancyhf{{}}\fancyhead[L]{{{escape(short)}}}\fancyhead[R]{{{RIGHT_HEAD}}}\fancyfoot[C]{{\thepage}}"
    )
    natbib = "authoryear,round" if style == "authoryear" else "numbers,square"
    lines = [
        rf"\documentclass[10pt,a4paper{',twocolumn' if layout == '2col' else ''}]{{article}}",
        r"\usepackage[T1]{fontenc}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage{lmodern}" if font == "lmodern" else r"\usepackage{mathptmx}",  # Latin Modern or Times
        r"\usepackage{fancyhdr}",
        rf"\usepackage[{natbib}]{{natbib}}",
        r"\usepackage{amsmath}",
        rf"\usepackage[margin={'2cm' if layout == '2col' else '2.5cm'}]{{geometry}}",
        r"\setlength{\headheight}{14pt}",
        rf"\fancypagestyle{{plain}}{{{heads}}}",
        rf"\pagestyle{{fancy}}{heads}",
        rf"\title{{{title_tex}}}",
        rf"\author{{\parbox{{0.9\textwidth}}{{\centering {authors_tex}}}}}",
        r"\date{}",
        r"\begin{document}",
        r"\maketitle",
        r"\begin{abstract}",
        abstract_tex,
        r"\end{abstract}",
    ]
    if journal:  # the class's own preamble, title block and running heads
        natbib = [r"\usepackage[numbers,square]{natbib}"] if style == "numbered" and journal in (
            "llncs", "ieee-conference", "ieee-journal") else []  # fmt: skip
        lines = [
            JOURNALS[journal][1],
            *natbib,
            *journal_front(journal, title_tex, authors_tex, abstract_tex, style),
        ]
    sections, footnotes, line_map = ["Abstract"], [], {}
    paragraphs = [{"section": "Abstract", "text": abstract, "cites": []}]
    figs: dict[str, int] = {}
    made: list[dict[str, Any]] = []
    current = None
    for n, i in enumerate(kept, 1):
        par = rec["body_text"][i]
        heading, heading_tex, _ = render(par.get("section") or "Untitled")
        if heading != current:
            level = "subsection" if "." in str(par.get("sec_number") or "").strip(".") else "section"
            lines += ["", rf"\{level}{{{heading_tex}}}"]
            sections.append(heading)
            current = heading
        text, tex, keys = render(par["text"], refs, figs)
        if n % 7 == 0:
            footnotes.append(FOOTNOTE.format(n=len(footnotes) + 1))
            tex += rf"\footnote{{{escape(footnotes[-1])}}}"
        lines.append("")
        line_map[len(lines) + 1] = i
        lines.append(tex)
        if n % 5 == 0:
            lines.append(EQUATION)
        paragraphs.append({"section": heading, "text": text, "cites": keys})
        if tables and n in TABLE_AFTER:
            number = len(made) + 1
            made.append(make_table(rec, number, TABLE_STYLES[(number - 1) % len(TABLE_STYLES)]))
            made[-1]["after"] = len(paragraphs) - 1
            two = layout == "2col" or journal in (
                "ieee-conference",
                "ieee-journal",
                "revtex-aps",
                "acmart-sigconf",
                "mnras",
            )
            wide = two and (number == 2 or len(made[-1]["rows"][0]) >= 5)  # as authors would: no overfull box
            lines += table_tex(made[-1], wide=wide)
    lines += ["", r"\begin{thebibliography}{99}"]
    references = []
    for bid in refs.order:
        key = refs.key[bid]
        label = f"{refs.name[bid]}({refs.year[bid]})" if style == "authoryear" else ""
        label = escape(label).replace("et al.", "et~al.")
        lines.append(rf"\bibitem{f'[{label}]' if label else ''}{{{key}}} {render(refs.text[bid])[1]}")
        references.append({"key": key, "label": refs.label(bid), "text": refs.text[bid]})
    lines += [r"\end{thebibliography}", r"\end{document}", ""]
    running = [] if journal else [short, RIGHT_HEAD]
    truth = {"paper_id": rec["paper_id"], "layout": journal or layout, "citation_style": style,
             "title": title, "authors": authors, "running_heads": running, "footnotes": footnotes,
             "display_equations": len(kept) // 5, "sections": sections, "paragraphs": paragraphs,
             "references": references, "tables": made}  # fmt: skip
    if tables and r"\usepackage{booktabs}" not in lines:
        lines.insert(1, r"\usepackage{booktabs}")
    return {"tex": "\n".join(lines), "truth": truth, "line_map": line_map}


def compile_tex(tex: str, name: str, out: Path) -> dict[str, Any]:
    """Run pdflatex twice in a temp dir and copy the PDF to `out`; returns ok, pages, seconds or error."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pdfset-") as tmp:
        (Path(tmp) / f"{name}.tex").write_text(tex, encoding="utf-8")
        for _ in range(2):
            cmd = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"]
            try:
                proc = subprocess.run(cmd, cwd=tmp, capture_output=True, timeout=120, check=False)
            except subprocess.TimeoutExpired:
                return {"ok": False, "error": "pdflatex timed out after 120 s", "line": None}
            log = (Path(tmp) / f"{name}.log").read_text(encoding="latin-1", errors="replace")
            if proc.returncode != 0:
                error = next((x for x in log.splitlines() if x.startswith("!")), f"exit {proc.returncode}")
                line = re.search(r"^l\.(\d+)", log, flags=re.M)
                return {"ok": False, "error": error, "line": int(line.group(1)) if line else None}
        pages = re.search(r"Output written on .*?\((\d+) pages?", log, flags=re.S)
        (out / f"{name}.pdf").write_bytes((Path(tmp) / f"{name}.pdf").read_bytes())
    return {"ok": True, "pages": int(pages.group(1)) if pages else 0, "seconds": time.monotonic() - start}


def produce(rec: dict[str, Any], layout: str, style: str, args: argparse.Namespace) -> dict[str, Any] | None:
    """Build, compile and write one paper; retry once without a paragraph that broke LaTeX.

    With a journal (`layout` then names it), the paper is set in that class in the class's citation style.
    """
    journal = layout if layout in JOURNALS else ""
    if journal:
        style = JOURNALS[journal][0]
    name = f"{re.sub(r'[/.]', '_', rec['paper_id'])}-{layout}-{style}"
    drop: set[int] = set()
    for _attempt in range(2):
        built = build(rec, layout, style, args.max_paragraphs, drop, args.font, journal, args.tables)
        (args.out / f"{name}.tex").write_text(built["tex"], encoding="utf-8")
        result = compile_tex(built["tex"], name, args.out)
        if result["ok"]:
            truth = {"name": name, **built["truth"], "pages": result["pages"]}
            (args.out / f"{name}.json").write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n")
            return {"name": name, "paper_id": rec["paper_id"], "layout": layout, "citation_style": style,
                    "pages": result["pages"], "paragraphs": len(truth["paragraphs"]),
                    "sections": len(truth["sections"]), "references": len(truth["references"]),
                    "compile_seconds": round(result["seconds"], 2)}  # fmt: skip
        print(f"{name}: LaTeX failed: {result['error']} (tex line {result['line']})", flush=True)
        bad = built["line_map"].get(result["line"])
        if bad is None:
            break
        drop.add(bad)
    for suffix in (".tex", ".pdf", ".json"):
        (args.out / f"{name}{suffix}").unlink(missing_ok=True)
    return None


def html_page(truth: dict[str, Any], layout: str, font: str) -> str:
    """The paper of `truth` as an HTML page whose printed words are the truth's words."""
    from html import escape as html_escape

    columns, align = layout.split("-")
    style = HTML_STYLE.format(
        font="'Liberation Serif', serif" if font == "times" else "'DejaVu Serif', serif",
        columns=columns[0],
        align="justify" if align == "justified" else "left",
    )
    body = [
        f"<h1>{html_escape(truth['title'])}</h1>",
        f"<p class=authors>{html_escape(truth['authors'])}</p>",
    ]
    body.append('<div class="body">')
    current = None
    tables = {table["after"]: table for table in truth.get("tables", [])}
    for index, paragraph in enumerate(truth["paragraphs"]):
        if paragraph["section"] != current:
            current = paragraph["section"]
            body.append(f"<h2>{html_escape(current)}</h2>")
        body.append(f"<p>{html_escape(paragraph['text'])}</p>")
        if index in tables:
            body.append(table_html(tables[index]))
    body.append('<h2>References</h2><div class="refs">')
    for reference in truth["references"]:
        label = f"[{reference['label']}] " if truth["citation_style"] == "numbered" else ""
        body.append(f"<p>{html_escape(label + reference['text'])}</p>")
    body.append("</div></div>")
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{RIGHT_HEAD}</title>'
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>"
    )


def table_html(table: dict[str, Any]) -> str:
    """A table in HTML: the caption above, ruled as its style says."""
    from html import escape as html_escape

    head, *rows = table["rows"]
    cells = "".join(f"<th>{html_escape(cell)}</th>" for cell in head)
    body = "".join("<tr>" + "".join(f"<td>{html_escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<table class="{table["style"]}"><caption>{html_escape(table["caption"])}</caption>'
        f"<thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"
    )


def print_html(page: str, name: str, out: Path) -> dict[str, Any]:
    """Print an HTML page to `out/name.pdf` with headless Chromium; ok, pages, seconds or error."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pdfset-") as tmp:
        source = Path(tmp) / f"{name}.html"
        source.write_text(page, encoding="utf-8")
        target = out / f"{name}.pdf"
        command = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   f"--user-data-dir={tmp}/profile", f"--print-to-pdf={target}", source.as_uri()]  # fmt: skip
        try:
            subprocess.run(command, capture_output=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": "chromium timed out after 120 s", "line": None}
    if not target.exists():
        return {"ok": False, "error": "chromium wrote no PDF", "line": None}
    return {"ok": True, "pages": pdf_pages(target), "seconds": time.monotonic() - start}


def page_truth(
    rec: dict[str, Any], family: str, layout: str, style: str, args: argparse.Namespace
) -> tuple[str, dict[str, Any]]:
    """(file name, truth) of a paper made by another producer than pdflatex: no footnotes, no displays."""
    name = f"{re.sub(r'[/.]', '_', rec['paper_id'])}-{family}-{layout}-{style}"
    truth = build(rec, "1col", style, args.max_paragraphs, set(), args.font, tables=args.tables)["truth"]
    truth |= {"layout": f"{family}-{layout}", "footnotes": [], "display_equations": 0}
    truth["running_heads"] = [RIGHT_HEAD]
    return name, truth


def written(
    rec: dict[str, Any], name: str, truth: dict[str, Any], pages: int, seconds: float, out: Path
) -> dict[str, Any]:
    """Write a made paper's truth beside its PDF; its row of the set's table."""
    truth = {"name": name, **truth, "pages": pages}
    (out / f"{name}.json").write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n")
    return {"name": name, "paper_id": rec["paper_id"], "layout": truth["layout"],
            "citation_style": truth["citation_style"], "pages": pages, "paragraphs": len(truth["paragraphs"]),
            "sections": len(truth["sections"]), "references": len(truth["references"]),
            "compile_seconds": round(seconds, 2)}  # fmt: skip


def pdf_pages(path: Path) -> int:
    """How many pages a PDF has."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        return len(pdf)
    finally:
        pdf.close()


def produce_html(
    rec: dict[str, Any], layout: str, style: str, args: argparse.Namespace
) -> dict[str, Any] | None:
    """One paper as HTML printed by Chromium, its truth from the same cleaning as the LaTeX family's."""
    name, truth = page_truth(rec, "html", layout, style, args)
    page = html_page(truth, layout, args.font)
    (args.out / f"{name}.html").write_text(page, encoding="utf-8")
    result = print_html(page, name, args.out)
    if not result["ok"]:
        print(f"{name}: {result['error']}", flush=True)
        return None
    return written(rec, name, truth, result["pages"], result["seconds"], args.out)


def docx_file(truth: dict[str, Any], layout: str, path: Path) -> None:
    """The paper of `truth` as a Word document (python-docx): Word's own styles, a running head."""
    from docx import Document as Docx
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.oxml.ns import qn
    from docx.shared import Cm, Pt

    columns, align = layout.split("-")
    document = Docx()
    section = document.sections[0]
    section.header.paragraphs[0].text = RIGHT_HEAD
    if columns == "2col":  # python-docx has no call for columns: the section's w:cols, as Word writes it
        cols = section._sectPr.xpath("./w:cols")
        element = cols[0] if cols else section._sectPr.makeelement(qn("w:cols"), {})
        element.set(qn("w:num"), "2")
        element.set(qn("w:space"), "360")
        if not cols:
            section._sectPr.append(element)
    document.add_heading(truth["title"], level=0)
    authors = document.add_paragraph(truth["authors"])
    authors.alignment = WD_ALIGN_PARAGRAPH.CENTER
    body_align = WD_ALIGN_PARAGRAPH.JUSTIFY if align == "justified" else WD_ALIGN_PARAGRAPH.LEFT
    current = None
    tables = {table["after"]: table for table in truth.get("tables", [])}
    for index, paragraph in enumerate(truth["paragraphs"]):
        if paragraph["section"] != current:
            current = paragraph["section"]
            document.add_heading(current, level=1)
        written = document.add_paragraph(paragraph["text"])
        written.alignment = body_align
        written.paragraph_format.first_line_indent = Pt(14)
        if index in tables:
            table = tables[index]
            document.add_paragraph(table["caption"], style="Caption")
            grid = document.add_table(rows=len(table["rows"]), cols=len(table["rows"][0]))
            if table["style"] != "plain":  # Word's boxed grid; booktabs has no Word style of its own
                grid.style = "Table Grid"
            # as wide as the column (python-docx's default is the page's width, which LibreOffice clips in a
            # column): the labels. column a quarter, the numbers share the rest
            width = Cm(7.5 if columns == "2col" else 15.0)
            widths = [width / 4] + [width * 3 / 4 / (len(table["rows"][0]) - 1)] * (len(table["rows"][0]) - 1)
            grid.autofit = False
            for column, column_width in zip(grid.columns, widths, strict=True):
                column.width = int(column_width)  # w:gridCol, which LibreOffice lays out by
            for cells, row in zip(grid.rows, table["rows"], strict=True):
                for cell, text, cell_width in zip(cells.cells, row, widths, strict=True):
                    cell.text, cell.width = text, int(cell_width)
                    for run in cell.paragraphs[0].runs:  # small type, as a table in a column is set
                        run.font.size = Pt(7 if columns == "2col" else 9)
    document.add_heading("References", level=1)
    for reference in truth["references"]:
        label = f"[{reference['label']}] " if truth["citation_style"] == "numbered" else ""
        entry = document.add_paragraph(label + reference["text"])
        entry.paragraph_format.left_indent = Pt(14)
        entry.paragraph_format.first_line_indent = Pt(-14)
        for run in entry.runs:
            run.font.size = Pt(9)
    document.save(path)


def produce_docx(
    rec: dict[str, Any], layout: str, style: str, args: argparse.Namespace
) -> dict[str, Any] | None:
    """One paper as a DOCX converted by LibreOffice (`soffice --headless --convert-to pdf`)."""
    name, truth = page_truth(rec, "office", layout, style, args)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pdfset-") as tmp:
        source = args.out / f"{name}.docx"
        docx_file(truth, layout, source)
        command = ["soffice", f"-env:UserInstallation=file://{tmp}/profile", "--headless",
                   "--convert-to", "pdf", "--outdir", str(args.out), str(source)]  # fmt: skip
        try:
            subprocess.run(command, capture_output=True, timeout=180, check=False)
        except subprocess.TimeoutExpired:
            print(f"{name}: soffice timed out", flush=True)
            return None
    target = args.out / f"{name}.pdf"
    if not target.exists():
        print(f"{name}: soffice wrote no PDF", flush=True)
        return None
    return written(rec, name, truth, pdf_pages(target), time.monotonic() - start, args.out)


def main() -> int:
    """Select papers, typeset them in parallel, write index.json and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unarxive", type=Path, required=True, help="directory holding papers.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--max-paragraphs", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first N eligible papers (a held-out set)"
    )
    parser.add_argument(
        "--rotate",
        type=int,
        default=0,
        help="give the N-th next class or layout to each paper (the same papers set anew: a held-out set "
        "once the eligible papers run out)",
    )
    parser.add_argument("--font", choices=("lmodern", "times"), default="lmodern")
    parser.add_argument("--tables", action="store_true", help="put three results tables in each paper")
    parser.add_argument(
        "--producer", choices=("pdflatex", "journals", "chromium", "office"), default="pdflatex"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.unarxive / "papers.jsonl").open(encoding="utf-8") as handle:
        records = sorted((json.loads(line) for line in handle if line.strip()), key=lambda r: r["paper_id"])
    candidates: deque[dict[str, Any]] = deque()
    for rec in records:
        kept = kept_paragraphs(rec, args.max_paragraphs, set())
        n_cited, n_sections = len(cited_ids(rec, kept)), len({rec["body_text"][i]["section"] for i in kept})
        if n_cited < 8 or n_sections < 2:
            why = f"{n_cited} cited bib entries, {n_sections} sections in {len(kept)} paragraphs"
            print(f"skip {rec['paper_id']}: {why}")
        else:
            candidates.append(rec)
    for _ in range(min(args.skip, len(candidates))):
        candidates.popleft()
    start = time.monotonic()
    if args.producer == "journals":  # each class of JOURNALS in turn, in its own citation style
        combos, make = [(journal, "") for journal in JOURNALS], produce
    elif args.producer == "office":  # the Chromium family's layouts, written by Word's model
        combos = [(HTML_LAYOUTS[i % 4], ("numbered", "authoryear")[i // 4 % 2]) for i in range(8)]
        make = produce_docx
    elif args.producer == "chromium":  # each layout with both citation styles, in turn
        combos = [(HTML_LAYOUTS[i % 4], ("numbered", "authoryear")[i // 4 % 2]) for i in range(8)]
        make = produce_html
    else:
        combos, make = COMBOS, produce
    todo = [
        (candidates.popleft(), combos[(i + args.rotate) % len(combos)])
        for i in range(min(args.count, len(candidates)))
    ]
    rows: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        while todo:
            done = list(pool.map(lambda job: make(job[0], *job[1], args), todo))
            rows += [row for row in done if row]
            failed = [job[1] for job, row in zip(todo, done, strict=True) if not row]
            todo = [(candidates.popleft(), combo) for combo in failed if candidates]
    rows.sort(key=lambda r: r["paper_id"])
    index = {
        "source": str(args.unarxive / "papers.jsonl"),
        "max_paragraphs": args.max_paragraphs,
        "papers": rows,
    }
    (args.out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    if not rows:
        print(f"no PDFs made: {len(candidates)} papers left after --skip {args.skip}")
        return 1
    cols = ["name", "layout", "citation_style", "pages", "paragraphs", "sections", "references"]
    cols.append("compile_seconds")
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    for row in [dict(zip(cols, cols, strict=True)), *rows]:
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(cols, widths, strict=True)))
    print(f"{len(rows)} PDFs in {args.out} ({time.monotonic() - start:.0f} s); counts include the abstract")
    return 0 if len(rows) >= min(20, args.count) else 1


if __name__ == "__main__":
    raise SystemExit(main())
