"""What the chat page shows, as pure functions: answers with clickable markers, passages, the evidence chart.

Every string that comes from a person or a document is untrusted: it is HTML-escaped before it reaches the
page, and the markdown the chat shows has link and image syntax neutralised, so a document cannot make the
browser load anything (an image from another host would be a request leaving the machine). The only markup
in an answer is the markers' own links, which carry nothing but a turn and a marker number.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from citewise.core.evidence import CLOSEST_HEADING, MARKER
from citewise.core.text import row_sentence
from citewise.index.citations import soften_source_markers
from citewise.index.tables import is_markdown_table, read_markdown

CITE_PREFIX = "cite-"
"""A marker link's fragment is `#cite-<turn>-<marker>`; the page's click handler reads it back."""

KEPT_COLOUR = "#1b7f4b"
DROPPED_COLOUR = "#b23b3b"
THRESHOLD_COLOUR = "#c27c00"


def escape(text: Any) -> str:
    """Text as HTML that shows it verbatim (quotes too, so it is safe inside attributes)."""
    return html.escape(str(text), quote=True)


def escape_markdown(text: str) -> str:
    """Untrusted text for the chat's markdown: HTML escaped, link and image syntax and backslashes inert.

    Headings, emphasis and lists still render (a report's `##` sections need them); `[`, `]` and `<` no longer
    form links, images or tags.
    """
    text = escape(text)
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def cite_fragment(turn: int, marker: int) -> str:
    """The fragment that names one turn's marker (`cite-2-3`): the link's, and the panel's that answers it."""
    return f"{CITE_PREFIX}{turn}-{marker}"


def cite_link(turn: int, marker: int, title: str = "") -> str:
    """The clickable marker [n] of one turn's answer (its fragment names the turn and the marker)."""
    hint = f' title="{escape(title)}"' if title else ""
    return f'<a class="cw-cite" href="#{cite_fragment(turn, marker)}"{hint}>[{marker}]</a>'


def parse_cite(fragment: str) -> tuple[int, int] | None:
    """(turn, marker) from a marker link's fragment (`cite-2-3`, with or without `#`); None if malformed."""
    match = re.fullmatch(rf"#?{CITE_PREFIX}(\d+)-(\d+)", fragment.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def answer_markdown(answer: str, citations: list[dict[str, Any]], turn: int) -> str:
    """The answer for the chat: its text escaped, each marker that names a citation turned into a link."""
    titles = {int(c["marker"]): str(c.get("title", "")) for c in citations}
    out: list[str] = []
    position = 0
    for match in MARKER.finditer(answer):
        out.append(escape_markdown(answer[position : match.start()]))
        marker = int(match.group(1))
        out.append(cite_link(turn, marker, titles[marker]) if marker in titles else escape_markdown(match[0]))
        position = match.end()
    out.append(escape_markdown(answer[position:]))
    return "".join(out)


def stages_markdown(lines: list[str]) -> str:
    """The stage lines of a turn as a markdown list (their text escaped: queries come from the person)."""
    return "\n".join(f"- {escape_markdown(line)}" for line in lines)


# passages -----------------------------------------------------------------------------------------------
def passages(values: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Per marker of a run's answer, what its passage panel shows: document, section, text, supporting lines.

    Each also names its document and paragraph by id: the document view reads them from the index.

    `values` is the thread's state after the run: the evidence records (the question's and every report
    section's) give the chunk's document, section and text; `support` gives the lines that support the
    sentences citing it (else the citation's own cited text does).
    """
    records: dict[str, dict[str, Any]] = {}
    for section in (values.get("sections") or {}).values():
        for record in section.get("evidence") or []:
            records.setdefault(record.get("chunk_id", ""), record)
    for record in values.get("evidence") or []:
        records[record.get("chunk_id", "")] = record
    files = {
        entry.get("doc_id"): entry.get("file", "")
        for entry in (values.get("references") or {}).get("primary", [])
    }
    lines: dict[str, list[str]] = {}
    for item in values.get("support") or []:
        for line in item.get("lines", []):
            lines.setdefault(line["chunk_id"], [])
            if line["text"] not in lines[line["chunk_id"]]:
                lines[line["chunk_id"]].append(line["text"])
    found: dict[int, dict[str, Any]] = {}
    for citation in values.get("citations") or []:
        record = records.get(citation["chunk_id"], {})
        supporting = lines.get(citation["chunk_id"]) or [
            part for part in str(citation.get("text", "")).split(" … ") if part.strip()
        ]
        found[int(citation["marker"])] = {
            "marker": int(citation["marker"]),
            "doc_id": citation.get("doc_id") or record.get("doc_id", ""),
            "paragraph_id": record.get("paragraph_id", ""),
            "title": record.get("title") or citation.get("title", ""),
            "section": record.get("section", ""),
            "file": Path(files.get(citation.get("doc_id"), "") or "").name,
            "text": record.get("text") or citation.get("text", ""),
            "lines": supporting,
            "final": record.get("final"),
            "reason": record.get("reason", ""),
        }
    return found


def highlight(text: str, lines: list[str]) -> str:
    """The passage as HTML with each supporting line that occurs in it marked (everything escaped)."""
    spans: list[tuple[int, int]] = []
    for line in lines:
        needle = line.strip()
        start = text.find(needle) if needle else -1
        if start >= 0:
            spans.append((start, start + len(needle)))
    spans.sort()
    out: list[str] = []
    position = 0
    for start, end in spans:
        if start < position:  # overlapping lines: mark the rest of the later one
            start = position
        if start >= end:
            continue
        out.append(escape(text[position:start]))
        out.append(f'<mark class="cw-support">{escape(text[start:end])}</mark>')
        position = end
    out.append(escape(text[position:]))
    return "".join(out)


def table_html(text: str, lines: list[str]) -> tuple[str, list[str]]:
    """A table passage as an HTML table, the rows a supporting line quotes marked; the lines it lacks."""
    caption, rows = read_markdown(text)
    wanted = {line.strip() for line in lines}
    head = "".join(f"<th>{escape(cell)}</th>" for cell in rows[0])
    body, held = [], {caption}
    for row in rows[1:]:
        said = row_sentence(rows[0], row)
        held.add(said)
        mark = ' class="cw-support"' if said in wanted else ""
        body.append(f"<tr{mark}>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>")
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    missing = [line for line in lines if line.strip() and line.strip() not in held]
    table = (
        f'<table class="cw-table">{title}<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )
    return table, missing


def passage_html(passage: dict[str, Any] | None, cite: str = "") -> str:
    """The passage panel for one marker: document, section, the text with its supporting lines marked.

    `cite` is the fragment of the link that asked for it (`cite-T-N`): the page's script compares it with
    the link clicked last, so a panel answering an earlier click is replaced.
    """
    if not passage:
        return '<div class="cw-passage cw-empty">Click a citation marker such as [1] to see its text.</div>'
    place = escape(passage["title"] or "(untitled document)")
    if passage.get("section"):
        place += f' <span class="cw-section">› {escape(passage["section"])}</span>'
    text = soften_source_markers(passage["text"])
    lines = [soften_source_markers(line) for line in passage["lines"]]
    if is_markdown_table(text):
        marked, missing = table_html(text, lines)
    else:
        marked = f'<p class="cw-passage-text">{highlight(text, lines)}</p>'
        missing = [line for line in lines if line.strip() and line.strip() not in text]
    extra = "".join(f'<p class="cw-line"><mark class="cw-support">{escape(x)}</mark></p>' for x in missing)
    meta = []
    if passage.get("file"):
        meta.append(f"file {escape(passage['file'])}")
    if isinstance(passage.get("final"), int | float):
        meta.append(f"final score {passage['final']:g}")
    if passage.get("reason"):
        meta.append(escape(passage["reason"]))
    opening = (
        '<a class="cw-open-doc" href="#cw-document">open in document</a>'
        if passage.get("paragraph_id")
        else ""
    )
    return (
        f'<div class="cw-passage" data-marker="{int(passage["marker"])}" data-cite="{escape(cite)}">'
        f'<div class="cw-passage-head"><b>[{int(passage["marker"])}]</b> {place}</div>'
        f"{marked}{extra}"
        f'<div class="cw-passage-meta">{" · ".join(meta)}</div>{opening}</div>'
    )


def references_html(references: dict[str, Any], *, abstained: bool = False) -> str:
    """Primary references (the documents cited, with their markers) and secondary ones (works they cite).

    A no-answer reply's documents are headed as the closest passages: they are not references of an answer.
    """
    primary = references.get("primary") or []
    secondary = references.get("secondary") or []
    if not primary:
        return '<div class="cw-refs cw-empty">No references yet.</div>'
    items = []
    for entry in primary:
        markers = " ".join(f"[{int(m)}]" for m in sorted(set(entry.get("markers", []))))
        file = Path(entry.get("file") or "").name
        where = f' <span class="cw-file">{escape(file)}</span>' if file else ""
        items.append(f"<li>{markers} {escape(entry.get('title') or '(untitled)')}{where}</li>")
    heading = CLOSEST_HEADING if abstained else "Primary references"
    out = f'<div class="cw-refs"><h4>{heading}</h4><ol class="cw-primary">{"".join(items)}</ol>'
    if secondary:
        cited = []
        for entry in secondary:
            mark = "★ " if entry.get("fine") else ""
            text = escape(soften_source_markers(str(entry.get("text", ""))))
            cited.append(f'<li class="{"cw-fine" if entry.get("fine") else ""}">{mark}{text}</li>')
        out += (
            "<h4>Secondary references</h4><p class='cw-note'>Works the cited passages cite "
            f"(★ cited in the very line that supports the answer).</p><ul class='cw-secondary'>"
            f"{''.join(cited)}</ul>"
        )
    return out + "</div>"


# evidence ------------------------------------------------------------------------------------------------
def chart_rows(evidence: list[dict[str, Any]], citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chart's data: per candidate (best first) its score, spread band, verdict and markers."""
    markers: dict[str, list[int]] = {}
    for citation in citations:
        markers.setdefault(citation["chunk_id"], []).append(int(citation["marker"]))
    rows = []
    for n, record in enumerate(evidence, start=1):
        final = float(record.get("final") or 0.0)
        spread = float(record.get("relevance_spread") or 0.0)
        rows.append(
            {
                "n": n,
                "final": final,
                "low": max(0.0, final - spread),
                "high": min(100.0, final + spread),
                "spread": spread,
                "kept": bool(record.get("kept")),
                "threshold": record.get("threshold"),
                "markers": sorted(markers.get(record.get("chunk_id", ""), [])),
                "title": str(record.get("title", "")),
                "reason": str(record.get("reason", "")),
            }
        )
    return rows


def chart_svg(
    rows: list[dict[str, Any]], threshold: float | None, width: int = 640, height: int = 240
) -> str:
    """Per-chunk final scores with their spread, the dynamic threshold line, kept and dropped apart (SVG)."""
    if not rows:
        return '<div class="cw-chart cw-empty">The evidence chart appears after the first answer.</div>'
    left, right, top, bottom = 40, 12, 40, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / len(rows)

    def y(score: float) -> float:
        return top + plot_h * (1 - max(0.0, min(100.0, score)) / 100)

    parts = [
        f'<svg class="cw-chart-svg" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="Final score of each candidate chunk, with the threshold">'
    ]
    for tick in (0, 25, 50, 75, 100):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="11" fill="#666">'
            f"{tick}</text>"
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" font-size="11" fill="#666">'
        "candidate chunks, best first (bars: spread of the relevance samples)</text>"
    )
    for row in rows:
        x = left + step * (row["n"] - 0.5)
        colour = KEPT_COLOUR if row["kept"] else DROPPED_COLOUR
        verdict = "kept" if row["kept"] else "dropped"
        tip = f"#{row['n']} {verdict}: final {row['final']:g}"
        if row["spread"]:
            tip += f" ± {row['spread']:g}"
        tip += f" · {row['title']}" + (f" · {row['reason']}" if row["reason"] else "")
        if row["spread"]:
            parts.append(
                f'<line class="cw-spread" x1="{x:.1f}" x2="{x:.1f}" y1="{y(row["high"]):.1f}" '
                f'y2="{y(row["low"]):.1f}" stroke="{colour}" stroke-width="2" opacity="0.6"/>'
            )
        fill = colour if row["kept"] else "white"
        parts.append(
            f'<circle class="cw-point cw-{verdict}" cx="{x:.1f}" cy="{y(row["final"]):.1f}" r="5" '
            f'fill="{fill}" stroke="{colour}" stroke-width="2"><title>{escape(tip)}</title></circle>'
        )
        if row["markers"]:
            label = "".join(f"[{m}]" for m in row["markers"])
            parts.append(
                f'<text x="{x:.1f}" y="{y(row["final"]) - 9:.1f}" text-anchor="middle" font-size="10" '
                f'fill="{colour}">{label}</text>'
            )
    own = [threshold if row.get("threshold") is None else row["threshold"] for row in rows]
    cuts = set(own)
    if len(cuts) > 1:  # a report: each section's rows were cut by its own threshold, a tick under each point
        for row, cut in zip(rows, own, strict=True):
            x = left + step * (row["n"] - 0.5)
            if isinstance(cut, int | float):
                parts.append(
                    f'<line class="cw-row-threshold" x1="{x - step * 0.4:.1f}" x2="{x + step * 0.4:.1f}" '
                    f'y1="{y(cut):.1f}" y2="{y(cut):.1f}" stroke="{THRESHOLD_COLOUR}" stroke-width="2">'
                    f"<title>threshold {cut:g}</title></line>"
                )
        threshold = None
    elif cuts and isinstance(next(iter(cuts)), int | float):
        threshold = next(iter(cuts))
    if isinstance(threshold, int | float):
        parts.append(
            f'<line class="cw-threshold" x1="{left}" x2="{width - right}" y1="{y(threshold):.1f}" '
            f'y2="{y(threshold):.1f}" stroke="{THRESHOLD_COLOUR}" stroke-width="2" stroke-dasharray="6 4"/>'
            f'<text x="{width - right}" y="{y(threshold) - 5:.1f}" text-anchor="end" font-size="11" '
            f'fill="{THRESHOLD_COLOUR}">threshold {threshold:g}</text>'
        )
    kept = sum(1 for r in rows if r["kept"])
    legend = width - right - 190
    parts.append(
        f'<circle cx="{legend}" cy="12" r="5" fill="{KEPT_COLOUR}" stroke="{KEPT_COLOUR}" stroke-width="2"/>'
        f'<text x="{legend + 10}" y="16" font-size="11">kept ({kept})</text>'
        f'<circle cx="{legend + 80}" cy="12" r="5" fill="white" stroke="{DROPPED_COLOUR}" stroke-width="2"/>'
        f'<text x="{legend + 90}" y="16" font-size="11">dropped ({len(rows) - kept})</text>'
        "</svg>"
    )
    return f'<div class="cw-chart">{"".join(parts)}</div>'


TABLE_COLUMNS = [
    "#",
    "cited",
    "verdict",
    "final",
    "threshold",
    "relevance",
    "reflect",
    "critic",
    "retrieval",
    "source",
]
"""The scores table's columns (scores 0-100; retrieval is the fused score in [0, 1]). A row is kept exactly
when its final score reaches its threshold (a report's sections each have their own)."""


def score_table(
    evidence: list[dict[str, Any]], citations: list[dict[str, Any]], threshold: float | None = None
) -> list[list[Any]]:
    """The scores table beside the chart: one row per candidate, in the chart's order.

    `threshold` is the cut of rows that record none of their own.
    """
    markers: dict[str, list[str]] = {}
    for citation in citations:
        markers.setdefault(citation["chunk_id"], []).append(f"[{citation['marker']}]")
    rows = []
    for n, record in enumerate(evidence, start=1):
        relevance = record.get("relevance_mean")
        spread = record.get("relevance_spread")
        shown = "-" if relevance is None else f"{relevance:g}" + (f" ± {spread:g}" if spread else "")
        place = " › ".join(part for part in (record.get("title", ""), record.get("section", "")) if part)
        snippet = " ".join(soften_source_markers(str(record.get("text", ""))).split())[:80]
        rows.append(
            [
                n,
                " ".join(markers.get(record.get("chunk_id", ""), [])),
                "kept" if record.get("kept") else "dropped",
                round(float(record.get("final") or 0.0), 1),
                _score(record.get("threshold", threshold)),
                shown,
                _score(record.get("reflection")),
                _score(record.get("critic")),
                round(float(record.get("retrieval") or 0.0), 3),
                f"{place}: {snippet}",
            ]
        )
    return rows


def _score(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def ingest_progress(files: int, total: int, chunks: int, seconds: float, texts: int = 0) -> str:
    """An upload's progress while it is ingested: files done, chunks stored, texts embedded, time so far.

    The texts embedded move while one large file embeds (the other counts move when a batch is stored).
    """
    return (
        f"**Ingesting…** {files} of {total} file(s) done, {chunks} chunks stored, {texts} texts embedded "
        f"({seconds:.0f}s)"
    )


def ingest_summary(report: Any, stats: Any, holder: str = "index") -> str:
    """An ingest's result for the page: files ingested, unchanged and skipped (each with the reason).

    With `stats`, what the whole index holds now (the administrator's); None leaves it out (a user's upload:
    the index's counts include collections they may not read).
    """
    lines = [
        f"**Ingested {report.ingested_files} of {report.files} file(s)** "
        f"({report.unchanged_files} unchanged, "
        f"{len(report.skipped)} skipped): documents +{report.documents_added} -{report.documents_removed}, "
        f"chunks +{report.chunks_added} -{report.chunks_removed} in {report.seconds:.1f}s.",
    ]
    for path, reason in report.skipped:
        lines.append(f"- skipped {escape_markdown(Path(path).name)}: {escape_markdown(reason)}")
    if stats is not None:
        lines.append(f"\nThe {holder} now holds {stats.documents} documents and {stats.chunks} chunks.")
    return "\n".join(lines)
