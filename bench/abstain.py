"""Honest abstention in local mode: answer the answerable, say "not in your documents" to the rest.

    python bench/abstain.py --scifact ../shared/data/scifact --index bench/.cache/abstain

A mixed collection from the SciFact train split (never anything else): `--answerable` claims whose gold
abstracts are in the collection, `--unanswerable` claims whose gold abstracts are left out, and
`--others` further abstracts as the rest of the collection (a fixed seed picks them all). Every claim goes
through the query graph in local mode; the table reports, side by side in one run, abstention on the
unanswerable claims, answering on the answerable ones, the gold abstract cited among those, and citation
precision by document, for the settings in force; then how well the one signal local mode thresholds on
separates the two kinds of claim, and what abstaining below a cut on it would do; and the ceiling: how many
answerable claims any abstention rule could answer with a gold abstract cited, and the best cut picked on
the measured claims themselves.

Local mode abstains when no candidate's answering score (citewise/core/answerable.py: the best sentence's
cosine to the claim mixed with the idf-weighted share of its terms) reaches Context.local_answerable; its
weight and cut are fitted here on the even-numbered claims, over a collection of their own, and measured on
the odd ones. The best candidate chunk's own cosine is reported beside it, as the baseline signal.
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
from citewise.core.answerable import WEIGHT, answering, sentence_signals  # noqa: E402
from citewise.core.evidence import NO_ANSWER  # noqa: E402
from citewise.graph.query import graph  # noqa: E402
from citewise.index import Index  # noqa: E402
from citewise.nodes.retrieve import search_all  # noqa: E402


def build(
    scifact: Path, index_dir: Path, answerable: int, unanswerable: int, others: int, seed: int, half: int
):
    """The claims (id -> (text, gold ids, answerable)) and the collection's index.

    Claims come from one half of the train split (even or odd claim ids), so that what is fitted on one half
    is measured on the other.
    """
    queries = read_queries(scifact / "queries.train.jsonl")
    qrels = read_qrels(scifact / "qrels" / "train.tsv")
    corpus = {json.loads(line)["_id"]: line for line in (scifact / "corpus.jsonl").open()}
    ids = sorted(q for q in qrels if q in queries and int(q) % 2 == half)
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


def claim_rows(claims: dict, result: dict, index: Index, cosines: dict[str, float]) -> list[dict[str, Any]]:
    """Per claim under one setting: kind, whether it abstained, whether a gold abstract was cited, the signal.

    Kept in the JSON so a change in the figures can be traced to the claims that moved.
    """
    rows = []
    for claim_id in sorted(claims):
        text, gold, answerable = claims[claim_id]
        cited = keys_of(index, {c["doc_id"] for c in result[claim_id]["citations"]})
        rows.append(
            {
                "claim": claim_id,
                "text": text,
                "answerable": answerable,
                "abstained": result[claim_id]["answer"].startswith(NO_ANSWER),
                "gold_cited": bool(cited & gold),
                "best_cosine": round(cosines[claim_id], 4),
            }
        )
    return rows


def best_cosine(index: Index, claim: str, result: dict[str, Any]) -> float:
    """The best candidate chunk's own cosine similarity to the claim (unclamped, unlike local relevance)."""
    texts = [r.get("text", "") for r in result["evidence"]]
    if not texts:
        return 0.0
    vectors = index.embedder.embed([claim, *texts])
    return float((vectors[1:] @ vectors[0]).max())


def curve(
    values: dict[str, float], claims: dict, subset: list[str], cuts: list[float]
) -> list[dict[str, float]]:
    """For abstention cuts on a signal: the share of unanswerable claims abstained on (signal below the
    cut) and of answerable claims still answered, over a subset."""
    un = [values[c] for c in subset if not claims[c][2]]
    ans = [values[c] for c in subset if claims[c][2]]
    rows = []
    for cut in cuts:
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


