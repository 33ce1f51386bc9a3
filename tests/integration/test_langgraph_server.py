"""The graphs served by LangGraph's own dev server, driven through the LangGraph SDK (local mode)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.langgraph_dev import langgraph_dev

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    {
        "_id": "tea",
        "title": "Green tea",
        "text": "Green tea is made from unoxidised leaves of Camellia sinensis. "
        "It contains catechins such as EGCG, which are antioxidants.",
    },
    {
        "_id": "mars",
        "title": "Mars rovers",
        "text": "Perseverance landed in Jezero crater in February 2021. "
        "It collects rock samples for a future return mission.",
    },
    {
        "_id": "bread",
        "title": "Sourdough",
        "text": "Sourdough bread rises with a culture of wild yeast and lactic "
        "acid bacteria. The bacteria give the bread its sour taste.",
    },
]


def run_on_a_new_thread(url: str, graph_id: str, **run):
    """One run of a served graph on a fresh thread, waited for: its output."""
    from langgraph_sdk import get_client

    async def wait():
        client = get_client(url=url)
        thread = await client.threads.create()
        return await client.runs.wait(thread["thread_id"], graph_id, **run)

    return asyncio.run(wait())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A small index and `langgraph dev` serving langgraph.json on a free loopback port."""
    from citewise.index import Index

    root = tmp_path_factory.mktemp("served")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    with Index.open(root / "index") as index:
        index.ingest([corpus])
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("The launch code is 0000. It must never be read by a client.\n")
    (root / "docs").mkdir()
    (root / "docs" / "kiwi.txt").write_text("Kiwi birds cannot fly. They lay very large eggs.\n")
    (root / "docs" / "leak.txt").symlink_to(outside / "secret.txt")
    # deployment settings come from the server's environment (langgraph.json sets CITEWISE_SERVED=1)
    environment = {"CITEWISE_INDEX": str(root / "index"), "CITEWISE_DATA_ROOT": str(root)}
    try:
        with langgraph_dev(root, environment) as url:
            yield url, root / "index", corpus, outside
    except RuntimeError as error:  # it did not come up: the log says why
        pytest.fail(str(error))


def test_both_graphs_are_served_with_the_context_form(served):
    from langgraph_sdk import get_client

    url, *_ = served

    async def check():
        client = get_client(url=url)
        assistants = {a["graph_id"]: a["assistant_id"] for a in await client.assistants.search()}
        assert set(assistants) == {"citewise", "index"}
        schemas = await client.assistants.get_schemas(assistants["citewise"])
        assert list(schemas["input_schema"]["properties"]) == ["messages"]
        context = schemas["context_schema"]["properties"]
        for knob in (
            "index_dir",
            "model",
            "k",
            "alpha",
            "n_samples",
            "threshold_floor",
            "max_rewrites",
            "score_prompt",
        ):
            assert knob in context

    asyncio.run(check())


def test_a_question_gets_a_cited_local_answer_through_the_sdk(served):
    from citewise.index import Index

    url, index_dir, *_ = served
    question = {"messages": [{"role": "user", "content": "Where did Perseverance land?"}]}
    result = run_on_a_new_thread(url, "citewise", input=question)
    assert result["mode"] == "local"
    assert "Jezero" in result["answer"]
    assert result["citations"], result["answer"]
    with Index.open(index_dir) as index:
        stored = index.chunks([c["chunk_id"] for c in result["citations"]])
    assert {c["chunk_id"] for c in result["citations"]} <= set(stored)
    assert result["messages"][-1]["type"] == "ai"


def test_the_index_graph_reports_an_unchanged_file(served):
    url, index_dir, corpus, _ = served
    result = run_on_a_new_thread(url, "index", input={"paths": [str(corpus)]})
    assert result["report"]["unchanged_files"] == 1
    assert result["report"]["documents_added"] == 0
    assert result["stats"]["documents"] == len(DOCS)
    assert result["stats"]["consistent"] is True


