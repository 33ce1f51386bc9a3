"""Stance agreement on SciFact: does the accuracy step's stance judgment tell support from contradiction?

    python bench/stance.py --scifact ../shared/data/scifact [--model openai/gpt-4o-mini]

Claim / evidence-abstract pairs from the SciFact train split's `claims_train.csv`, labelled SUPPORT or
CONTRADICT (a balanced sample, `--per-class` of each, picked with a fixed seed; a pair labelled both ways is
left out). Each pair goes to the stance judgment the accuracy step uses (`judge_stances` of
`citewise.nodes.accuracy`, the same prompt and parsing) with the claim as the GenText (and as the question)
and the abstract as the one document. The table reports accuracy (a `neutral` or missing stance counts as
wrong), precision and recall of `supports` and `contradicts`, and the confusion matrix.

With no model configured (CITEWISE_MODEL or --model) the stance is not measured. The local signal is
measured either way: the cosine similarity of claim and abstract with the index embedder, which is what the
accuracy step falls back to in local mode. Similarity measures topicality, not agreement: a contradicting
abstract is about the claim just as much as a supporting one, so its ROC AUC for SUPPORT against CONTRADICT
is expected near 0.5, and it is reported as such.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import machine, print_table, save  # noqa: E402

from citewise.context import Context  # noqa: E402
from citewise.core import llms  # noqa: E402
from citewise.index.embeddings import Embedder, load_embedder  # noqa: E402
from citewise.nodes.accuracy import judge_stances  # noqa: E402

GOLD = {"SUPPORT": "supports", "CONTRADICT": "contradicts"}
"""SciFact's label -> the stance the judge should give."""
PREDICTED = ["supports", "contradicts", "neutral", "unknown"]
"""The columns of the confusion matrix: the judge's stances, and `unknown` for one it left out."""
NO_MODEL = "no model configured: stance not measured"


@dataclass(frozen=True)
class Pair:
    """A claim and one of its evidence abstracts, with SciFact's label."""

    claim_id: str
    claim: str
    doc_id: str
    title: str
    abstract: str
    label: str