def claim_signals(claims: dict, index: Index, context: Context) -> dict[str, tuple[set[str], dict]]:
    """Per claim: its candidates' SciFact ids and their sentence signals, as the graph retrieves."""
    signals = {}
    for claim_id, (text, _, _) in claims.items():
        records = list(search_all(index, [text], context).values())
        keys = keys_of(index, {r["doc_id"] for r in records})
        signals[claim_id] = (keys, sentence_signals(index, text, records)[1])
    return signals


def top_scores(signals: dict[str, tuple[set[str], dict]], weight: float) -> dict[str, float]:
    """Per claim: the best candidate's answering score."""
    return {
        c: max((answering(v, weight) for v in per_chunk.values()), default=0.0)
        for c, (_, per_chunk) in signals.items()
    }


def fit(claims: dict, index: Index, context: Context) -> dict[str, Any]:
    """The weight and cut of the answering score that best balance abstaining and answering on these claims.

    Each claim's candidates are retrieved as the graph retrieves them; the pair maximising the smaller of
    (unanswerable abstained on, answerable answered) wins, ties to the one answering more.
    """
    signals = claim_signals(claims, index, context)
    best: dict[str, Any] = {}
    for weight in (0.3, 0.4, 0.5, 0.6, 0.7):
        top = top_scores(signals, weight)
        for step in range(20, 81):
            cut = step / 100
            rows = curve(top, claims, sorted(claims), [cut])[0]
            key = (min(rows["abstain_unanswerable"], rows["answer_answerable"]), rows["answer_answerable"])
            if not best or key > best["key"]:
                best = {"key": key, "weight": weight, "cut": cut, **rows, "auc": auc(top, claims)}
    best.pop("key")
    return best