def test_a_report_outline_is_approved_and_edited_through_the_sdk(served):
    """Studio's path: the run stops at the outline; resuming with an edited outline writes that outline."""
    from langgraph_sdk import get_client

    url, index_dir, *_ = served
    context = {"route": "report", "approve_outline": True}

    async def approve():
        client = get_client(url=url)
        thread = await client.threads.create()
        stopped = await client.runs.wait(
            thread["thread_id"],
            "citewise",
            input={"messages": [{"role": "user", "content": "Compare green tea and sourdough bread"}]},
            context=context,
        )
        state = await client.threads.get_state(thread["thread_id"])
        (pending,) = [i for task in state["tasks"] for i in task["interrupts"]]
        edited = [{"title": "Green tea leaves", "queries": ["green tea catechins"]}, {"title": "Sourdough"}]
        done = await client.runs.wait(
            thread["thread_id"], "citewise", command={"resume": edited}, context=context
        )
        return stopped, pending, done

    stopped, pending, done = asyncio.run(approve())
    assert "citations" not in stopped or not stopped["citations"]  # nothing written before approval
    assert pending["value"]["outline"] and "how_to_resume" in pending["value"]
    assert [s["title"] for s in done["outline"]] == ["Green tea leaves", "Sourdough"]
    assert "## Green tea leaves" in done["answer"] and "## Sourdough" in done["answer"]
    assert done["route"] == "report" and done["citations"]


def test_a_client_cannot_point_the_server_at_another_index_and_is_told_why(served):
    url, _, _, outside = served
    question = {"messages": [{"role": "user", "content": "Where did Perseverance land?"}]}
    result = run_on_a_new_thread(url, "citewise", input=question, context={"index_dir": str(outside)})
    assert result["error"]["kind"] == "server setting"
    reply = result["messages"][-1]
    assert reply["type"] == "ai" and "index_dir is a server setting" in reply["content"]
    assert "CITEWISE_INDEX" in reply["content"] and not result["citations"]
    assert not (outside / "chroma").exists()  # nothing was opened or created there


def test_the_index_graph_reads_only_under_the_data_root(served):
    url, _, _, outside = served

    def ingest(paths):
        return run_on_a_new_thread(url, "index", input={"paths": paths})

    refused = ingest([str(outside / "secret.txt")])
    assert "outside the data root" in refused["error"] and refused["report"] == {}
    climbing = ingest(["docs/../../" + outside.name + "/secret.txt"])
    assert "outside the data root" in climbing["error"]
    folder = ingest(["docs"])  # relative to the data root; holds a symlink that leads out
    assert folder["error"] is None
    assert folder["report"]["documents_added"] == 1
    assert [Path(p).name for p, reason in folder["report"]["skipped"]] == ["leak.txt"]
    assert folder["report"]["skipped"][0][1] == "a symlink leading outside the data root"


EVIDENCE_NODES = ("retrieve", "score", "reflect", "critique", "threshold", "rewrite")
QUERY_NODES = {
    *("condense", "rewrite", "rerank", "accuracy", "expand", "route", "answer", "outline", "approve"),
    *("collect", "customize", "verify", "references", "__start__", "__end__"),
    *(f"evidence:{n}" for n in (*EVIDENCE_NODES, "__start__", "__end__")),
    *(f"section:evidence:{n}" for n in (*EVIDENCE_NODES, "__start__", "__end__")),
    *("section:rerank", "section:accuracy", "section:expand", "section:write_section"),
}
"""The query graph as Studio draws it (xray): both subgraphs opened, the section's evidence step too."""

DIRECT_STEPS = [
    "condense", "rewrite", "evidence", "rerank", "route", "accuracy", "expand", "answer", "verify",
    "references",
]  # fmt: skip


