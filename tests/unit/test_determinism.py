"""Local mode gives the same result under any PYTHONHASHSEED (set iteration order must not leak out)."""

from __future__ import annotations

import os
import subprocess
import sys

PROGRAM = """
from citewise.nodes.rewrite import feedback_terms
texts = ["glacier volcano tundra basalt magma crater lava", "crater lava magma basalt tundra glacier volcano"]
print(feedback_terms(texts, set(), count=4))
"""


def test_pseudo_relevance_feedback_terms_do_not_depend_on_the_hash_seed() -> None:
    outputs = set()
    for seed in ("0", "1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout.strip())
    assert outputs == {"['glacier', 'volcano', 'tundra', 'basalt']"}  # ties keep reading order
