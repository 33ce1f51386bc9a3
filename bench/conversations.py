"""Conversation memory: scripted conversations, turn accuracy, follow-ups apart; local mode or a model.

    python bench/conversations.py [--unarxive ../shared/data/unarxive/papers.jsonl]
    python bench/conversations.py --model smollm2 --set unarxive --limit 6    # the model path, served here
    python bench/conversations.py --model openai/gpt-4o-mini                  # with a key or a base URL

Five sets of short conversations (two to four turns; pronouns, ellipsis, "the planet", a switch to another
named thing, a new subject mid-thread; a few turns the papers do not answer), each turn with the answering
sentence expected (tests/support/conversations.py says how a turn is scored):
- `tests/data/conversations-sample.jsonl`: 23 conversations over the bundled sample (also a test);
- `bench/data/conversations-unarxive.jsonl`: 22 conversations over 10 other unarXive papers, written for
  this check; untuned until 2026-11-27, when its wrong turns were read to find levers (needs ../shared);
- `bench/data/conversations-unarxive2.jsonl`: 24 conversations over 10 more papers, written from their text
  only and held out until stop 65, which read its wrong turns (where each is lost) to find levers;
- `bench/data/conversations-unarxive3.jsonl`: 24 conversations (80 turns, 9 unanswerable) over 9 more papers,
  written by a helper from their text only (2026-11-29), held out the same way until stop 52, which read its
  refused turns' questions and answering scores (where they are lost: 16 of 24 false refusals had the
  answering passage among the first ten, best answering scores 0.27-0.44 against unanswerable turns'
  0.22-0.63: the cut cannot part them); nothing was tuned on it;
- `bench/data/conversations-unarxive4.jsonl`: 24 conversations (81 turns, 9 unanswerable) over 9 more papers,
  written by a helper from their text only (2026-12-01), held out: only its totals are looked at.
Each set is ingested into an index of its own and asked with direct answers, one thread per conversation;
the table gives turn accuracy, first turns and follow-ups apart. Turn accuracy asks for the answering
sentence's words, which local mode quotes and a model may not: "answering passage cited" (the answer cites
a paragraph holding the expected sentence, not "not in your documents") compares the two paths fairly.
`--model smollm2` serves SmolLM2-135M-Instruct on 127.0.0.1 (the real-model tests' server and GGUF),
`--model qwen` Qwen2.5-Coder-1.5B-Instruct (bench/qwen.py: benches only, from pinned wheels); any other
model name is used as the product uses it (its key or OPENAI_BASE_URL from the environment).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
import qwen  # noqa: E402
from common import machine, print_table, save  # noqa: E402
from support import conversations  # noqa: E402
from support.llama_server import MODEL_ALIAS, llama_server  # noqa: E402

from citewise.context import Context  # noqa: E402
from citewise.core.evidence import NO_ANSWER, PART_UNANSWERED  # noqa: E402
from citewise.core.text import sentences  # noqa: E402
from citewise.index import Index  # noqa: E402

SAMPLE = ROOT / "citewise" / "samples" / "unarxive_sample.jsonl"
SETS = {
    "sample": ROOT / "tests" / "data" / "conversations-sample.jsonl",
    "unarxive (looked at)": ROOT / "bench" / "data" / "conversations-unarxive.jsonl",
    "unarxive-2 (looked at)": ROOT / "bench" / "data" / "conversations-unarxive2.jsonl",
    "unarxive-3 (held out)": ROOT / "bench" / "data" / "conversations-unarxive3.jsonl",
    "unarxive-4 (held out)": ROOT / "bench" / "data" / "conversations-unarxive4.jsonl",
}


def corpus_for(papers: Path, chosen: list[dict], out: Path) -> Path:
    """The papers the conversations are about, as one JSON Lines file to ingest."""
    wanted = {p for c in chosen for p in c["papers"]}
    out.parent.mkdir(parents=True, exist_ok=True)
    with papers.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as target:
        for line in source:
            if line.strip() and json.loads(line)["paper_id"] in wanted:
                target.write(line)
    return out


def holds(index: Index, paragraph_ids: tuple[str, ...], expected: list[str]) -> bool:
    """Whether one of the paragraphs holds one of the expected sentences (whitespace aside)."""
    texts = [" ".join(p.text.split()) for i in paragraph_ids if (p := index.paragraph(i))]
    return any(" ".join(e.split()) in t for e in expected for t in texts)


def answering_held(
    index: Index, chosen: list[dict], results: list[conversations.TurnResult]
) -> list[tuple[conversations.TurnResult, bool, bool]]:
    """Per answerable turn: (its result, whether a paragraph holding its expected sentence is among its first
    ten passages, whether the answer cites one): the search-level figure beside turn accuracy, as
    HotpotQA's "supporting in 10", and the answer's, in any words (an honest "not in your documents" cites
    the closest passages as not answering: no)."""
    turns = [t for c in chosen for t in c["turns"]]
    held = []
    for result, turn in zip(results, turns, strict=True):
        if turn.get("unanswerable"):
            continue
        said = not result.answer.startswith(conversations.NO_ANSWER)
        cited = said and holds(index, result.cited, turn["expect"])
        held.append((result, holds(index, result.passages, turn["expect"]), cited))
    return held


def where_lost(
    held: list[tuple[conversations.TurnResult, bool, bool]], results: list[conversations.TurnResult]
) -> dict[str, int]:
    """Where each wrong turn was lost: search, the refusal, or the choice of passage or sentence."""
    lost = {"refused, answer in 10": 0, "refused, not in 10": 0, "right passage, other sentence": 0}
    lost |= {"other passage, answer in 10": 0, "other passage, not in 10": 0, "unanswerable answered": 0}
    for result, found, cited in held:
        if result.right:
            continue
        if result.answer.startswith(conversations.NO_ANSWER):
            lost["refused, answer in 10" if found else "refused, not in 10"] += 1
        elif cited:
            lost["right passage, other sentence"] += 1
        else:
            lost["other passage, answer in 10" if found else "other passage, not in 10"] += 1
    answerable = {id(r) for r, *_ in held}
    lost["unanswerable answered"] = sum(not r.right for r in results if id(r) not in answerable)
    return lost


def answer_sentences(results: list) -> list[int]:
    """Sentences each answer says (a part noted unanswered is no sentence said), abstentions left out."""
    return [
        len([s for s in sentences(r.answer) if not s.startswith(PART_UNANSWERED)])
        for r in results
        if not r.answer.startswith(NO_ANSWER)
    ]


def share(values: list[bool]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--unarxive", type=Path, default=ROOT.parent / "shared" / "data" / "unarxive" / "papers.jsonl"
    )
    parser.add_argument("--cache", type=Path, default=ROOT / "bench" / ".cache")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "conversations.json")
    parser.add_argument(
        "--model", help=f"a model ({MODEL_ALIAS} or {qwen.ALIAS}: served here); local mode without one"
    )
    parser.add_argument("--profile", choices=["full", "lean"], default="lean", help="with --model")
    parser.add_argument(
        "--set", choices=["sample", "unarxive", "unarxive-2", "unarxive-3", "unarxive-4"], help="one set only"
    )
    parser.add_argument("--limit", type=int, default=0, help="the first N conversations of each set")
    args = parser.parse_args()
    with ExitStack() as stack:
        model = args.model
        if model in (MODEL_ALIAS, qwen.ALIAS):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            gguf = qwen.gguf() if model == qwen.ALIAS else None
            os.environ["OPENAI_BASE_URL"] = stack.enter_context(llama_server(folder, model=gguf, alias=model))
            model = f"openai/{model}"
        rows, turns, lost = run_sets(args, model)
    if not rows:
        sys.exit(f"no conversation set could be read: the unarXive papers ({args.unarxive}) are needed")
    mode = f"{args.model}, {args.profile} profile" if args.model else "Local mode"
    print(f"{mode}, direct answers, one thread per conversation")
    print_table(rows, list(rows[0]))
    print("\nWhere the wrong turns were lost")
    print_table(lost, list(lost[0]))
    save(args.out, {"machine": machine(), "model": args.model, "rows": rows, "lost": lost, "turns": turns})


def run_sets(args: argparse.Namespace, model: str | None) -> tuple[list[dict], dict[str, list], list[dict]]:
    """Each chosen set asked through the graph: its table row, every turn as asked, where wrong turns went."""
    rows, turns, lost = [], {}, []
    for name, path in SETS.items():
        if args.set and name.split()[0] != args.set:
            continue
        chosen = conversations.load(path)[: args.limit or None]
        # an index of its own for a limited run: its corpus file holds only the chosen papers, and ingesting
        # it where the whole set's index is would take the others out of that index
        key = name.split()[0] + (f"-first{args.limit}" if args.limit else "")
        if name == "sample":
            corpus = SAMPLE
        elif args.unarxive.exists():
            corpus = corpus_for(args.unarxive, chosen, args.cache / f"conversations-{key}-corpus.jsonl")
        else:
            print(f"skipped {name}: {args.unarxive} not found")
            continue
        index_dir = args.cache / f"conversations-{key}"
        with Index.open(index_dir) as index:
            index.ingest([corpus])
        started = time.perf_counter()
        context = Context(index_dir=str(index_dir), route="direct")
        if model:
            context = Context(index_dir=str(index_dir), route="direct", model=model, profile=args.profile)
        results = asyncio.run(conversations.run(chosen, context))
        seconds = time.perf_counter() - started
        with Index.open(index_dir) as index:
            held = answering_held(index, chosen, results)
        rows.append(
            {
                "set": name,
                "conversations": len(chosen),
                "turns": len(results),
                "turn accuracy": round(conversations.accuracy(results), 3),
                "first turns": round(conversations.accuracy(results, first=True), 3),
                "follow-ups": round(conversations.accuracy(results, first=False), 3),
                "answering passage cited": share([cited for *_, cited in held]),
                "passage in 10": share([found for _, found, _ in held]),
                "first turns: passage in 10": share([found for r, found, _ in held if r.turn == 1]),
                "right, yet a part noted": sum(r.right and PART_UNANSWERED in r.answer for r in results),
                "sentences per answer": round(statistics.mean(answer_sentences(results) or [0]), 2),
                "s per turn": round(seconds / len(results), 2),
            }
        )
        lost.append({"set": name, **where_lost(held, results)})
        turns[name] = [r.__dict__ | {"answer": r.answer[:300]} for r in results]
    return rows, turns, lost


if __name__ == "__main__":
    main()