def test_a_follow_up_streams_every_step_and_the_thread_keeps_both_turns(served):
    """A chat client's path: two streamed turns on one thread; the second is read with the first."""
    from langgraph_sdk import get_client

    url, *_ = served

    async def converse():
        client = get_client(url=url)
        thread = await client.threads.create()
        turns = []
        for question in ("Where did Perseverance land?", "What does it collect?"):
            events = [
                part
                async for part in client.runs.stream(
                    thread["thread_id"],
                    "citewise",
                    input={"messages": [{"role": "user", "content": question}]},
                    stream_mode=["updates", "messages-tuple"],
                )
            ]
            turns.append(events)
        state = await client.threads.get_state(thread["thread_id"])
        return turns, state

    turns, state = asyncio.run(converse())
    for events in turns:
        assert not [e for e in events if e.event == "error"], events
        steps = [node for e in events if e.event == "updates" for node in e.data]
        assert steps == DIRECT_STEPS
    messages = [e.data for e in turns[1] if e.event == "messages"]
    assert messages, [e.event for e in turns[1]]
    reply, metadata = messages[-1]
    assert metadata["langgraph_node"] == "references" and reply["type"] == "ai"
    assert "rock samples" in reply["content"]
    values = state["values"]
    assert reply["content"].startswith(values["answer"]) and "Mars rovers" in reply["content"]  # sources
    assert "[1]" in values["answer"], values["answer"]
    assert "Perseverance" in values["question"]  # the follow-up was read with the question before it
    assert values["citations"] and {c["title"] for c in values["citations"]} == {"Mars rovers"}
    assert [m["type"] for m in values["messages"]] == ["human", "ai", "human", "ai"]
    assert "Jezero" in values["messages"][1]["content"]


def test_both_graphs_are_drawn_with_every_node_and_the_form_holds_every_setting(served):
    from dataclasses import fields

    from langgraph_sdk import get_client

    from citewise.context import Context

    url, *_ = served

    async def look():
        client = get_client(url=url)
        assistants = {a["graph_id"]: a["assistant_id"] for a in await client.assistants.search()}
        query = await client.assistants.get_graph(assistants["citewise"], xray=True)
        index = await client.assistants.get_graph(assistants["index"], xray=True)
        schemas = await client.assistants.get_schemas(assistants["citewise"])
        return query, index, schemas

    query, index, schemas = asyncio.run(look())
    drawn = {node["id"] for node in query["nodes"]}
    handled = {n.removeprefix("__error_handler__") for n in drawn if n.startswith("__error_handler__")}
    assert drawn - {f"__error_handler__{n}" for n in handled} == QUERY_NODES, sorted(drawn)
    steps = {n for n in QUERY_NODES if ":" not in n and not n.startswith("__")} | {"evidence", "section"}
    assert handled == steps  # every step of the query graph ends a failed run with a reply
    assert {"ingest", "__start__", "__end__"} <= {node["id"] for node in index["nodes"]}
    form = schemas["context_schema"]["properties"]
    # every setting, and neither the resources nor the collections a run may read (the server sets them)
    assert set(form) == {f.name for f in fields(Context)} - {"resources", "collections"}
    assert schemas["context_schema"]["title"] == "Context"


def test_a_client_s_resources_are_dropped_and_the_server_s_answer(served):
    url, *_ = served
    question = {"messages": [{"role": "user", "content": "Where did Perseverance land?"}]}
    for _ in range(2):  # the resources a client sends never reach a run: each uses the server's
        result = run_on_a_new_thread(
            url, "citewise", input=question, context={"resources": {"index": "/"}, "k": 5}
        )
        assert result.get("error") is None, result.get("error")
        assert "Jezero" in result["answer"] and result["citations"]