def ceiling(
    claims: dict, signals: dict[str, tuple[set[str], dict]], uncut: dict[str, dict], index: Index
) -> dict[str, Any]:
    """How far any cut, and any abstention rule at all, could go on these claims with today's search.

    - gold retrieved: answerable claims with a gold abstract among their candidates; gold cited without a
      cut: among their cited documents when nothing is abstained on. No abstention rule can answer more
      answerable claims with a gold abstract cited than the second.
    - the oracle cut: the cut on the answering score picked on these very claims to maximise the smaller of
      (unanswerable abstained on, answerable answered with a gold abstract cited); optimistic by design.
    - ROC AUC of the answering score over all claims, and over the unanswerable ones against only the
      answerable ones whose gold abstract was retrieved (the separation left when retrieval did its part).
    """
    top = top_scores(signals, WEIGHT)
    answerable = [c for c in claims if claims[c][2]]
    unanswerable = [c for c in claims if not claims[c][2]]
    retrieved = {c for c in answerable if signals[c][0] & claims[c][1]}
    cited = {
        c for c in answerable if keys_of(index, {x["doc_id"] for x in uncut[c]["citations"]}) & claims[c][1]
    }
    oracle: dict[str, Any] = {}
    for cut in sorted(set(top.values())):
        row = {
            "cut": cut,
            "abstain_unanswerable": sum(top[c] < cut for c in unanswerable) / len(unanswerable),
            "answer_with_gold_cited": sum(top[c] >= cut and c in cited for c in answerable) / len(answerable),
        }
        if not oracle or min(row["abstain_unanswerable"], row["answer_with_gold_cited"]) > min(
            oracle["abstain_unanswerable"], oracle["answer_with_gold_cited"]
        ):
            oracle = row
    retrieved_only = {c: claims[c] for c in [*unanswerable, *sorted(retrieved)]}
    return {
        "gold_retrieved": len(retrieved) / len(answerable),
        "gold_cited_without_cut": len(cited) / len(answerable),
        "oracle_cut": oracle,
        "auc_answering": auc(top, claims),
        "auc_answering_gold_retrieved": auc({c: top[c] for c in retrieved_only}, retrieved_only),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scifact", type=Path, required=True)
    parser.add_argument("--index", type=Path, default=Path("bench/.cache/abstain-test"))
    parser.add_argument("--fit-index", type=Path, default=Path("bench/.cache/abstain-fit"))
    parser.add_argument("--answerable", type=int, default=60)
    parser.add_argument("--unanswerable", type=int, default=60)
    parser.add_argument("--others", type=int, default=300)
    parser.add_argument("--fit-claims", type=int, default=100, help="answerable and unanswerable, each")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "abstain-scifact.json")
    args = parser.parse_args()
    fit_claims, fit_size = build(
        args.scifact, args.fit_index, args.fit_claims, args.fit_claims, 2 * args.others, args.seed, half=0
    )
    with Index.open(args.fit_index, create=False) as index:
        fitted = fit(fit_claims, index, Context(index_dir=str(args.fit_index)))
    print(
        f"fitted on {len(fit_claims)} even-numbered claims over {fit_size} abstracts: "
        f"weight {fitted['weight']}, cut {fitted['cut']} (abstains on "
        f"{fitted['abstain_unanswerable']:.2f}, answers {fitted['answer_answerable']:.2f}; "
        f"AUC {fitted['auc']:.3f})",
        flush=True,
    )
    claims, size = build(
        args.scifact, args.index, args.answerable, args.unanswerable, args.others, args.seed, half=1
    )
    ordered = sorted(claims)
    settings = {
        "no abstention cut": Context(index_dir=str(args.index), local_answerable=0.0),
        "defaults": Context(index_dir=str(args.index)),
        "fitted cut": Context(index_dir=str(args.index), local_answerable=fitted["cut"]),
    }
    columns = [
        "abstain_unanswerable",
        "answer_answerable",
        "answer_with_gold_cited",
        "citation_precision_doc",
    ]
    rows, results = [], {}
    with Index.open(args.index, create=False) as index:
        for name, context in settings.items():
            results[name] = asyncio.run(run_all(claims, context))
            rows.append(
                {"settings": f"{name} ({context.local_answerable:g})"}
                | measure(claims, results[name], index, ordered)
            )
            print(rows[-1], flush=True)
        cosines = {c: best_cosine(index, claims[c][0], results["no abstention cut"][c]) for c in claims}
        per_claim = claim_rows(claims, results["defaults"], index, cosines)
        signals = claim_signals(claims, index, settings["defaults"])
        limits = ceiling(claims, signals, results["no abstention cut"], index)
    print(
        f"SciFact train, local mode, odd-numbered claims: {len(claims)} claims ({args.answerable} "
        f"answerable, {args.unanswerable} unanswerable) over {size} abstracts"
    )
    print_table(rows, ["settings", *columns])
    ans = [cosines[c] for c in claims if claims[c][2]]
    una = [cosines[c] for c in claims if not claims[c][2]]
    area = auc(cosines, claims)
    print(
        f"best chunk's own cosine alone, median: answerable {statistics.median(ans):.3f}, unanswerable "
        f"{statistics.median(una):.3f}; ROC AUC {area:.3f}"
    )
    oracle = limits["oracle_cut"]
    print(
        f"ceiling: gold abstract retrieved for {limits['gold_retrieved']:.2f} of answerable claims, cited "
        f"for {limits['gold_cited_without_cut']:.2f} with no cut (no abstention rule can answer more with "
        f"a gold abstract cited); the best cut picked on these claims ({oracle['cut']:.3f}) abstains on "
        f"{oracle['abstain_unanswerable']:.2f} and answers {oracle['answer_with_gold_cited']:.2f} with a "
        f"gold abstract cited; answering score ROC AUC {limits['auc_answering']:.3f}, "
        f"{limits['auc_answering_gold_retrieved']:.3f} against only claims whose gold abstract was retrieved"
    )
    save(
        args.out,
        {
            "claims": len(claims),
            "collection": size,
            "seed": args.seed,
            "fit": {"claims": len(fit_claims), "collection": fit_size, **fitted},
            "settings": rows,
            "median_best_cosine": {
                "answerable": statistics.median(ans),
                "unanswerable": statistics.median(una),
            },
            "roc_auc_best_cosine": area,
            "ceiling": limits,
            "per_claim_defaults": per_claim,
            "machine": machine(),
        },
    )


if __name__ == "__main__":
    main()
