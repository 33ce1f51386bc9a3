"""Honest abstention in local mode: answer the answerable, say "not in your documents" to the rest.

    python bench/abstain.py --scifact ../shared/data/scifact --index bench/.cache/abstain

A mixed collection from the SciFact train split (never anything else): `--answerable` claims whose gold
abstracts are in the collection, `--unanswerable` claims whose gold abstracts are left out, and
`--others` further abstracts as the rest of the collection (a fixed seed picks them all). Every claim goes
through the query graph in local mode; the table reports, side by side in one run, abstention on the
unanswerable claims, answering on the answerable ones, the gold abstract cited among those, and citation
precision by document, for the settings in force; then how well the one signal local mode thresholds on
separates the two kinds of claim, and what abstaining below a cut on it would do.

That signal is the best candidate chunk's own cosine similarity to the claim: local relevance maps cosine
linearly to 0-100 (Context.local_cosine_zero -> 0, local_cosine_full -> 100) and nothing below the ScoreRAG
floor of 20 is kept, so a claim is abstained on when its best cosine is under zero + 0.2 x (full - zero),
0.22 with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import machine, print_table, read_qrels, read_queries, save  # noqa: E402

from citewise.context import Context  # noqa: E402
from citewise.evidence import NO_ANSWER  # noqa: E402
from citewise.graph.query import graph  # noqa: E402
from citewise.index import Index  # noqa: E402


def build(scifact: Path, index_dir: Path, answerable: int, unanswerable: int, others: int, seed: int):
    """The claims (id -> (text, gold ids, answerable)) and the collection's index."""
    queries = read_queries(scifact / "queries.train.jsonl")
    qrels = read_qrels(scifact / "qrels" / "train.tsv")
    corpus = {json.loads(line)["_id"]: line for line in (scifact / "corpus.jsonl").open()}
    ids = sorted(q for q in qrels if q in queries)
    random.Random(seed).shuffle(ids)
    chosen_in, chosen_out = ids[:answerable], []
    gold_in = {d for q in chosen_in for d in qrels[q]}
    for q in ids[answerable:]:
        if len(chosen_out) == unanswerable:
            break
        if not set(qrels[q]) & gold_in:  # its gold abstracts can be left out without removing another's
            chosen_out.append(q)
    gold_out = {d for q in chosen_out for d in qrels[q]}
    rest = sorted(set(corpus) - gold_in - gold_out)
    random.Random(seed + 1).shuffle(rest)
    collection = sorted(gold_in) + rest[:others]
    index_dir.mkdir(parents=True, exist_ok=True)
    corpus_file = index_dir.parent / f"{index_dir.name}-corpus.jsonl"
    corpus_file.write_text("".join(corpus[d] for d in collection))
    with Index.open(index_dir) as index:
        index.ingest([corpus_file])
    claims = {q: (queries[q], set(qrels[q]), True) for q in chosen_in}
    claims |= {q: (queries[q], set(qrels[q]), False) for q in chosen_out}
    return claims, len(collection)


async def run_all(claims: dict[str, tuple[str, set[str], bool]], context: Context) -> dict[str, dict]:
    """The graph's result for every claim, one after another in one event loop."""
    results = {}
    for claim_id, (text, _, _) in claims.items():
        results[claim_id] = await graph.ainvoke({"messages": [("user", text)]}, context=context)
    return results


def keys_of(index: Index, doc_ids: set[str]) -> set[str]:
    """The SciFact ids of stored documents."""
    return {record.key for d in doc_ids if (record := index.document(d)) is not None}


def measure(claims: dict, results: dict, index: Index, subset: list[str]) -> dict[str, float]:
    """Abstention, answering, gold cited and citation precision over a subset of the claims."""
    abstained_un = answered_in = gold_cited = 0
    precisions = []
    un = [c for c in subset if not claims[c][2]]
    ans = [c for c in subset if claims[c][2]]
    for claim_id in subset:
        result = results[claim_id]
        abstains = result["answer"].startswith(NO_ANSWER)
        if not claims[claim_id][2]:
            abstained_un += abstains
            continue
        if abstains:
            continue
        answered_in += 1
        cited = keys_of(index, {c["doc_id"] for c in result["citations"]})
        gold_cited += bool(cited & claims[claim_id][1])
        if cited:
            precisions.append(len(cited & claims[claim_id][1]) / len(cited))
    return {
        "abstain_unanswerable": abstained_un / len(un) if un else 0.0,
        "answer_answerable": answered_in / len(ans) if ans else 0.0,
        "answer_with_gold_cited": gold_cited / len(ans) if ans else 0.0,
        "citation_precision_doc": statistics.fmean(precisions) if precisions else 0.0,
    }


