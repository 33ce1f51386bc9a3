"""Ingest speed at the same quality: the int8 embedding model against the float32 one, side by side.

Two parts, one run:

1. The model alone: the same SciFact chunk-sized texts (480 characters) embedded by each ONNX model in this
   process, texts per second and the cosine between each text's two vectors.
2. The product: for each precision, a fresh process builds a fresh index with `bench/retrieval.py` (the
   whole ingest: chunking, embedding, storing) and scores it, with CITEWISE_EMBEDDING_PRECISION set:
   SciFact (5,183 abstracts; train queries, nDCG@10 of hybrid-0.5, the product's search) and HotpotQA (its
   994 passages; recall@5 of hybrid-0.5 on the odd questions, the reported half). Chunks per second of the
   SciFact build, its peak resident memory (the child's own, from wait4), and each figure's difference.

    python bench/embedspeed.py --scifact ../shared/data/scifact --hotpotqa ../shared/data/hotpotqa \
        [--texts 1500] [--out bench/results/embedspeed.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, machine, print_table

from citewise.index.embeddings import MiniLMEmbedder

BENCH = Path(__file__).resolve().parent


def texts_of(scifact: Path, count: int) -> list[str]:
    """Chunk-sized pieces (480 characters) of SciFact abstracts, in corpus order."""
    texts: list[str] = []
    with (scifact / "corpus.jsonl").open() as handle:
        for line in handle:
            text = json.loads(line)["text"]
            texts.extend(text[start : start + 480] for start in range(0, len(text), 480))
            if len(texts) >= count:
                break
    return texts[:count]


def model_alone(texts: list[str]) -> list[dict[str, Any]]:
    """Texts per second of each precision's model on the same texts, and their vectors' agreement."""
    rows, vectors = [], {}
    for precision in ("fp32", "int8", "fp32", "int8"):  # twice each, interleaved: the machine is noisy
        embedder = MiniLMEmbedder(precision=precision)
        embedder.embed(texts[:32])  # load (and make the int8 model once)
        started = time.perf_counter()
        vectors[precision] = embedder.embed(texts)
        rows.append({"precision": precision, "seconds": time.perf_counter() - started})
    out = []
    for precision in ("fp32", "int8"):
        seconds = min(r["seconds"] for r in rows if r["precision"] == precision)
        out.append({"precision": precision, "texts/s": len(texts) / seconds})
    cosines = (vectors["fp32"] * vectors["int8"]).sum(axis=1)
    out[1] |= {"x fp32": out[1]["texts/s"] / out[0]["texts/s"], "cos mean": float(cosines.mean())}
    out[1] |= {"cos min": float(cosines.min()), "cos p5": float(np.percentile(cosines, 5))}
    return out


def build_and_score(precision: str, arguments: list[str], folder: Path) -> dict[str, Any]:
    """Run bench/retrieval.py in a fresh process with that precision; its figures and peak memory."""
    out = folder / f"{precision}-{len(list(folder.iterdir()))}.json"
    command = [sys.executable, str(BENCH / "retrieval.py"), *arguments, "--out", str(out)]
    command += ["--runs", "hybrid-0.5", "--latency-queries", "0", "--no-baselines"]
    env = {**os.environ, "CITEWISE_EMBEDDING_PRECISION": precision, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        printed = log.read()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{printed[-2000:]}")
    built = re.search(r"indexed (\d+) documents, (\d+) chunks, (\d+)s", printed)
    figures = json.loads(out.read_text())["runs"]["hybrid-0.5"]
    return {
        "chunks": int(built.group(2)) if built else None,
        "build s": int(built.group(3)) if built else None,
        "peak MB": usage.ru_maxrss / 1024,
        **figures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scifact", type=Path, required=True)
    parser.add_argument("--hotpotqa", type=Path, required=True)
    parser.add_argument("--texts", type=int, default=1500)
    parser.add_argument("--out", type=Path, default=RESULTS / "embedspeed.json")
    args = parser.parse_args()

    alone = model_alone(texts_of(args.scifact, args.texts))
    print_table(alone, ["precision", "texts/s", "x fp32", "cos mean", "cos min", "cos p5"])

    product: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "results").mkdir()
        for precision in ("fp32", "int8"):
            scifact = build_and_score(
                precision,
                ["--corpus", str(args.scifact / "corpus.jsonl"),
                 "--queries", str(args.scifact / "queries.train.jsonl"),
                 "--qrels", str(args.scifact / "qrels" / "train.tsv"),
                 "--index", str(root / f"scifact-{precision}")],
                root / "results",
            )  # fmt: skip
            hotpot = build_and_score(
                precision,
                [
                    "--hotpotqa",
                    str(args.hotpotqa),
                    "--index",
                    str(root / f"hotpotqa-{precision}"),
                    "--halves",
                ],
                root / "results",
            )
            row = {
                "precision": precision,
                "chunks": scifact["chunks"],
                "build s": scifact["build s"],
                "chunks/s": scifact["chunks"] / scifact["build s"] if scifact["build s"] else None,
                "peak MB": scifact["peak MB"],
                "SciFact nDCG@10": scifact["ndcg@10"],
                "HotpotQA R@5 odd": hotpot.get("recall@5 odd"),
            }
            product.append(row)
            print(row, flush=True)
            for index in root.glob(f"*-{precision}"):
                shutil.rmtree(index, ignore_errors=True)
    base = product[0]
    for row in product:
        row["x chunks/s"] = row["chunks/s"] / base["chunks/s"] if base["chunks/s"] else None
        row["d nDCG@10"] = row["SciFact nDCG@10"] - base["SciFact nDCG@10"]
        row["d R@5"] = row["HotpotQA R@5 odd"] - base["HotpotQA R@5 odd"]
    columns = ["precision", "chunks", "build s", "chunks/s", "x chunks/s", "peak MB", "SciFact nDCG@10"]
    print_table(product, [*columns, "d nDCG@10", "HotpotQA R@5 odd", "d R@5"])
    args.out.write_text(json.dumps({"machine": machine(), "model": alone, "product": product}, indent=1))
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
