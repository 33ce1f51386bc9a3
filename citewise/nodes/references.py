"""references: primary references (the source documents) and secondary ones (the works they cite).

Coarse secondary references are every bibliography entry cited anywhere in a used paragraph; fine ones
are those whose markers appear in the very source lines that support an answer sentence (LLM-Ref).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from citewise.context import Context
from citewise.core.evidence import CLOSEST_HEADING, CONTRADICTS, contradiction_note, is_abstention
from citewise.core.indexes import in_thread, open_index
from citewise.index.citations import find_markers, readable_entry
from citewise.index.reading import SearchIndex
from citewise.state import Citation, References, State


def resolve_keys(marker_keys: tuple[str, ...], bibliography: dict[str, str], order: list[str]) -> list[str]:
    """Bibliography keys a marker names: the key itself, or the n-th entry for a bare number."""
    keys = []
    for key in marker_keys:
        if key in bibliography:
            keys.append(key)
        elif key.isdigit() and 1 <= int(key) <= len(order):
            keys.append(order[int(key) - 1])
    return keys


def build_references(
    index: SearchIndex, citations: list[Citation], support: list[dict[str, Any]]
) -> References:
    """Primary and secondary references for the cited chunks."""
    primary: dict[str, dict[str, Any]] = {}
    chunk_ids = [c["chunk_id"] for c in citations]
    chunks = index.chunks(chunk_ids)
    for citation in citations:
        doc_id = citation["doc_id"]
        if doc_id not in primary:
            record = index.document(doc_id)
            primary[doc_id] = {
                "doc_id": doc_id,
                "title": record.title if record else citation["title"],
                "file": record.file if record else "",
                "key": record.key if record else "",
                "markers": [],
            }
            authors = record.metadata.get("authors") if record else None
            if isinstance(authors, str) and authors.strip():  # as the loader read them (unarXive's metadata)
                primary[doc_id]["authors"] = authors
        primary[doc_id]["markers"].append(citation["marker"])
    fine_lines = {(line["chunk_id"], line["text"]) for item in support for line in item.get("lines", [])}
    secondary: dict[tuple[str, str], dict[str, Any]] = {}
    for chunk_id in chunk_ids:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        paragraph = index.paragraph(chunk.paragraph_id)
        bibliography = index.bibliography(chunk.doc_id)
        if paragraph is None or not bibliography:
            continue
        order = list(bibliography)
        fine_keys = {
            key
            for cid, text in fine_lines
            if cid == chunk_id
            for marker in find_markers(text)
            for key in resolve_keys(marker.keys, bibliography, order)
        }
        for key in paragraph.citations:
            if key not in bibliography:
                continue
            entry = secondary.setdefault(
                (chunk.doc_id, key),
                {
                    "doc_id": chunk.doc_id,
                    "cited_in": primary.get(chunk.doc_id, {}).get("title", ""),
                    "key": key,
                    "text": readable_entry(bibliography[key]),
                    "fine": False,
                },
            )
            entry["fine"] = entry["fine"] or key in fine_keys
    ordered = sorted(secondary.values(), key=lambda e: (not e["fine"], e["doc_id"], e["key"]))
    return {"primary": list(primary.values()), "secondary": ordered}


def sources_footer(references: References, *, abstained: bool = False) -> str:
    """A short 'Sources' list for the chat message ('Closest passages' when the reply is a no-answer)."""
    if not references["primary"]:
        return ""
    lines = ["", f"{CLOSEST_HEADING}:" if abstained else "Sources:"]
    for entry in references["primary"]:
        markers = ", ".join(f"[{m}]" for m in sorted(set(entry["markers"])))
        note = f" ({CONTRADICTS})" if CONTRADICTS in entry.get("flags", []) else ""
        lines.append(f"{markers} {entry['title']}{note}")
    return "\n".join(lines)


async def references(state: State, runtime: Runtime[Context]) -> dict:
    """Decide the primary and secondary references of the answer, and reply in the conversation."""
    index = await open_index(runtime.context)
    citations = state.get("citations", [])
    refs = await in_thread(build_references, index, citations, state.get("support", []))
    evidence = state.get("evidence", [])
    contradicting = {r.get("doc_id") for r in evidence if CONTRADICTS in r.get("flags", [])}
    for entry in refs["primary"]:
        if entry["doc_id"] in contradicting:
            entry["flags"] = [CONTRADICTS]
    answer = state.get("answer", "")
    abstained = is_abstention(answer)
    if abstained:  # the works that passages which do not answer cite are no references of anything
        refs["secondary"] = []
    note = contradiction_note(citations, evidence)
    if note:
        answer = f"{answer}\n\n{note}"
    result = {
        "references": refs,
        "messages": [AIMessage(content=answer + sources_footer(refs, abstained=abstained))],
    }
    turn = {"question": state.get("question"), "route": state.get("route"), "citations": citations}
    turn["references"] = refs
    await asyncio.to_thread(runtime.context.log, "ask", turn)  # the turn is over (a served run: audited)
    return {**result, "answer": answer} if note else result
