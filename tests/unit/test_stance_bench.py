"""The stance bench's scoring path: SciFact pairs, the accuracy step's stance judgment, its figures."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from support.fakes import Request, ScriptedChatModel

from citewise.context import Context

ROOT = Path(__file__).resolve().parents[2]
MODEL = "openai/test-model"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """bench/stance.py, loaded from its file (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_stance", ROOT / "bench" / "stance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def pairs(bench: ModuleType) -> list[Any]:
    """Six pairs whose abstracts tell the scripted judge what to answer."""
    rows = [
        ("1", "raises", "SUPPORT"),
        ("2", "raises", "SUPPORT"),
        ("3", "unrelated", "SUPPORT"),
        ("4", "lowers", "CONTRADICT"),
        ("5", "raises", "CONTRADICT"),
        ("6", "silent", "CONTRADICT"),
    ]
    return [
        bench.Pair(
            n, f"Drug {n} raises blood pressure.", f"d{n}", f"Study {n}", f"Drug {n} {word} it.", label
        )
        for n, word, label in rows
    ]


def judge_by_word(request: Request) -> dict:
    """`supports` for "raises", `contradicts` for "lowers", `neutral` otherwise; leaves "silent" out."""
    (label, text), *_ = request.evidence.items()
    if "silent" in text:
        return {"items": []}
    stance = "supports" if "raises" in text else "contradicts" if "lowers" in text else "neutral"
    return {"items": [{"id": label, "stance": stance, "reason": "scripted"}]}


def test_the_bench_asks_the_accuracy_steps_judgment_and_reports_its_confusion(
    bench: ModuleType, install: Callable[..., Any]
) -> None:
    context = Context(model=MODEL)
    judge = ScriptedChatModel(responder=judge_by_word)
    install(context, judge=judge)
    sample = pairs(bench)
    predicted = asyncio.run(bench.judge_pairs(sample, context))
    assert predicted == ["supports", "supports", "neutral", "contradicts", "supports", "unknown"]
    requests = judge.requests_for("Stances")
    assert len(requests) == 6  # one judgment per pair
    first = next(r for r in requests if "Drug 1 raises it." in r.evidence.values())
    assert first.question == "Drug 1 raises blood pressure."  # the claim is the question ...
    assert "<draft>\nDrug 1 raises blood pressure.\n</draft>" in first.prompt  # ... and the GenText
    figures = bench.stance_figures(sample, predicted)
    assert figures["confusion"] == {
        "SUPPORT": {"supports": 2, "contradicts": 0, "neutral": 1, "unknown": 0},
        "CONTRADICT": {"supports": 1, "contradicts": 1, "neutral": 0, "unknown": 1},
    }
    assert figures["accuracy"] == pytest.approx(3 / 6)
    assert figures["per_class"]["supports"] == {
        "precision": pytest.approx(2 / 3),
        "recall": 2 / 3,
        "pairs": 3,
    }
    assert figures["per_class"]["contradicts"] == {
        "precision": 1.0,
        "recall": pytest.approx(1 / 3),
        "pairs": 3,
    }


def test_without_a_model_the_stance_is_not_measured(bench: ModuleType) -> None:
    with pytest.raises(ValueError, match="no model configured: stance not measured"):
        asyncio.run(bench.judge_pairs(pairs(bench), Context(model=None)))


def test_similarity_auc_is_reported_for_support_against_contradict(bench: ModuleType) -> None:
    class Fixed:
        """Claim vectors along x; abstract vectors at the cosine given in their text."""

        def embed(self, texts: list[str]) -> np.ndarray:
            rows = []
            for text in texts:
                cos = float(text.split()[-1]) if text.startswith("cos") else 1.0
                rows.append([cos, float(np.sqrt(1 - cos * cos))])
            return np.asarray(rows, dtype=np.float32)

    sample = [
        bench.Pair(str(n), "claim", f"d{n}", "", f"cos {cos}", label)
        for n, (cos, label) in enumerate(
            [(0.9, "SUPPORT"), (0.5, "SUPPORT"), (0.8, "CONTRADICT"), (0.3, "CONTRADICT")]
        )
    ]
    values = bench.cosines(Fixed(), sample)
    assert values == pytest.approx([0.9, 0.5, 0.8, 0.3])
    figures = bench.similarity_figures(sample, values)
    # SUPPORT beats CONTRADICT in 3 of the 4 (support, contradict) pairings
    assert figures["roc_auc_support_vs_contradict"] == pytest.approx(0.75)
    assert figures["median"] == {"SUPPORT": pytest.approx(0.7), "CONTRADICT": pytest.approx(0.55)}


def test_the_sample_is_balanced_seeded_and_drops_pairs_labelled_both_ways(
    bench: ModuleType, tmp_path: Path
) -> None:
    docs = [{"_id": f"d{n}", "title": f"T{n}", "text": f"abstract {n}"} for n in range(8)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    rows = [
        "id,claim,evidence_doc_id,evidence_label,evidence_sentences,cited_doc_ids",
        "1,c1,d1,SUPPORT,[1],[d1]",
        "1,c1,d1,SUPPORT,[2],[d1]",  # the same pair again (another rationale): counted once
        "2,c2,d2,SUPPORT,[1],[d2]",
        "3,c3,d3,SUPPORT,[1],[d3]",
        "4,c4,d4,CONTRADICT,[1],[d4]",
        "5,c5,d5,CONTRADICT,[1],[d5]",
        "6,c6,d6,SUPPORT,[1],[d6]",
        "6,c6,d6,CONTRADICT,[1],[d6]",  # labelled both ways: left out
        "7,c7,,,[],[d7]",  # no evidence label
        "8,c8,missing,SUPPORT,[1],[missing]",  # not in the corpus
    ]
    (tmp_path / "claims_train.csv").write_text("\n".join(rows) + "\n")
    sample = bench.load_pairs(tmp_path, per_class=2, seed=3)
    assert [p.label for p in sample] == ["SUPPORT", "SUPPORT", "CONTRADICT", "CONTRADICT"]
    assert {p.doc_id for p in sample[2:]} == {"d4", "d5"}
    assert {p.doc_id for p in sample[:2]} < {"d1", "d2", "d3"}
    assert sample == bench.load_pairs(tmp_path, per_class=2, seed=3)
    assert sample[0].abstract.startswith("abstract") and sample[0].title.startswith("T")
