"""The page with logins in Chromium: a user sees nothing of a collection they may not read, another cites it.

`citewise serve --login` asks every visitor for a user name and API token (as beyond loopback). Alice may
read the default collection only; Bob may read `vault` too, which holds the one document that answers the
question. Whatever the page shows Alice (the answer, its references, the evidence table and chart, the
passage, the threads) holds no title, sentence or id of that document; Bob's answer cites it. On both tiers:
the index in a folder, and a shared PostgreSQL store the page answers from (`serve --store`), its users and
grants in that store's database.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.page import ANSWER_TIMEOUT, ask, leaving, serving

from citewise.app.access import open_access
from citewise.context import Context
from citewise.core.resources import Resources
from citewise.index.embeddings import Embedder
from citewise.index.shared.pgserver import serve as serve_postgres

pytestmark = pytest.mark.integration

SECRET = {
    "_id": "athena-log",
    "title": "Athena probe mission log",
    "text": "The Athena probe landed in Utopia Planitia on the third of March. "
    "Its drill found brine ice beneath the regolith at a depth of two metres.",
}
QUESTION = "Where did the Athena probe land, and what did its drill find?"
TELLTALES = ("Athena probe mission log", "Utopia Planitia", "brine ice", "regolith", "athena-log")


@pytest.fixture(scope="module", params=["local", "shared"])
def logins(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Embedder,
    small_corpus_records: list[dict[str, str]],
) -> Iterator[tuple[str, dict[str, str], str]]:
    """`serve --login` over the twelve documents (default) and the secret (vault): URL, tokens, doc id.

    The index is a folder, or (`shared`) a store on a PostgreSQL of the test's own that the page answers
    from; either is written and read only as the ways in open it (`Resources` of a Context).
    """
    root = tmp_path_factory.mktemp(f"page-logins-{request.param}")
    public, vault = root / "public.jsonl", root / "vault.jsonl"
    public.write_text("".join(json.dumps(r) + "\n" for r in small_corpus_records), encoding="utf-8")
    vault.write_text(json.dumps(SECRET) + "\n", encoding="utf-8")
    cluster = Path(tempfile.mkdtemp(prefix="citewise-pg-"))  # a folder the postgres user may enter
    cluster.chmod(0o755)
    try:
        with serve_postgres(cluster / "cluster") if request.param == "shared" else _no_server() as postgres:
            store = postgres.dsn if postgres is not None else None
            context = Context(index_dir=str(root / "index"), store=store)
            resources = Resources(embedder=embedder)
            try:
                with resources.writer(context) as writer:
                    assert writer.ingest([public]).documents_added == len(small_corpus_records)
                    assert writer.ingest([vault], collection="vault").documents_added == 1
                with ThreadPoolExecutor(1) as pool:  # Playwright's own loop runs in this thread
                    index = pool.submit(asyncio.run, resources.index(context)).result()
                (hit,) = index.search(QUESTION, k=1)  # the best evidence of all is the secret's
                assert index.document(hit.doc_id).title == SECRET["title"]  # type: ignore[union-attr]
            finally:
                resources.close()
            access = open_access(root / "index", store)
            tokens = {name: access.add_user(name) for name in ("alice", "bob")}
            access.grant("bob", "vault", "read")
            access.close()
            where = ("--store", store) if store else ()
            with serving(root, root / "index", "--login", *where) as url:
                yield url, tokens, hit.doc_id
    finally:
        shutil.rmtree(cluster, ignore_errors=True)


class _no_server:
    """No PostgreSQL: the local tier's stand-in for `serve_postgres` (`with` gives None)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


def logged_in(browser, url: str, name: str, token: str, seen: list[str]):
    """A new browser whose visitor logged in on the page's form as `name`; the page, ready for a question."""
    context = browser.new_context(viewport={"width": 1400, "height": 1150})
    page = context.new_page()
    page.on("request", lambda request: seen.append(request.url))
    page.goto(url)
    fill_login(page, name, token)
    page.wait_for_selector("#cw-question textarea")
    return page


def fill_login(page, name: str, token: str) -> None:
    """Fill in and send the login form (nothing of the page is there before it)."""
    user = page.get_by_label(re.compile("user", re.I))
    user.wait_for()
    assert page.locator("#cw-question").count() == 0
    user.fill(name)
    page.get_by_label(re.compile("password", re.I)).fill(token)
    page.get_by_role("button", name=re.compile("login", re.I)).click()


def answered(page) -> None:
    """Wait until the turn has ended (its stages line shown, Ask enabled again)."""
    page.wait_for_selector("#cw-chat :text('Stages (')", timeout=ANSWER_TIMEOUT)
    page.wait_for_selector("#cw-ask:not([disabled])", timeout=ANSWER_TIMEOUT)


def test_a_user_sees_nothing_of_an_unreadable_collection_and_one_who_may_read_it_cites_it(
    browser, logins: tuple[str, dict[str, str], str], tmp_path: Path
) -> None:
    url, tokens, doc_id = logins
    seen: list[str] = []

    wrong = browser.new_context().new_page()
    wrong.goto(url)
    fill_login(wrong, "alice", tokens["bob"])  # another user's token
    wrong.wait_for_timeout(1500)
    assert wrong.locator("#cw-question").count() == 0

    alice = logged_in(browser, url, "alice", tokens["alice"], seen)
    ask(alice, QUESTION)
    answered(alice)
    alice.click("#cw-threads input")  # the thread list open too
    alice.screenshot(path=tmp_path / "alice.png", full_page=True)
    shown = alice.content() + alice.inner_text("body")
    for view in ("#cw-chat", "#cw-references", "#cw-table", "#cw-chart", "#cw-passage"):
        assert alice.locator(view).count() == 1, view  # every view is there, and checked in `shown`
    leaks = [text for text in (*TELLTALES, doc_id) if text.lower() in shown.lower()]
    assert leaks == [], f"alice's page shows {leaks} (screenshot in {tmp_path})"
    assert QUESTION in alice.inner_text("#cw-chat")

    bob = logged_in(browser, url, "bob", tokens["bob"], seen)
    assert QUESTION not in bob.inner_text("body")  # alice's thread is not bob's
    ask(bob, QUESTION)
    answered(bob)
    bob.screenshot(path=tmp_path / "bob.png", full_page=True)
    assert "Utopia Planitia" in bob.inner_text("#cw-chat")
    assert SECRET["title"] in bob.inner_text("#cw-references")
    assert bob.locator("#cw-chat a.cw-cite").count() >= 1
    assert not leaving(seen), f"the page made requests beyond 127.0.0.1: {leaving(seen)}"
