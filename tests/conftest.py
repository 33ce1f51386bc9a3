"""Shared fixtures: no provider keys, no network, one embedding model per session, a small corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from citewise.index.embeddings import Embedder, load_embedder

PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "COHERE_API_KEY",
    "CITEWISE_MODEL",
    "CITEWISE_JUDGE_MODEL",
    "CITEWISE_CHROMA_URL",
    "CITEWISE_INDEX",
    "CITEWISE_STORE",  # a shared store or a served deployment set in the shell must not reach a test
    "CITEWISE_SERVED",
    "CITEWISE_THREADS",
    "CITEWISE_DATA_ROOT",
    "CITEWISE_LLM_CACHE",
    "CITEWISE_EMBEDDING_PRECISION",
    "CITEWISE_OUTLINE_LIBRARY",
    "CITEWISE_STYLE_EXEMPLARS",
)


def _blank(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-model tests first: the longest file (five to ten minutes), so that under the two xdist workers
    of the README's command (`--dist loadfile`) it starts at once on one worker while the other takes the
    rest, instead of running alone at the end (16.8 minutes with it last, on 2 cores). A stable sort: every
    other test keeps its order."""
    items.sort(key=lambda item: item.get_closest_marker("realmodel") is None)


@pytest.fixture(scope="session", autouse=True)
def _offline_and_keyless_session() -> Iterator[None]:
    """The same for session- and module-scoped fixtures, which are set up before any function fixture."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _blank(monkeypatch)
        yield


@pytest.fixture(autouse=True)
def _offline_and_keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees a provider key or a configured server, and nothing may reach the Hugging Face hub.

    (What a server taught a run, its methods, speed and queueing, stays with the resources that built the
    run's models: each test's Context builds its own, so no test inherits another's server.)
    """
    _blank(monkeypatch)


@pytest.fixture(autouse=True)
def _full_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted servers on 127.0.0.1 stand for hosted APIs: the full profile, unless a test says lean.

    (Profile `auto` would take any loopback server for a local model and pick lean.)
    """
    monkeypatch.setenv("CITEWISE_PROFILE", "full")


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real local MiniLM embedder in float32 (loaded once per session).

    Float32 because tests compare vectors to 1e-5: the int8 model (new indexes' default, which the CLI
    tests use) quantizes activations per batch, so a text's vector moves by about 1e-2 with its batch.
    """
    return load_embedder("all-MiniLM-L6-v2")


