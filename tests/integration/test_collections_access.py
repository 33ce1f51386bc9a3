"""A leakage campaign through the API: two users, three collections (one shared), both index tiers.

Each question is written so that its best evidence is in a collection its asker cannot read. The whole JSON
reply (answer, evidence, citations, references, scores) is searched for anything of an unreadable document:
its id, its title, a chunk id or a sentence of its text. Every count must be 0, and the user who may read the
evidence gets it cited. The API is `citewise api`'s app (FastAPI's TestClient, from an address beyond
loopback, with bearer tokens), over a fresh local folder or shared store, answering in local mode.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from citewise.app.access import AccessStore, open_access, require_login
from citewise.app.api import build_app
from citewise.context import Context
from citewise.core.resources import Resources
from citewise.index.embeddings import Embedder
from citewise.index.shared.pgserver import Server

pytestmark = pytest.mark.integration

REMOTE = ("203.0.113.7", 40000)
"""A client beyond loopback (TEST-NET-3)."""

COLLECTIONS = {"hr": ["vaccines", "black-holes"], "legal": ["sourdough", "photosynthesis"]}
"""Two private collections; every other document of the small corpus is in "shared"."""

GRANTS = {"ann": ["hr", "shared"], "ben": ["legal", "shared"]}

QUESTIONS = {
    "hr": "How do vaccines train the immune system to recognise a pathogen?",
    "legal": "How is sourdough bread leavened by a starter of wild yeast?",
}
"""Each question's best evidence is in its collection."""


@dataclass
class Deployment:
    api: TestClient
    access: AccessStore
    tokens: dict[str, str]
    documents: dict[str, dict[str, list[str]]]
    """Per collection, per document id: the strings that would show it (id, title, chunk ids, sentences)."""


@pytest.fixture(params=["local", "shared"])
def deployment(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    embedder: Embedder,
    postgres: Server,
    small_corpus_records: list[dict[str, str]],
) -> Iterator[Deployment]:
    store = None
    if request.param == "shared":
        name = f"leak_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        store = postgres.dsn.rsplit("/", 1)[0] + f"/{name}"
    resources = Resources(embedder=embedder)
    context = Context(index_dir=str(tmp_path / "index"), store=store, resources=resources)
    placed = {r["_id"]: "shared" for r in small_corpus_records}
    placed |= {key: collection for collection, keys in COLLECTIONS.items() for key in keys}
    with resources.writer(context) as writer:
        for collection in ("hr", "legal", "shared"):
            path = tmp_path / f"{collection}.jsonl"
            records = [r for r in small_corpus_records if placed[r["_id"]] == collection]
            path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            assert writer.ingest([path], collection=collection).documents_added == len(records)
    index = asyncio.run(resources.index(context))
    index.refresh()
    documents: dict[str, dict[str, list[str]]] = {}
    for collection in ("hr", "legal"):
        for hit in index.search(QUESTIONS[collection], k=50, collections=(collection,)):
            record = index.document(hit.doc_id)
            assert record is not None
            shown = documents.setdefault(collection, {}).setdefault(hit.doc_id, [hit.doc_id, record.title])
            shown += [hit.chunk_id, hit.text[:60]]
    access: AccessStore = open_access(context.index_dir, store)
    tokens = {user: access.add_user(user) for user in GRANTS}
    for user, readable in GRANTS.items():
        for collection in readable:
            access.grant(user, collection, "read")
    gate = require_login("0.0.0.0", "the API", access)
    threads = tmp_path / "threads.sqlite"
    with TestClient(build_app(context, str(threads), gate=gate, audit=access), client=REMOTE) as client:
        yield Deployment(client, access, tokens, documents)
    access.close()
    resources.close()


def _leaks(reply: str, shown: dict[str, list[str]]) -> list[str]:
    """Every string of an unreadable document found in a reply."""
    return [text for strings in shown.values() for text in set(strings) if text and text in reply]


