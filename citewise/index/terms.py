"""How both tiers' BM25 reads a text: lower case, English stopwords out, Snowball stemming (bm25s's).

The local tier's bm25s indexes (`citewise.index.local.lexical`) and the shared tier's term tables
(`citewise.index.shared.pglexical`) tokenize through `Terms`, so that a query's terms are the same on both.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import Stemmer

if TYPE_CHECKING:
    from bm25s.tokenization import Tokenized


def _bm25s_without_numba() -> ModuleType:
    """bm25s, imported without numba when numba is not loaded yet.

    bm25s imports numba whenever it is installed (ranx, which `citewise eval` uses, installs it) for a
    retrieval backend citewise does not use: it reads `BM25.get_scores`, plain NumPy. That import was 0.1 s
    of a cold `ask` (5%). numba stays importable afterwards (ranx imports it when evaluating).
    """
    if "numba" in sys.modules:
        import bm25s

        return bm25s
    sys.modules["numba"] = None  # type: ignore[assignment]  # `import numba` raises ImportError meanwhile
    try:
        import bm25s
    finally:
        del sys.modules["numba"]
    return bm25s


bm25s = _bm25s_without_numba()
# bm25s pins its own logger at DEBUG on import, which prints every index build; let the application's
# logging configuration decide instead.
logging.getLogger("bm25s").setLevel(logging.NOTSET)


bm25s = _bm25s_without_numba()
# bm25s pins its own logger at DEBUG on import, which prints every index build; let the application's
# logging configuration decide instead.
logging.getLogger("bm25s").setLevel(logging.NOTSET)


class Terms:
    """citewise's BM25 tokenizer (one stemmer each: PyStemmer's is not shared between threads here)."""

    def __init__(self) -> None:
        self.stemmer = Stemmer.Stemmer("english")

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms: lower case, English stopwords dropped, stemmed."""
        return bm25s.tokenize(
            list(texts), stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )

    def ids(self, texts: Sequence[str]) -> Tokenized:
        """The same terms as ids into a vocabulary of their own (what bm25s builds an index from)."""
        return bm25s.tokenize(list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False)
