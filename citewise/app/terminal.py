"""How answers, reports and evidence print in a terminal (`ask`, `chat`), and the output keys.

The answer with its numbered markers, then the sources, the secondary references and the evidence table;
a report's sections and its validation. Shared by the command line, the terminal chat and the chat page, so
none of them imports another.
"""

from __future__ import annotations

import textwrap
from enum import StrEnum
from typing import Any, Literal

import typer

from citewise.index.citations import soften_source_markers


class AnswerMode(StrEnum):
    """What `ask` writes."""

    auto = "auto"
    answer = "answer"
    report = "report"


ROUTES: dict[AnswerMode, Literal["auto", "direct", "report"]] = {
    AnswerMode.auto: "auto",
    AnswerMode.answer: "direct",
    AnswerMode.report: "report",
}


OUTPUT_KEYS: dict[str, object] = {
    "question": "",
    "answer": "",
    "mode": "local",
    "route": "direct",
    "route_reason": "",
    "citations": [],
    "references": {"primary": [], "secondary": []},
    "evidence": [],
    "threshold": None,
    "usage": {},
    "unsupported": [],
    "gentext": "",
    "degraded": [],
}


def with_source_keys(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with each citation given its source's own key (from the primary references; "" if none)."""
    primary = payload.get("references", {}).get("primary", [])
    keys = {entry.get("doc_id"): entry.get("key", "") for entry in primary}
    payload["citations"] = [{**c, "key": keys.get(c.get("doc_id"), "")} for c in payload.get("citations", [])]
    return payload


def report_payload(result: dict) -> dict:
    """The report's own keys: outline, sections (in outline order) and validation."""
    sections = []
    for section in result.get("sections", {}).values():
        sections.append(
            {
                "id": section.get("id", ""),
                "title": section.get("title", ""),
                "status": section.get("status", ""),
                "text": section.get("text", ""),
                "markers": section.get("markers", []),
                "evidence": section.get("kept", []),
                "threshold": section.get("threshold"),
                "error": section.get("error", ""),
            }
        )
    return {
        "outline_type": result.get("outline_type", ""),
        "outline": [
            {key: s.get(key) for key in ("id", "title", "goal", "queries", "documents")}
            for s in result.get("outline", [])
        ],
        "sections": sections,
        "validation": result.get("validation", {}),
    }


def show_answer(result: dict) -> None:
    """Print an answer or report for people: the text, references, and a compact evidence table."""
    mode = "local mode (no LLM configured)" if result["mode"] == "local" else "LLM mode"
    typer.secho(f"Q: {result['question']}  [{mode}]", bold=True)
    if result.get("route") == "report":
        typer.secho(f"Report ({result.get('route_reason', '')})", dim=True)
    typer.echo()
    for line in result["answer"].splitlines():
        if line.startswith("#"):
            typer.secho(line.lstrip("# ").upper(), bold=True)
        else:
            typer.echo(textwrap.fill(line, 110) if line.strip() else "")
    typer.echo()
    for citation in result["citations"]:  # the quote, like the answer, never shows a source's "[43]"
        quote = soften_source_markers(citation["text"])
        typer.echo(
            textwrap.fill(
                f'[{citation["marker"]}] {citation["title"]}: "{quote}"',
                110,
                subsequent_indent="    ",
            )
        )
    references = result["references"]
    if references["secondary"]:
        typer.echo()
        typer.secho(
            "Works cited by these sources (* cited in the very line that supports the answer):",
            bold=True,
        )
        for entry in references["secondary"][:15]:
            mark = "*" if entry["fine"] else "-"
            typer.echo(textwrap.fill(f"{mark} {entry['text']}", 110, subsequent_indent="    "))
        if len(references["secondary"]) > 15:
            typer.echo(f"  ... and {len(references['secondary']) - 15} more (--json lists all)")
    typer.echo()
    if result.get("route") == "report":
        show_sections(result)
    show_evidence(result)
    if result.get("unsupported"):
        typer.secho(f"Dropped {len(result['unsupported'])} unsupported sentence(s).", fg=typer.colors.YELLOW)
    show_degraded(result.get("degraded") or [])
    usage = {stage: spent for stage, spent in result.get("usage", {}).items() if spent.get("calls")}
    if usage:
        calls = sum(spent["calls"] for spent in usage.values())
        tokens_in = sum(spent["input_tokens"] for spent in usage.values())
        tokens_out = sum(spent["output_tokens"] for spent in usage.values())
        stages = ", ".join(f"{stage} {spent['calls']}" for stage, spent in usage.items())
        typer.echo(f"Model use: {calls} calls ({stages}), {tokens_in} input and {tokens_out} output tokens.")


def show_degraded(degraded: list[dict]) -> None:
    """The stages that fell back to a weaker method, why, and how many chunks it decided (none: nothing)."""
    if not degraded:
        return
    typer.secho("Degraded:", bold=True, fg=typer.colors.YELLOW)
    for entry in degraded:
        chunks = len(entry.get("chunks", []))
        typer.secho(f"  {entry['stage']}: {entry['reason']} ({chunks} chunk(s))", fg=typer.colors.YELLOW)


def show_sections(result: dict) -> None:
    """One line per report section (status, evidence kept, its threshold, markers) and the validation."""
    typer.secho(f"Sections ({result.get('outline_type') or 'outline'}):", bold=True)
    for section in result.get("sections", []):
        markers = " ".join(f"[{m}]" for m in section.get("markers", []))
        threshold = section.get("threshold")
        cut = f"threshold {threshold:g}" if isinstance(threshold, int | float) else "no threshold"
        kept = f"{len(section['evidence'])} kept, {cut}"
        typer.echo(f"  {section['title'][:48]:48} {section['status']:11} {kept}  {markers}".rstrip())
        if section.get("error"):
            typer.secho(f"    {section['error']}", fg=typer.colors.YELLOW)
    validation = result.get("validation") or {}
    if validation:
        verdict = (
            "passed" if validation.get("passed") else "problems: " + "; ".join(validation.get("problems", []))
        )
        typer.echo(f"  validation after {validation.get('attempts', 0)} draft(s): {verdict}")
    typer.echo()


def show_evidence(result: dict, rows: int = 12) -> None:
    """The evidence table: verdict, each stage's score, the marker citing it, and where the chunk is from."""
    from citewise.core.evidence import shared_threshold, threshold_text  # the stores load only when needed

    evidence = result["evidence"]
    kept = sum(1 for r in evidence if r.get("kept"))
    cut = threshold_text(evidence, result["threshold"])
    per_row = shared_threshold(evidence, result["threshold"]) is None and bool(evidence)
    typer.secho(f"Evidence: {len(evidence)} candidates, {kept} kept ({cut}; scores 0-100):", bold=True)
    markers: dict[str, list[str]] = {}
    for citation in result["citations"]:
        markers.setdefault(citation["chunk_id"], []).append(f"[{citation['marker']}]")
    own = f" {'cut':>5}" if per_row else ""
    typer.echo(
        f"  {'':4} {'final':>5}{own} {'relevance':>10} {'reflect':>7} {'critic':>6}  {'cited':5}  source"
    )
    for record in evidence[:rows]:
        relevance = record.get("relevance_mean")
        spread = record.get("relevance_spread")
        shown = "-" if relevance is None else f"{relevance:g}" + (f"±{spread:g}" if spread else "")
        place = (record.get("title", "")[:40], record.get("section", "")[:24])
        where = " › ".join(part for part in place if part)
        snippet = " ".join(soften_source_markers(record.get("text", "")).split())[:50]
        own = f" {record.get('threshold', result['threshold']) or 0:5.1f}" if per_row else ""
        typer.echo(
            f"  {'kept' if record.get('kept') else 'drop'} {record.get('final', 0):5.1f}{own} {shown:>10} "
            f"{_score(record.get('reflection')):>7} {_score(record.get('critic')):>6}  "
            f'{" ".join(markers.get(record["chunk_id"], [])):5}  {where}: "{snippet}…"'
        )
    if len(evidence) > rows:
        typer.echo(f"  ... and {len(evidence) - rows} more (--json lists every candidate with its reason)")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