# Twelve short documents on clearly different topics, in BEIR form (_id, title, text).
SMALL_CORPUS: list[dict[str, str]] = [
    {
        "_id": "vaccines",
        "title": "How vaccines work",
        "text": (
            "Vaccines train the immune system to recognise a pathogen without causing the disease. "
            "They contain weakened viruses, inactivated bacteria, or fragments such as proteins and mRNA. "
            "After vaccination, B cells produce antibodies and memory cells remain for years. "
            "Herd immunity protects people who cannot be vaccinated themselves."
        ),
    },
    {
        "_id": "black-holes",
        "title": "Black holes",
        "text": (
            "A black hole is a region of spacetime where gravity is so strong that nothing escapes. "
            "Its boundary is called the event horizon. "
            "Stellar black holes form when massive stars collapse at the end of their lives. "
            "Supermassive black holes sit at the centres of most galaxies, including the Milky Way."
        ),
    },
    {
        "_id": "sourdough",
        "title": "Sourdough baking",
        "text": (
            "Sourdough bread is leavened by a starter of wild yeast and lactic acid bacteria. "
            "Bakers feed the starter with flour and water every day to keep it active. "
            "A long, cool fermentation of the dough gives the loaf its sour taste and open crumb. "
            "The bread is baked in a very hot Dutch oven to build a crisp crust."
        ),
    },
    {
        "_id": "photosynthesis",
        "title": "Photosynthesis",
        "text": (
            "Photosynthesis lets plants turn light energy into chemical energy. "
            "Chlorophyll in the chloroplasts absorbs mostly red and blue light. "
            "Water is split, oxygen is released, and carbon dioxide is fixed into sugars. "
            "Almost all the oxygen in the atmosphere comes from photosynthesis."
        ),
    },
    {
        "_id": "volcanoes",
        "title": "Volcanic eruptions",
        "text": (
            "Volcanoes erupt when molten rock called magma rises through the crust. "
            "Explosive eruptions throw ash and pumice high into the stratosphere. "
            "Lava flows from shield volcanoes such as those in Hawaii are slow and runny. "
            "Volcanologists watch ground swelling and gas emissions to forecast eruptions."
        ),
    },
    {
        "_id": "chess",
        "title": "Chess openings",
        "text": (
            "A chess game begins with an opening, such as the Sicilian Defence or the Queen's Gambit. "
            "Good openings develop the knights and bishops quickly and fight for the centre. "
            "Castling early keeps the king safe behind a wall of pawns. "
            "Grandmasters memorise long lines of opening theory."
        ),
    },
    {
        "_id": "honeybees",
        "title": "Honeybee colonies",
        "text": (
            "A honeybee colony has one queen, thousands of female workers and a few male drones. "
            "Workers forage for nectar and pollen and tell each other where flowers are with a waggle dance. "
            "Nectar is stored in wax combs and evaporated into honey. "
            "Bees pollinate many crops, from almonds to apples."
        ),
    },
    {
        "_id": "bitcoin",
        "title": "Bitcoin and the blockchain",
        "text": (
            "Bitcoin is a digital currency that runs without a central bank. "
            "Transactions are recorded on a public ledger called the blockchain. "
            "Miners compete to solve a proof-of-work puzzle and are rewarded with new coins. "
            "The supply of bitcoin is capped at twenty-one million coins."
        ),
    },
    {
        "_id": "marathon",
        "title": "Marathon training",
        "text": (
            "A marathon is a running race of 42.195 kilometres. "
            "Runners build endurance with a weekly long run that grows over several months. "
            "Tapering, e.g. cutting mileage in the last three weeks, lets the legs recover before the race. "
            "Eating carbohydrates during the race helps avoid hitting the wall."
        ),
    },
    {
        "_id": "tides",
        "title": "Ocean tides",
        "text": (
            "Tides are the regular rise and fall of the sea level. "
            "They are caused mainly by the gravitational pull of the Moon on the oceans. "
            "Spring tides happen when the Sun and Moon line up, neap tides when they are at right angles. "
            "Most coasts see two high tides and two low tides every day."
        ),
    },
    {
        "_id": "jazz",
        "title": "The history of jazz",
        "text": (
            "Jazz music was born in New Orleans in the early twentieth century. "
            "It mixes blues, ragtime and brass band traditions with improvisation. "
            "Louis Armstrong made the improvised trumpet solo the centre of the performance. "
            "Bebop musicians like Charlie Parker played fast, complex harmonies."
        ),
    },
    {
        "_id": "glaciers",
        "title": "Glaciers and ice ages",
        "text": (
            "A glacier is a slow river of ice that forms where snow piles up faster than it melts. "
            "Glaciers carve U-shaped valleys and leave moraines of rock behind. "
            "During the last ice age, ice sheets covered much of North America and northern Europe. "
            "Many mountain glaciers are shrinking as the climate warms."
        ),
    },
]


def write_beir(path: Path, records: list[dict[str, str]]) -> Path:
    """Write BEIR-style records, one JSON object per line."""
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def read_beir(path: Path) -> list[dict[str, str]]:
    """Read BEIR-style records back."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def small_corpus_records() -> list[dict[str, str]]:
    """The records of `small_corpus` (shared by the whole session: copy before editing)."""
    return [dict(record) for record in SMALL_CORPUS]


@pytest.fixture
def small_corpus(tmp_path: Path, small_corpus_records: list[dict[str, str]]) -> Path:
    """A BEIR jsonl file of twelve short, topically distinct documents."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    return write_beir(folder / "corpus.jsonl", small_corpus_records)