def load_pairs(scifact: Path, per_class: int, seed: int) -> list[Pair]:
    """A seeded, balanced sample of SUPPORT and CONTRADICT pairs (fewer when the split has fewer)."""
    corpus = {}
    with (scifact / "corpus.jsonl").open() as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                corpus[row["_id"]] = (row.get("title", ""), row.get("text", ""))
    labels: dict[tuple[str, str], set[str]] = {}
    claims: dict[str, str] = {}
    with (scifact / "claims_train.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["evidence_label"] in GOLD and row["evidence_doc_id"] in corpus:
                labels.setdefault((row["id"], row["evidence_doc_id"]), set()).add(row["evidence_label"])
                claims[row["id"]] = row["claim"]
    pairs = []
    for (claim_id, doc_id), found in sorted(labels.items()):
        if len(found) == 1:
            title, text = corpus[doc_id]
            pairs.append(Pair(claim_id, claims[claim_id], doc_id, title, text, found.pop()))
    sample = []
    for label in GOLD:
        of_label = [p for p in pairs if p.label == label]
        random.Random(seed).shuffle(of_label)
        sample += of_label[:per_class]
    return sample


async def judge_pairs(pairs: list[Pair], context: Context) -> list[str]:
    """The accuracy step's stance for each pair (`unknown` when the judge left it out or failed)."""
    judge, writer = llms.models(context)
    judge = judge or writer
    if judge is None:
        raise ValueError(NO_MODEL)

    async def one(pair: Pair) -> str:
        stances, _ = await judge_stances(
            judge, context, pair.claim, pair.claim, {pair.doc_id: (pair.title, pair.abstract)}
        )
        return stances.get(pair.doc_id, ("unknown", ""))[0]

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def stance_figures(pairs: list[Pair], predicted: list[str]) -> dict[str, Any]:
    """Accuracy, per-class precision and recall, and the confusion matrix (gold rows, stance columns)."""
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    gold = [GOLD[p.label] for p in pairs]
    matrix = confusion_matrix(gold, predicted, labels=PREDICTED)
    precision, recall, _, support = precision_recall_fscore_support(
        gold, predicted, labels=list(GOLD.values()), zero_division=0
    )
    per_class = {
        stance: {"precision": float(p), "recall": float(r), "pairs": int(n)}
        for stance, p, r, n in zip(GOLD.values(), precision, recall, support, strict=True)
    }
    confusion = {
        label: dict(zip(PREDICTED, (int(v) for v in matrix[i]), strict=True))
        for i, label in enumerate(GOLD)  # the rows of the gold stances; neutral and unknown are never gold
    }
    return {
        "accuracy": float(accuracy_score(gold, predicted)),
        "per_class": per_class,
        "confusion": confusion,
    }


def cosines(embedder: Embedder, pairs: list[Pair]) -> list[float]:
    """Cosine similarity of each claim and its abstract (the embedder's vectors are L2-normalised)."""
    claim_vectors = embedder.embed([p.claim for p in pairs])
    abstract_vectors = embedder.embed([p.abstract for p in pairs])
    return [float(c) for c in (claim_vectors * abstract_vectors).sum(axis=1)]


def similarity_figures(pairs: list[Pair], values: list[float]) -> dict[str, Any]:
    """How well similarity alone separates SUPPORT from CONTRADICT: ROC AUC and each class's median."""
    from sklearn.metrics import roc_auc_score

    is_support = [p.label == "SUPPORT" for p in pairs]
    medians = {
        label: statistics.median(v for v, p in zip(values, pairs, strict=True) if p.label == label)
        for label in GOLD
    }
    return {"roc_auc_support_vs_contradict": float(roc_auc_score(is_support, values)), "median": medians}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--per-class", type=int, default=100, help="SUPPORT and CONTRADICT pairs, each")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", help='"provider/model" (default: CITEWISE_MODEL)')
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "stance-scifact.json")
    args = parser.parse_args()
    pairs = load_pairs(args.scifact, args.per_class, args.seed)
    counts = {label: sum(p.label == label for p in pairs) for label in GOLD}
    print(
        f"SciFact train: {len(pairs)} claim/abstract pairs ({counts['SUPPORT']} SUPPORT, "
        f"{counts['CONTRADICT']} CONTRADICT), {len({p.claim_id for p in pairs})} claims, seed {args.seed}"
    )
    context = Context(model=args.model) if args.model else Context()
    result: dict[str, Any] = {"pairs": len(pairs), "per_label": counts, "seed": args.seed}
    if context.llm:
        predicted = asyncio.run(judge_pairs(pairs, context))
        stance = stance_figures(pairs, predicted)
        result["stance"] = {"model": context.judge or context.model, **stance}
        print(f"stance judgment ({result['stance']['model']}): accuracy {stance['accuracy']:.3f}")
        print_table(
            [{"stance": s, **figures} for s, figures in stance["per_class"].items()],
            ["stance", "precision", "recall", "pairs"],
        )
        print("confusion (rows: SciFact label; columns: the judge's stance)")
        print_table([{"label": g, **row} for g, row in stance["confusion"].items()], ["label", *PREDICTED])
    else:
        result |= {"stance": None, "stance_note": NO_MODEL}
        print(NO_MODEL)
    similarity = similarity_figures(pairs, cosines(load_embedder(), pairs))
    result["similarity"] = {"signal": "cosine(claim, abstract), MiniLM index embedder", **similarity}
    print("similarity only (what local mode has): it measures topicality, not agreement")
    print_table(
        [
            {
                "signal": "cosine(claim, abstract)",
                "median SUPPORT": similarity["median"]["SUPPORT"],
                "median CONTRADICT": similarity["median"]["CONTRADICT"],
                "ROC AUC S vs C": similarity["roc_auc_support_vs_contradict"],
            }
        ],
        ["signal", "median SUPPORT", "median CONTRADICT", "ROC AUC S vs C"],
    )
    save(args.out, result | {"machine": machine()})


if __name__ == "__main__":
    main()
