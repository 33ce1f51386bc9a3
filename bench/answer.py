"""The query graph end to end: LLM calls and tokens per stage, latency against the critical path, local mode.

    Q=../shared/data/scifact/queries.train.jsonl
    python bench/answer.py calls   --index bench/.cache/scifact --queries $Q
    python bench/answer.py latency --index bench/.cache/scifact --queries $Q
    python bench/answer.py local   --index bench/.cache/scifact --queries $Q \
        --hotpotqa ../shared/data/hotpotqa --hotpotqa-index bench/.cache/hotpotqa

`calls` and `latency` run the real graph and the real `openai` client against an OpenAI-compatible server
on 127.0.0.1 (tests/support/fake_openai.py) that answers every citewise request validly, after a fixed
delay for `latency`. `calls` counts requests and tokens per stage for 30 candidate chunks and compares them
with what the papers' per-chunk designs send: 3 samples x 3 stages x 30 chunks, plus one generation.
`latency` compares each run's wall time with its critical path: per stage, the rounds of requests that must
follow one another (concurrent batches share a round up to the concurrency cap), times the delay.
`local` times local mode on SciFact claims and, on HotpotQA, checks whether the gold answer string appears
in the local answer, against simply returning the top retrieved passage, in the same run. `hotpotqa`
measures local answers on HotpotQA (`--hotpotqa ../shared/data/hotpotqa`): gold answer string, precision and
recall of the answer's sentences against the supporting sentences, and length, beside the top retrieved
passage and the similarity-only sentence selection over the same kept evidence.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from common import hotpotqa_as_beir, machine, print_table, read_queries, save  # noqa: E402

from citewise.context import Context  # noqa: E402
from citewise.core.evidence import NO_ANSWER  # noqa: E402
from citewise.graph.query import graph  # noqa: E402
from citewise.index import Index  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, SchemaResponder  # noqa: E402

CONCURRENT_STAGES = {"score", "reflect", "critique"}
NAIVE_CALLS = 3 * 3 * 30 + 1


async def ask(question: str, context: Context) -> dict[str, Any]:
    return await graph.ainvoke({"messages": [("user", question)]}, context=context)


async def ask_all(questions: list[str], context: Context, timed: bool = False) -> list[dict[str, Any]]:
    """Answer the questions one after another in one event loop (provider clients belong to a loop)."""
    results = []
    for question in questions:
        started = time.perf_counter()
        result = await ask(question, context)
        results.append(result | {"wall_s": time.perf_counter() - started})
    return results


def llm_context(index: Path, **overrides: Any) -> Context:
    settings = {
        "index_dir": str(index),
        "model": "openai/bench-writer",
        "judge_model": "openai/bench-judge",
        "k": 30,
        "max_candidates": 30,
        "max_retries": 1,
    }
    return Context(**(settings | overrides))


def critical_rounds(usage: dict[str, dict[str, int]], concurrency: int) -> int:
    """Rounds of requests that must follow one another: concurrent stages share rounds up to the cap."""
    rounds = 0
    for stage, spent in usage.items():
        calls = spent["calls"]
        rounds += math.ceil(calls / concurrency) if stage in CONCURRENT_STAGES else calls
    return rounds


def run_calls(args: argparse.Namespace) -> None:
    questions = list(read_queries(args.queries).values())[: args.n]
    per_stage: dict[str, list[dict[str, int]]] = {}
    totals, candidates = [], []
    with FakeOpenAI(SchemaResponder(jitter=5)) as server:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = server.base_url, "bench"
        context = llm_context(args.index)
        results = asyncio.run(ask_all(questions, context))
        for result in results:
            candidates.append(len(result["evidence"]))
            totals.append(sum(u["calls"] for u in result["usage"].values()))
            for stage, spent in result["usage"].items():
                per_stage.setdefault(stage, []).append(spent)
    rows = []
    for stage, spent in per_stage.items():
        rows.append(
            {
                "stage": stage,
                "calls": statistics.fmean(s["calls"] for s in spent),
                "input_tokens": statistics.fmean(s["input_tokens"] for s in spent),
                "output_tokens": statistics.fmean(s["output_tokens"] for s in spent),
            }
        )
    calls = statistics.fmean(totals)
    rows.append(
        {
            "stage": "total",
            "calls": calls,
            "input_tokens": sum(r["input_tokens"] for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
        }
    )
    print_table(rows, ["stage", "calls", "input_tokens", "output_tokens"])
    print(
        f"candidates per question: {statistics.fmean(candidates):.1f}; naive per-chunk design: {NAIVE_CALLS} "
        f"calls; citewise: {calls:.1f} ({NAIVE_CALLS / calls:.1f}x fewer)"
    )
    if args.out:
        save(
            args.out,
            {
                "questions": len(questions),
                "candidates_mean": statistics.fmean(candidates),
                "stages": {r["stage"]: {k: v for k, v in r.items() if k != "stage"} for r in rows},
                "naive_calls": NAIVE_CALLS,
                "calls_mean": calls,
                "ratio": NAIVE_CALLS / calls,
                "machine": machine(),
            },
        )


def run_latency(args: argparse.Namespace) -> None:
    questions = list(read_queries(args.queries).values())[: args.n]
    rows = []
    with FakeOpenAI(SchemaResponder(jitter=5), delay=args.delay) as server:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = server.base_url, "bench"
        context = llm_context(args.index)
        results = asyncio.run(ask_all(questions[:1] + questions, context))[1:]  # the first one warms up
        for result in results:
            wall = result["wall_s"]
            rounds = critical_rounds(result["usage"], context.max_concurrency)
            rows.append(
                {
                    "wall_s": wall,
                    "rounds": rounds,
                    "critical_s": rounds * args.delay,
                    "ratio": wall / (rounds * args.delay),
                }
            )
    print_table(rows, ["wall_s", "rounds", "critical_s", "ratio"])
    ratio = statistics.median(r["ratio"] for r in rows)
    print(f"median wall / critical path: {ratio:.2f} (delay {args.delay * 1000:.0f} ms per request)")
    if args.out:
        save(
            args.out,
            {
                "delay_s": args.delay,
                "runs": rows,
                "median_ratio": ratio,
                "median_wall_s": statistics.median(r["wall_s"] for r in rows),
                "machine": machine(),
            },
        )


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9 ]", " ", text.lower())).strip()


def run_local(args: argparse.Namespace) -> None:
    context = Context(index_dir=str(args.index))
    claims = list(read_queries(args.queries).values())[: args.n]
    seconds = [r["wall_s"] for r in asyncio.run(ask_all(claims[:1] + claims, context))[1:]]  # 1st warms up
    p50 = statistics.median(seconds)
    print(
        f"local mode, SciFact: p50 {p50:.2f} s per question over {len(claims)} claims "
        f"(p90 {sorted(seconds)[int(0.9 * len(seconds)) - 1]:.2f} s)"
    )
    result: dict[str, Any] = {"scifact": {"questions": len(claims), "p50_s": p50, "seconds": seconds}}
    if args.hotpotqa:
        import json

        corpus, _, _ = hotpotqa_as_beir(args.hotpotqa, args.hotpotqa_index.parent / "hotpotqa-corpus.jsonl")
        index = Index.open(args.hotpotqa_index)
        index.ingest([corpus])  # builds, completes, or finds the file unchanged
        questions = json.loads((args.hotpotqa / "questions.json").read_text())
        hot = Context(index_dir=str(args.hotpotqa_index))
        answer_hits = chunk_hits = passage_hits = 0
        passage_chars: list[int] = []
        answers = asyncio.run(ask_all([item["question"] for item in questions], hot))
        for item, answered in zip(questions, answers, strict=True):
            gold = normalise(item["answer"])
            top = index.search(item["question"], k=1)
            paragraph = index.paragraph(top[0].paragraph_id) if top else None
            answer_hits += gold in normalise(answered["answer"])
            chunk_hits += bool(top) and gold in normalise(top[0].text)
            passage_hits += paragraph is not None and gold in normalise(paragraph.text)
            passage_chars.append(len(paragraph.text) if paragraph else 0)
        n = len(questions)
        print(
            f"HotpotQA ({n} questions): gold answer string in the local answer {answer_hits / n:.2f}, "
            f"in the top retrieved passage {passage_hits / n:.2f}, "
            f"in the top chunk alone {chunk_hits / n:.2f}"
        )
        result["hotpotqa"] = {
            "questions": n,
            "answer_contains_gold": answer_hits / n,
            "top_passage_contains_gold": passage_hits / n,
            "top_chunk_contains_gold": chunk_hits / n,
            "answer_chars_mean": statistics.fmean(len(a["answer"]) for a in answers),
            "top_passage_chars_mean": statistics.fmean(passage_chars),
        }
    if args.out:
        save(args.out, result | {"machine": machine()})


def _sentence_keys(corpus: dict[str, list[str]]) -> list[tuple[str, str, int]]:
    """(normalised sentence, title, index) for every corpus sentence."""
    return [(normalise(text), title, i) for title, lines in corpus.items() for i, text in enumerate(lines)]


def locate(sentence: str, keys: list[tuple[str, str, int]]) -> tuple[str, int] | None:
    """The corpus sentence an answer sentence is (equal, or one contains most of the other)."""
    plain = normalise(MARKERS.sub("", sentence))
    if len(plain) < 8:
        return None
    for text, title, i in keys:
        if text == plain or (
            (plain in text or text in plain) and min(len(text), len(plain)) / max(len(text), len(plain)) > 0.6
        ):
            return title, i
    return None


MARKERS = re.compile(r"\[\d+\]|\(ref\. [^)]*\)")


def answer_quality(
    answer: str, item: dict[str, Any], keys: list[tuple[str, str, int]], cited: set[str] | None = None
) -> dict[str, float]:
    """Gold string, supporting-sentence precision and recall, length, and (with the titles it cites)
    whether it abstained and whether it cites every supporting passage."""
    from citewise.core.report import is_own_text
    from citewise.core.text import sentences

    parts = [
        p for p in sentences(MARKERS.sub("", answer)) if p.strip() and not is_own_text(p, item["question"])
    ]
    gold = {(title, i) for title, i in item["supporting_facts"]}
    found = [locate(p, keys) for p in parts]
    hits = [f for f in found if f in gold]
    return {
        "gold": float(normalise(item["answer"]) in normalise(answer)),
        "precision": len(hits) / len(parts) if parts else 0.0,
        "recall": len(set(hits)) / len(gold) if gold else 0.0,
        "sentences": float(len(parts)),
        "chars": float(len(MARKERS.sub("", answer).strip())),
        "abstained": float(answer.startswith(NO_ANSWER)),
        "all_cited": float(cited is not None and {title for title, _ in item["supporting_facts"]} <= cited),
    }


def run_hotpotqa(args: argparse.Namespace) -> None:
    """Local answers on HotpotQA against the top passage and similarity-only selection, in one run."""
    import json

    from citewise.core.writing import candidate_sentences, cite, select_sentences

    corpus_file, _, _ = hotpotqa_as_beir(args.hotpotqa, args.hotpotqa_index.parent / "hotpotqa-corpus.jsonl")
    index = Index.open(args.hotpotqa_index)
    index.ingest([corpus_file])
    corpus = json.loads((args.hotpotqa / "corpus.json").read_text())
    keys = _sentence_keys(corpus)
    questions = json.loads((args.hotpotqa / "questions.json").read_text())[: args.n or None]
    asked = [q["question"] for q in questions]
    results = asyncio.run(ask_all(asked, Context(index_dir=str(args.hotpotqa_index))))
    one_round = asyncio.run(ask_all(asked, Context(index_dir=str(args.hotpotqa_index), second_hop=0)))
    rows: dict[str, list[dict[str, float]]] = {
        "local answer": [],
        "local answer, one retrieval round": [],
        "similarity-only": [],
        "top passage": [],
    }
    per_question = []
    for item, result, single in zip(questions, results, one_round, strict=True):
        for name, got in (("local answer", result), ("local answer, one retrieval round", single)):
            abstained = got["answer"].startswith(NO_ANSWER)
            cited = set() if abstained else {c["title"] for c in got["citations"]}
            rows[name].append(answer_quality(got["answer"], item, keys, cited))
        per_question.append(
            {"question": item["question"], "gold": item["answer"], "answer": result["answer"]}
            | rows["local answer"][-1]
        )
        kept = [r for r in result["evidence"] if r.get("kept") and r.get("rank")]
        kept.sort(key=lambda r: r["rank"])
        labelled = [(f"E{n}", r.get("text", "")) for n, r in enumerate(kept, start=1)]
        chosen, _ = select_sentences(index, result["question"], candidate_sentences(labelled))
        rows["similarity-only"].append(answer_quality(cite(chosen), item, keys))
        top = index.search(item["question"], k=1)
        paragraph = index.paragraph(top[0].paragraph_id) if top else None
        rows["top passage"].append(answer_quality(paragraph.text if paragraph else "", item, keys))
    table = []
    for name, values in rows.items():
        table.append(
            {"run": name} | {key: round(statistics.fmean(v[key] for v in values), 3) for key in values[0]}
        )
    print(f"HotpotQA local answers, {len(questions)} questions")
    print_table(table, ["run", "gold", "precision", "recall", "sentences", "chars", "abstained", "all_cited"])
    if args.out:
        save(
            args.out,
            {"questions": len(questions), "runs": table, "per_question": per_question, "machine": machine()},
        )


def run_halves(args: argparse.Namespace) -> None:
    """Local answers on HotpotQA, the tuning half (even positions) and the reported half (odd) apart.

    Changes to local answering are tuned on the even half only; the odd half is what is reported.
    """
    import json

    corpus_file, _, _ = hotpotqa_as_beir(args.hotpotqa, args.hotpotqa_index.parent / "hotpotqa-corpus.jsonl")
    with Index.open(args.hotpotqa_index) as index:
        index.ingest([corpus_file])
    corpus = json.loads((args.hotpotqa / "corpus.json").read_text())
    keys = _sentence_keys(corpus)
    questions = json.loads((args.hotpotqa / "questions.json").read_text())[: args.n or None]
    results = asyncio.run(
        ask_all([q["question"] for q in questions], Context(index_dir=str(args.hotpotqa_index)))
    )
    rows, per_question = [], []
    for item, result in zip(questions, results, strict=True):
        abstained = result["answer"].startswith(NO_ANSWER)
        cited = set() if abstained else {c["title"] for c in result["citations"]}
        found = {r.get("title") for r in result["evidence"][:10]}
        quality = answer_quality(result["answer"], item, keys, cited)
        quality["supporting_in_10"] = float({t for t, _ in item["supporting_facts"]} <= found)
        per_question.append(
            {"question": item["question"], "gold": item["answer"], "answer": result["answer"]} | quality
        )
    for name, chosen in (
        ("tuning half (even)", per_question[0::2]),
        ("reported half (odd)", per_question[1::2]),
    ):
        rows.append(
            {"half": name, "questions": len(chosen)}
            | {
                key: round(statistics.fmean(q[key] for q in chosen), 3)
                for key in ("gold", "precision", "recall", "all_cited", "supporting_in_10", "abstained")
            }
        )
    print("HotpotQA local answers by half")
    print_table(rows, list(rows[0]))
    if args.out:
        save(
            args.out,
            {"questions": len(questions), "halves": rows, "per_question": per_question, "machine": machine()},
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", choices=["calls", "latency", "local", "hotpotqa", "halves"])
    parser.add_argument("--index", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--n", type=int, default=0, help="questions (default: calls 10, latency 5, local 50)")
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--hotpotqa", type=Path)
    parser.add_argument("--hotpotqa-index", type=Path, default=Path("bench/.cache/hotpotqa"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.part not in ("hotpotqa", "halves") and (args.index is None or args.queries is None):
        parser.error(f"{args.part} needs --index and --queries")
    args.n = args.n or {"calls": 10, "latency": 5, "local": 50, "hotpotqa": 0, "halves": 0}[args.part]
    parts = {
        "calls": run_calls,
        "latency": run_latency,
        "local": run_local,
        "hotpotqa": run_hotpotqa,
        "halves": run_halves,
    }
    parts[args.part](args)


if __name__ == "__main__":
    main()
