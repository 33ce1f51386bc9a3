"""The lexical stores: bm25s indexes (of chunks, and of paragraphs) persisted next to the document store.

bm25s cannot add to a built index, so it is rebuilt from the document store whenever the store's generation
moved on, only by the holder of the index's write lock. Each build goes to a fresh folder; a small pointer
file, replaced atomically, names the current one, so an interrupted build leaves the previous index in place
and readers never see a half-written one. After switching, a build deletes the older folders, sparing the
one the pointer names at that moment (a racing build's, should one ever run outside the lock); a reader whose
folder went away between reading the pointer and loading it reads the pointer again.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citewise.index.terms import Terms, bm25s

if TYPE_CHECKING:  # the class, for annotations: the module itself is imported by `terms`, without numba
    from bm25s import BM25


logger = logging.getLogger(__name__)

LOAD_ATTEMPTS = 5
"""How many times a load follows the pointer when the folder it named was replaced while being read."""


class LexicalIndex:
    """BM25 (Lucene variant, k1=1.5, b=0.75), English stemming and stopwords, over chunks or paragraphs.

    `generation` is the document store generation the loaded index mirrors (-1 when none is loaded) and
    `folder` the name of the folder it was loaded from or built in.
    """

    def __init__(
        self, root: Path, name: str = "bm25", k1: float = 1.5, b: float = 0.75, *, load: bool = True
    ) -> None:
        self.root = root
        self.name = name
        self.pointer = root / f"{name}.json"
        self.k1, self.b = k1, b
        self.terms = Terms()
        self.generation = -1
        self.folder: str | None = None
        self.ids: list[str] = []
        self.parents: list[str] = []
        self.position: dict[str, int] = {}
        self.frequency: dict[str, int] = {}
        self._retriever: BM25 | None = None
        if load:
            self._load()

    def pointed(self) -> tuple[str, int] | None:
        """The folder the pointer file names now and its generation.

        None when there is no pointer yet, or when it cannot be read or names no build folder of this index
        (garbage, a path elsewhere): the index is then rebuilt from the document store, as a new one is.
        """
        try:
            state = json.loads(self.pointer.read_text())
            folder, generation = state["dir"], int(state["generation"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            logger.warning(
                "%s: the pointer %s cannot be read (%s); it will be rebuilt", self.name, self.pointer, error
            )
            return None
        if (
            not isinstance(folder, str)
            or Path(folder).name != folder
            or not folder.startswith(f"{self.name}-")
        ):
            logger.warning(
                "%s: the pointer %s names no index folder (%r); it will be rebuilt",
                self.name,
                self.pointer,
                folder,
            )
            return None
        return folder, generation

    def _load(self) -> None:
        """Load the folder the pointer names; an index that cannot be loaded stays empty at generation -1."""
        for _ in range(LOAD_ATTEMPTS):
            pointed = self.pointed()
            if pointed is None:
                return
            name, generation = pointed
            try:
                self._load_folder(self.root / name, name, generation)
                return
            except (OSError, ValueError) as error:  # gone (replaced meanwhile), or broken
                if self.pointed() == pointed:  # not replaced meanwhile: the folder itself is broken
                    logger.warning("%s: cannot load %s (%s); it will be rebuilt", self.name, name, error)
                    return
        logger.warning("%s: the pointer kept moving while loading; it will be reloaded", self.name)

    def _load_folder(self, folder: Path, name: str, generation: int) -> None:
        ids = json.loads((folder / "ids.json").read_text())
        parents_file = folder / "parents.json"
        parents = json.loads(parents_file.read_text()) if parents_file.exists() else []
        frequency_file = folder / "frequency.json"
        if not frequency_file.exists():  # built before document frequencies were kept: rebuilt on open
            self.ids, self.parents = ids, parents
            return
        frequency = json.loads(frequency_file.read_text())
        retriever = bm25s.BM25.load(folder, mmap=False, show_progress=False) if ids else None
        self.ids, self.parents, self.frequency, self._retriever = ids, parents, frequency, retriever
        self.position = {key: i for i, key in enumerate(ids)}
        self.folder, self.generation = name, generation

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Lower-case, drop English stopwords, stem (`Terms.tokenize`)."""
        return self.terms.tokenize(texts)

    def build(
        self, ids: Sequence[str], texts: Sequence[str], generation: int, parents: Sequence[str] = ()
    ) -> None:
        """Index the given texts afresh (with each one's parent id, if any) and switch to it atomically."""
        folder = self.root / f"{self.name}-{generation}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        folder.mkdir(parents=True)
        retriever = None
        frequency: dict[str, int] = {}
        if ids:
            retriever = bm25s.BM25(k1=self.k1, b=self.b)
            tokens = self.terms.ids(texts)
            counts = np.zeros(len(tokens.vocab), dtype=np.int64)
            for row in tokens.ids:
                counts[np.unique(np.asarray(row, dtype=np.int64))] += 1
            frequency = {token: int(counts[i]) for token, i in tokens.vocab.items() if counts[i]}
            retriever.index(tokens, show_progress=False)
            retriever.save(folder, show_progress=False)
        (folder / "frequency.json").write_text(json.dumps(frequency))
        (folder / "ids.json").write_text(json.dumps(list(ids)))
        (folder / "parents.json").write_text(json.dumps(list(parents)))
        tmp = self.pointer.with_suffix(".tmp")
        tmp.write_text(json.dumps({"dir": folder.name, "generation": generation}))
        os.replace(tmp, self.pointer)
        self.delete_old(keep=folder.name)
        self.ids, self.parents, self._retriever, self.generation = (
            list(ids),
            list(parents),
            retriever,
            generation,
        )
        self.frequency = frequency
        self.position = {key: i for i, key in enumerate(self.ids)}
        self.folder = folder.name
        logger.debug("%s rebuilt: %d texts, generation %d", self.name, len(ids), generation)

    def delete_old(self, keep: str) -> None:
        """Delete this index's other build folders, except the one the pointer names right now."""
        pointed = self.pointed()
        current = {keep, pointed[0] if pointed else keep}
        for old in self.root.glob(f"{self.name}-*"):
            if old.name not in current and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)

    def idf(self, tokens: Sequence[str]) -> list[float]:
        """Each token's inverse document frequency, log((N + 1) / (df + 0.5)): rare terms weigh most."""
        documents = len(self.ids)
        return [math.log((documents + 1) / (self.frequency.get(t, 0) + 0.5)) for t in tokens]

    def __len__(self) -> int:
        return len(self.ids)

    def score_all(self, query: str, mask: np.ndarray | None = None) -> np.ndarray:
        """The BM25 score of every indexed text for a query, in `ids` order (zeros when nothing matches).

        `mask` (one weight a text, 0 or 1) is bm25s's `weight_mask`: the texts it zeroes score 0, inside
        bm25s's scoring (the texts of collections a search may not see).
        """
        if self._retriever is None:
            return np.zeros(len(self.ids), dtype=np.float32)
        tokens = self.tokenize([query])[0]
        known = [t for t in tokens if t in self._retriever.vocab_dict]
        if not known:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._retriever.get_scores(known, weight_mask=mask), dtype=np.float32)
