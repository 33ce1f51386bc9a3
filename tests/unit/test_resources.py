"""The resources a way in builds once and hands to the graph in the Context (index, models, embedder)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from citewise.app.served import RESOURCES, ServedContext
from citewise.app.served import graph as served_graph
from citewise.context import Context
from citewise.core import llms
from citewise.core.indexes import open_index
from citewise.core.resources import Resources, resources_of
from citewise.graph.query import graph
from citewise.index import Index
from citewise.index.embeddings import Embedder

MODEL = "openai/test-model"


@pytest.fixture
def base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI-compatible server is configured (nothing listens: no request is sent)."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")


def test_the_context_schema_leaves_resources_out_and_the_served_one_is_the_same() -> None:
    schema = graph.get_context_jsonschema()
    # neither the resources nor the asker's collections are settings a client may give (the way in sets them)
    assert "resources" not in schema["properties"] and "collections" not in schema["properties"]
    assert served_graph.get_context_jsonschema() == schema  # Studio's form is unchanged, name and all
    assert schema["title"] == "Context"
    assert len(schema["properties"]) == len(dataclasses.fields(Context)) - 2


def test_a_served_run_s_json_context_gets_the_server_s_resources() -> None:
    from langgraph.pregel.main import _coerce_context

    context = _coerce_context(served_graph.context_schema, {"k": 3})
    assert isinstance(context, ServedContext) and context.k == 3
    assert context.resources is RESOURCES
    assert ServedContext().resources is RESOURCES
    assert Context().resources is None  # in-process: the caller's own, or one made at first use


def test_a_context_without_resources_gets_its_own_once_and_keeps_it() -> None:
    context = Context()
    made = resources_of(context)
    assert isinstance(made, Resources) and resources_of(context) is made and context.resources is made
    assert resources_of(Context()) is not made
    assert dataclasses.replace(context, k=3).resources is made  # a changed setting keeps the resources
    assert "resources" not in repr(context) and Context() == context  # not a setting


def test_a_context_refuses_what_is_not_resources() -> None:
    with pytest.raises(ValueError, match="resources must be"):
        Context(resources={"index": "/"})


async def test_models_are_built_once_per_loop_and_settings(base_url: None) -> None:
    resources = Resources()
    context = Context(model=MODEL)
    judge, writer = resources.models(context)
    assert judge is not None and writer is not None
    assert resources.models(context) == (judge, writer)
    assert resources.models(dataclasses.replace(context, k=3)) == (judge, writer)  # not a model setting
    warmer = resources.models(dataclasses.replace(context, writer_temperature=0.9))
    assert warmer[1] is not writer and warmer[1].model.temperature == 0.9
    assert resources.models(dataclasses.replace(context, judge_model="openai/other"))[0] is not judge
    assert Resources().models(context)[0] is not judge  # other resources, other models
    assert judge.facts is resources.models(dataclasses.replace(context, timeout_seconds=5))[0].facts


def test_another_event_loop_gets_its_own_models(base_url: None) -> None:
    resources = Resources()
    context = Context(model=MODEL)

    async def pair() -> tuple:
        return resources.models(context)

    first, second = asyncio.run(pair()), asyncio.run(pair())
    assert first[0] is not second[0]  # each asyncio.run has its own clients
    assert first[0].facts is second[0].facts  # what the server taught is kept across loops


async def test_local_stages_get_no_models_even_from_given_ones() -> None:
    pair = (object(), object())
    context = Context(model=MODEL, profile="lean", resources=Resources(models=pair))
    assert llms.models(context, "score") == pair
    assert llms.models(context, "rewrite") == (None, None)  # the lean profile runs it locally
    assert llms.models(Context(resources=Resources(models=pair))) == (None, None)  # local mode


async def test_a_given_index_and_reranker_are_handed_out() -> None:
    fake = object()
    resources = Resources(index=fake, reranker=None)
    context = Context(resources=resources)
    assert await open_index(context) is fake
    assert resources.reranker(context) is None


@pytest.fixture
def two_document_index(tmp_path: Path, embedder: Embedder, small_corpus_records: list[dict[str, str]]) -> str:
    """An index of the small corpus's first two documents, built with the session's embedder."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records[:2]), encoding="utf-8")
    with Index.open(tmp_path / "index", embedder=embedder) as built:
        built.ingest([corpus])
    return str(tmp_path / "index")


async def test_the_index_is_opened_once_with_the_resources_embedder_and_forgotten_on_request(
    two_document_index: str, embedder: Embedder
) -> None:
    resources = Resources(embedder=embedder)
    context = Context(index_dir=two_document_index, resources=resources)
    index = await open_index(context)
    assert index.embedder is embedder  # the model the resources hold, not a second copy
    assert await open_index(dataclasses.replace(context, k=3)) is index
    assert resources.embedder(embedder.name) is embedder
    resources.forget_index(context)
    again = await open_index(context)
    assert again is not index and again.embedder is embedder


async def test_closing_the_resources_closes_the_indexes_they_opened(
    two_document_index: str, embedder: Embedder
) -> None:
    import sqlite3

    with Resources(embedder=embedder) as resources:
        context = Context(index_dir=two_document_index, resources=resources)
        index = await open_index(context)
    with pytest.raises(sqlite3.ProgrammingError):  # its connection is closed
        index.docstore.db.execute("SELECT 1")
    reopened = await open_index(context)  # used again: opened afresh
    assert reopened is not index and reopened.stats().documents == 2
    resources.close()


async def test_a_node_reads_the_resources_from_its_runtime() -> None:
    from citewise.nodes.rerank import rerank

    class Reversing:
        async def rerank(self, query: str, texts: list[str], top_n: int) -> list[tuple[int, float]]:
            return [(i, 1.0) for i in reversed(range(len(texts)))]

    evidence = [
        {"chunk_id": "a", "text": "a", "final": 90.0, "kept": True},
        {"chunk_id": "b", "text": "b", "final": 80.0, "kept": True},
        {"chunk_id": "c", "text": "c", "final": 70.0, "kept": True},
    ]
    context = Context(resources=Resources(reranker=Reversing()))
    result = await rerank({"question": "q", "evidence": evidence}, Runtime(context=context))
    assert result["kept"][0] == "c"  # the reranker's best first, though its score was the lowest