def test_a_served_thread_is_its_user_s_alone_and_a_revoked_token_is_refused_at_once(served):
    """LangGraph's auth hook (citewise/app/served_auth.py): `citewise users add` tokens, owner filters."""
    import httpx
    from langgraph_sdk import get_client

    from citewise.app.access import open_access

    url, index_dir, *_ = served
    access = open_access(index_dir)
    tokens = {name: access.add_user(name) for name in ("erin", "frank")}
    question = {"messages": [{"role": "user", "content": "Where did Perseverance land?"}]}

    def client(name):
        return get_client(url=url, headers={"Authorization": f"Bearer {tokens[name]}"})

    async def probe():
        erin, frank, local = client("erin"), client("frank"), get_client(url=url)
        thread = await erin.threads.create()
        thread_id = thread["thread_id"]
        assert thread["metadata"]["owner"] == "erin"
        result = await erin.runs.wait(thread_id, "citewise", input=question)
        assert "Jezero" in result["answer"]
        failures = []
        for attempt in (
            frank.threads.get(thread_id),
            frank.threads.get_state(thread_id),
            frank.runs.wait(thread_id, "citewise", input=question),
            frank.threads.update(thread_id, metadata={"owner": "frank"}),
            frank.threads.delete(thread_id),
            local.threads.get(thread_id),  # loopback without a token: the local user, not erin
        ):
            try:
                await attempt
            except httpx.HTTPStatusError as error:
                failures.append(error.response.status_code)
        assert failures == [404] * 6
        assert thread_id not in {t["thread_id"] for t in await frank.threads.search()}
        assert thread_id in {t["thread_id"] for t in await erin.threads.search()}
        state = await erin.threads.get_state(thread_id)
        assert len(state["values"]["messages"]) == 2  # unchanged by frank's attempts
        assert {a["graph_id"] for a in await frank.assistants.search()} == {"citewise", "index"}

        open_access(index_dir).revoke_user("frank")  # as `citewise users revoke frank` does
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await frank.threads.search()
        assert refused.value.response.status_code == 401
        bad = get_client(url=url, headers={"Authorization": "Bearer not-a-token"})
        with pytest.raises(httpx.HTTPStatusError) as wrong:
            await bad.threads.search()
        assert wrong.value.response.status_code == 401

    asyncio.run(probe())


def test_the_served_graph_refuses_a_request_from_beyond_loopback_without_a_token(tmp_path, monkeypatch):
    from citewise.app import served_auth
    from citewise.app.access import open_access

    monkeypatch.setenv("CITEWISE_INDEX", str(tmp_path / "index"))
    monkeypatch.setenv("CITEWISE_TRUSTED_PROXIES", "198.51.100.2")
    monkeypatch.setenv("CITEWISE_USER_HEADER", "X-User")
    served_auth.served_gate.cache_clear()
    try:
        token = open_access(tmp_path / "index").add_user("gina")
        assert served_auth.request_user(None, "203.0.113.7", {}) is None
        assert served_auth.request_user(None, "127.0.0.1", {}) == "local"
        assert served_auth.request_user(f"Bearer {token}", "203.0.113.7", {}) == "gina"
        assert served_auth.request_user("Basic Z2luYTp4", "127.0.0.1", {}) is None
        assert served_auth.request_user(None, "198.51.100.2", {"x-user": "hana"}) == "hana"
        assert served_auth.request_user(None, "203.0.113.7", {"x-user": "hana"}) is None
    finally:
        served_auth.served_gate.cache_clear()


def test_a_served_run_reads_only_its_caller_s_collections_whatever_the_client_sends(served, tmp_path):
    """The served graph's runs read the authenticated user's grants (ServedContext.readable): a user
    without a grant on a collection gets nothing of it, even naming it in the run's context."""
    from langgraph_sdk import get_client

    from citewise.app.access import open_access
    from citewise.index import Index

    url, index_dir, *_ = served
    secret = tmp_path / "space.jsonl"
    record = {"_id": "athena", "title": "Mission log", "text": "The Athena probe landed in Utopia Planitia."}
    secret.write_text(json.dumps(record) + "\n")
    with Index.open(index_dir) as index:
        assert index.ingest([secret], collection="space").documents_added == 1
        (hit,) = index.search("Athena probe Utopia Planitia", k=1, collections=("space",))
    access = open_access(index_dir)
    tokens = {name: access.add_user(name) for name in ("gail", "hank")}
    access.grant("hank", "space", "read")
    question = {"messages": [{"role": "user", "content": "Where did the Athena probe land?"}]}

    async def ask(name, **run):
        client = get_client(url=url, headers={"Authorization": f"Bearer {tokens[name]}"})
        thread = await client.threads.create()
        return await client.runs.wait(thread["thread_id"], "citewise", input=question, **run)

    for run in ({}, {"context": {"collections": ["space"]}}):
        shown = json.dumps(asyncio.run(ask("gail", **run)))
        leaks = [s for s in ("Utopia", "Mission log", hit.doc_id, hit.chunk_id) if s in shown]
        assert leaks == [], shown
    allowed = asyncio.run(ask("hank"))
    assert "Utopia" in allowed["answer"] and hit.doc_id in {c["doc_id"] for c in allowed["citations"]}