def test_no_passage_title_citation_reference_or_score_of_an_unreadable_document_reaches_a_reply(
    deployment: Deployment,
) -> None:
    api, tokens = deployment.api, deployment.tokens
    for asker, other in (("ben", "ann"), ("ann", "ben")):
        hidden = "hr" if asker == "ben" else "legal"
        for mode in ("answer", "report"):
            reply = api.post(
                f"/threads/{asker}-{hidden}-{mode}/ask",
                json={"question": QUESTIONS[hidden], "mode": mode},
                headers={"Authorization": f"Bearer {tokens[asker]}"},
            )
            assert reply.status_code == 200, reply.text
            assert _leaks(reply.text, deployment.documents[hidden]) == [], (asker, mode, reply.json())
        allowed = api.post(
            f"/threads/{other}-{hidden}/ask",
            json={"question": QUESTIONS[hidden]},
            headers={"Authorization": f"Bearer {tokens[other]}"},
        )
        assert allowed.status_code == 200, allowed.text
        cited = {c["doc_id"] for c in allowed.json()["citations"]}
        assert cited & set(deployment.documents[hidden]), allowed.json()  # the reader gets the answer


def test_grants_are_read_afresh_and_a_revoked_one_hides_the_collection_at_the_next_ask(
    deployment: Deployment,
) -> None:
    api, headers = deployment.api, {"Authorization": f"Bearer {deployment.tokens['ben']}"}
    before = api.post("/threads/ben-1/ask", json={"question": QUESTIONS["legal"]}, headers=headers)
    assert {c["doc_id"] for c in before.json()["citations"]} & set(deployment.documents["legal"])
    deployment.access.revoke_grant("ben", "legal", "read")  # as `citewise users revoke-grant` does
    after = api.post("/threads/ben-2/ask", json={"question": QUESTIONS["legal"]}, headers=headers)
    assert after.status_code == 200
    assert _leaks(after.text, deployment.documents["legal"]) == [], after.json()
    events = deployment.access.events(user="local")
    assert [e["action"] for e in events if e["action"].startswith("grant")][-1] == "grant.revoke"


async def test_a_user_s_upload_on_the_page_reports_its_own_ingest_and_not_the_index_s_counts(
    tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]]
) -> None:
    """The whole index's counts include collections the uploader may not read: only the administrator's
    upload summary holds them (as only the administrator's index graph run returns them)."""
    from types import SimpleNamespace

    from citewise.app.web.page import ChatPage

    resources = Resources(embedder=embedder)
    context = Context(index_dir=str(tmp_path / "index"), resources=resources)
    corpus = tmp_path / "hr.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records[:6]), encoding="utf-8")
    with resources.writer(context) as writer:
        writer.ingest([corpus], collection="hr")
    access = open_access(context.index_dir)
    access.add_user("cleo")
    access.grant("cleo", "notes", "write")
    owls, herons = tmp_path / "owls.txt", tmp_path / "herons.txt"
    owls.write_text("Snowy owls hunt lemmings on the tundra in daylight.\n")
    herons.write_text("Grey herons nest together in colonies called heronries.\n")
    cleo = SimpleNamespace(client=SimpleNamespace(host=REMOTE[0]), username="cleo", headers={})
    pages = (
        (ChatPage(context, str(tmp_path / "t.sqlite"), gate=require_login("0.0.0.0", "page", access)), cleo),
        (ChatPage(context, str(tmp_path / "t.sqlite")), None),  # loopback: the administrator
    )
    shown = []
    try:
        for (page, request), upload in zip(pages, (owls, herons), strict=True):
            shown.append([part async for part in page.ingest([str(upload)], request)][-1])  # type: ignore[arg-type]
    finally:
        for page, _ in pages:
            await page.close()
        access.close()
        resources.close()
    assert "Ingested 1 of 1 file(s)" in shown[0] and "now holds" not in shown[0], shown[0]
    assert "The index now holds 8 documents" in shown[1], shown[1]