def best_cosine(index: Index, claim: str, result: dict[str, Any]) -> float:
    """The best candidate chunk's own cosine similarity to the claim (unclamped, unlike local relevance)."""
    texts = [r.get("text", "") for r in result["evidence"]]
    if not texts:
        return 0.0
    vectors = index.embedder.embed([claim, *texts])
    return float((vectors[1:] @ vectors[0]).max())


def curve(cosines: dict[str, float], claims: dict, subset: list[str]) -> list[dict[str, float]]:
    """For abstention cuts on the best cosine: the share of unanswerable claims abstained on and of
    answerable claims still answered, over a subset."""
    un = [cosines[c] for c in subset if not claims[c][2]]
    ans = [cosines[c] for c in subset if claims[c][2]]
    rows = []
    for step in range(8, 17):
        cut = step * 0.05
        rows.append(
            {
                "cut": round(cut, 2),
                "abstain_unanswerable": sum(v < cut for v in un) / len(un),
                "answer_answerable": sum(v >= cut for v in ans) / len(ans),
            }
        )
    return rows


def auc(cosines: dict[str, float], claims: dict) -> float:
    """Probability that an answerable claim's best cosine beats an unanswerable one's (ROC AUC)."""
    ans = [cosines[c] for c in claims if claims[c][2]]
    un = [cosines[c] for c in claims if not claims[c][2]]
    wins = sum((a > u) + 0.5 * (a == u) for a in ans for u in un)
    return wins / (len(ans) * len(un))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, required=True)
    parser.add_argument("--index", type=Path, default=Path("bench/.cache/abstain"))
    parser.add_argument("--answerable", type=int, default=60)
    parser.add_argument("--unanswerable", type=int, default=60)
    parser.add_argument("--others", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "abstain-scifact.json")
    args = parser.parse_args()
    claims, size = build(args.scifact, args.index, args.answerable, args.unanswerable, args.others, args.seed)
    ordered = sorted(claims)
    context = Context(index_dir=str(args.index))
    results = asyncio.run(run_all(claims, context))
    columns = [
        "abstain_unanswerable",
        "answer_answerable",
        "answer_with_gold_cited",
        "citation_precision_doc",
    ]
    with Index.open(args.index, create=False) as index:
        rows = [{"settings": "current"} | measure(claims, results, index, ordered)]
        cosines = {c: best_cosine(index, claims[c][0], results[c]) for c in claims}
    print(
        f"SciFact train, local mode: {len(claims)} claims ({args.answerable} answerable, "
        f"{args.unanswerable} unanswerable) over {size} abstracts"
    )
    print_table(rows, ["settings", *columns])
    ans = [cosines[c] for c in claims if claims[c][2]]
    una = [cosines[c] for c in claims if not claims[c][2]]
    area = auc(cosines, claims)
    print(
        f"best chunk's own cosine, median: answerable {statistics.median(ans):.3f}, unanswerable "
        f"{statistics.median(una):.3f}; ROC AUC {area:.3f}. Abstaining below a cut on this one signal:"
    )
    trade = curve(cosines, claims, ordered)
    print_table(trade, ["cut", "abstain_unanswerable", "answer_answerable"])
    save(
        args.out,
        {
            "claims": len(claims),
            "collection": size,
            "seed": args.seed,
            "current": rows[0],
            "median_best_cosine": {
                "answerable": statistics.median(ans),
                "unanswerable": statistics.median(una),
            },
            "roc_auc_best_cosine": area,
            "cut_curve": trade,
            "machine": machine(),
        },
    )


if __name__ == "__main__":
    main()