def test_a_served_upload_goes_to_a_collection_its_caller_may_write_or_is_refused(served):
    """The index graph ingests a user's files into the first collection they may write; without a write
    grant, or to remove, a user other than the local one is refused with the reason."""
    from langgraph_sdk import get_client

    from citewise.app.access import open_access
    from citewise.index import Index

    url, index_dir, *_ = served
    root = index_dir.parent
    (root / "docs" / "owls.txt").write_text("Snowy owls hunt lemmings on the tundra in daylight.\n")
    access = open_access(index_dir)
    tokens = {name: access.add_user(name) for name in ("iris", "jack")}
    access.grant("jack", "birds", "write")

    async def run(name, **given):
        client = get_client(url=url, headers={"Authorization": f"Bearer {tokens[name]}"})
        thread = await client.threads.create()
        return await client.runs.wait(thread["thread_id"], "index", input=given)

    refused = asyncio.run(run("iris", paths=["docs/owls.txt"]))
    assert "may not add documents" in refused["error"] and refused["report"] == {}
    added = asyncio.run(run("jack", paths=["docs/owls.txt"]))
    assert added["error"] is None and added["report"]["documents_added"] == 1, added
    with Index.open(index_dir) as index:
        (hit,) = index.search("snowy owls hunting lemmings", k=1, collections=("birds",))
        assert "owls" in hit.text
    removal = asyncio.run(run("jack", paths=["docs/owls.txt"], remove=True))
    assert "administrator" in removal["error"]


def test_a_served_ask_failed_ask_and_ingest_are_in_the_audit_log_as_the_caller_s(served):
    """Runs of the served graphs are audited as the API's asks and the command line's ingests are."""
    from langgraph_sdk import get_client

    from citewise.app.access import open_access

    url, index_dir, *_ = served
    root = index_dir.parent
    (root / "docs" / "herons.txt").write_text("Grey herons nest together in colonies called heronries.\n")
    access = open_access(index_dir)
    token = access.add_user("kate")
    access.grant("kate", "wading", "write")
    question = {"messages": [{"role": "user", "content": "Where did Perseverance land?"}]}

    async def run(graph, **given):
        client = get_client(url=url, headers={"Authorization": f"Bearer {token}"})
        thread = await client.threads.create()
        return thread["thread_id"], await client.runs.wait(thread["thread_id"], graph, **given)

    asked, answered = asyncio.run(run("citewise", input=question))
    refused, failed = asyncio.run(run("citewise", input=question, context={"index_dir": "/elsewhere"}))
    _, added = asyncio.run(run("index", input={"paths": ["docs/herons.txt"]}))
    assert answered["citations"] and failed["error"] and added["report"]["documents_added"] == 1
    assert added["stats"] == {}  # the whole index's counts are the administrator's

    events = open_access(index_dir).events(user="kate")
    asks = {e["thread_id"]: e for e in events if e["action"] == "ask"}
    keys = {entry["doc_id"]: entry["key"] for entry in answered["references"]["primary"]}
    cited = {
        c["doc_id"]: {"doc_id": c["doc_id"], "key": keys[c["doc_id"]], "title": c["title"]}
        for c in answered["citations"]
    }
    assert asks[asked] == {
        "at": asks[asked]["at"],
        "user": "kate",
        "action": "ask",
        "thread_id": asked,
        "question": answered["question"],
        "route": answered["route"],
        "cited": list(cited.values()),  # each cited document once, with its own key, as the API logs it
        "failed": False,
        "via": "langgraph",
    }
    assert asks[refused]["failed"] is True and asks[refused]["cited"] == []
    assert len(asks) == 2  # one record a turn
    (ingest,) = [e for e in events if e["action"] == "ingest"]
    assert ingest["paths"] == [str((root / "docs" / "herons.txt").resolve())]
    assert (ingest["collection"], ingest["via"], ingest["documents_added"]) == ("wading", "langgraph", 1)
    assert token not in json.dumps(events)
