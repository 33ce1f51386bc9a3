"""The runtime Context: every setting a run can change. LangGraph Studio shows it as the config form.

Defaults come from the papers (ChunkRAG: alpha 0.5, redundancy 0.9; ScoreRAG: 3 samples, floor 20, summary
bands) and from the environment for models and stores (`CITEWISE_MODEL`, `CITEWISE_JUDGE_MODEL`,
`CITEWISE_INDEX`, `CITEWISE_CHROMA_URL`). With no model configured, every node runs its local fallback.

It also carries what is not a setting: the run's `resources` (the open index, the models, the embedder;
`citewise.core.resources`), which the way in builds once and which the JSON schema leaves out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, cast

from pydantic.json_schema import SkipJsonSchema

from citewise.deployment import DEFAULT_INDEX_DIR
from citewise.prompts import (
    accuracy,
    answer,
    condense,
    critique,
    customize,
    expand,
    outline,
    reflect,
    rewrite,
    score,
    section,
    verify,
)
from citewise.prompts import route as routing


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


Profile = Literal["auto", "full", "lean"]
"""How much a model is asked (`Context.profile`)."""


def as_profile(value: str) -> Profile:
    """`value` (an environment variable, a command-line option) as a profile, unchecked.

    Context refuses any other value when it is built, with the reason among its other settings' problems.
    """
    return cast(Profile, value)


@dataclass(kw_only=True)
class Context:
    """Settings of one run of the query graph."""

    # stores ---------------------------------------------------------------------------------------------
    index_dir: str = field(
        default_factory=lambda: _env("CITEWISE_INDEX") or DEFAULT_INDEX_DIR,
        metadata={"description": "The citewise index directory to search."},
    )
    chroma_url: str | None = field(
        default_factory=lambda: _env("CITEWISE_CHROMA_URL"),
        metadata={"description": "A Chroma server URL; empty for the embedded store."},
    )
    store: str | None = field(
        default_factory=lambda: _env("CITEWISE_STORE"),
        metadata={
            "description": "A postgresql:// URL of a shared store (several servers answer from it); empty: "
            "the local index in index_dir."
        },
    )

    collections: Annotated[tuple[str, ...] | None, SkipJsonSchema()] = field(
        default=None,
        metadata={
            "description": "The collections this run may read (None: every one; (): none), set by the way in "
            "from who is asking (citewise.app.access), never from a request: not in the JSON schema."
        },
    )

    # models ---------------------------------------------------------------------------------------------
    model: str | None = field(
        default_factory=lambda: _env("CITEWISE_MODEL"),
        metadata={
            "description": "Writing model as provider/model (openai/gpt-4o-mini, cohere/command-r, "
            "openai/<name> with OPENAI_BASE_URL for Ollama, vLLM, llama.cpp). Empty: local mode."
        },
    )
    judge_model: str | None = field(
        default_factory=lambda: _env("CITEWISE_JUDGE_MODEL"),
        metadata={"description": "Cheaper model for rewriting and judging; defaults to `model`."},
    )
    rerank_model: str = field(
        default="rerank-v3.5",
        metadata={"description": "Cohere rerank model (used when COHERE_API_KEY is set)."},
    )
    judge_temperature: float = field(
        default=0.7,
        metadata={"description": "Sampling temperature of the relevance samples (self-consistency)."},
    )
    writer_temperature: float = field(default=0.2, metadata={"description": "Temperature of the writer."})
    timeout_seconds: float = field(default=60.0, metadata={"description": "Per-request timeout."})
    max_retries: int = field(
        default=4, metadata={"description": "Retries on 429 / 5xx / timeouts (tenacity)."}
    )
    max_concurrency: int = field(default=4, metadata={"description": "LLM requests in flight at once."})
    structured_output: Literal[
        "json_schema", "json_object_schema", "function_calling", "json_mode", "text"
    ] = field(
        default="json_schema",
        metadata={
            "description": "First structured-output method to try; a server that refuses one is asked "
            "by the next (json_schema, json_object_schema, function_calling, json_mode, text), and "
            "what works is remembered per server and model for the later runs of the process."
        },
    )
    context_window: int | None = field(
        default=None,
        metadata={
            "description": "The model's context window in tokens, where the server does not say it "
            "(llama.cpp's /props and Ollama's /api/show do); evidence is packed to fit it."
        },
    )
    budget_seconds: float | None = field(
        default=None,
        metadata={
            "description": "Time budget of one answer in seconds: after it, the stages left use their local "
            "fallback and say so in `degraded` (empty: none)."
        },
    )
    profile: Profile = field(
        default_factory=lambda: as_profile(_env("CITEWISE_PROFILE") or "auto"),
        metadata={
            "description": "How much a model is asked. full: every stage judges and writes with it (several "
            "samples, reflection, critic, summaries). lean: at most about six requests a direct answer (one "
            "relevance judgment of five passages, the answer, one verification; rewrite, second hop, "
            "reflection, critic, summaries and route run locally), for small, slow or serial models. auto: "
            "lean for a model on this machine or its network (a local OpenAI-compatible server), full for "
            "hosted APIs."
        },
    )
    llm_cache: str | None = field(
        default_factory=lambda: _env("CITEWISE_LLM_CACHE"),
        metadata={"description": "Path of an SQLite LLM cache (empty: no cache)."},
    )

    # retrieval ------------------------------------------------------------------------------------------
    k: int = field(default=10, metadata={"description": "Chunks retrieved per query."})
    alpha: float = field(
        default=0.5, metadata={"description": "Dense weight in hybrid fusion (ChunkRAG: 0.5)."}
    )
    fusion: Literal["minmax", "rrf"] = field(default="minmax", metadata={"description": "Hybrid fusion."})
    paragraph_weight: float = field(
        default=0.7, metadata={"description": "Share of a chunk's BM25 score taken from its whole paragraph."}
    )
    paragraph_dense_weight: float = field(
        default=0.5,
        metadata={"description": "Share of a chunk's dense score taken from its paragraph's vector."},
    )
    second_hop: int = field(
        default=1,
        metadata={
            "description": "Follow-up searches from the best first-round documents (multi-hop; 0: none)."
        },
    )
    redundancy: float = field(
        default=0.9, metadata={"description": "Drop a chunk this similar to a better one."}
    )
    max_sub_queries: int = field(default=2, metadata={"description": "Sub-queries the rewrite may add."})
    max_candidates: int = field(default=30, metadata={"description": "Candidate chunks scored per pass."})

    # scoring and threshold ------------------------------------------------------------------------------
    n_samples: int = field(default=3, metadata={"description": "Relevance samples averaged per chunk."})
    score_batch_size: int = field(default=10, metadata={"description": "Chunks judged per request."})
    threshold_floor: float = field(
        default=20.0, metadata={"description": "Never keep below this (ScoreRAG)."}
    )
    threshold_spread: float = field(
        default=0.5, metadata={"description": "Threshold rule: mean + this x standard deviation ..."}
    )
    threshold_top_ratio: float = field(
        default=0.7, metadata={"description": "... but never above this fraction of the best score."}
    )
    borderline: float = field(
        default=15.0, metadata={"description": "The critic re-judges chunks within this of the threshold."}
    )
    local_cosine_zero: float = field(
        default=0.1, metadata={"description": "Local mode: cosine similarity that maps to relevance 0."}
    )
    local_cosine_full: float = field(
        default=0.7, metadata={"description": "Local mode: cosine similarity that maps to relevance 100."}
    )
    local_answerable: float = field(
        default=0.44,
        metadata={
            "description": "Local mode: the answering score (cosine + term coverage) below which the "
            "documents are taken not to answer."
        },
    )
    max_rewrites: int = field(default=2, metadata={"description": "Corrective passes when nothing is kept."})

    # evidence and writing -------------------------------------------------------------------------------
    max_evidence: int = field(default=8, metadata={"description": "Kept chunks the answer may use."})
    context_tokens: int = field(
        default=3000, metadata={"description": "Evidence tokens per writing call (iterative synthesis)."}
    )
    drop_unsupported: bool = field(
        default=True, metadata={"description": "Drop answer sentences no evidence supports (else flag them)."}
    )
    local_support: float = field(
        default=0.35,
        metadata={"description": "Local verification: content-word overlap that counts as support."},
    )

    # accuracy (topicality + accuracy ranking) -----------------------------------------------------------
    trusted: list[str] = field(
        default_factory=list,
        metadata={
            "description": "Trusted sources: paths, globs or document ids (matched against each evidence "
            "document's source file, its file name and its id), or `tag:NAME` (documents ingested with "
            "`--tag NAME`; NAME may be a glob). The kept trusted evidence yields a short "
            "cited GenText; every kept document is scored for agreement with it and evidence is ordered by "
            "beta x topicality + (1 - beta) x accuracy. Empty: off."
        },
    )
    beta: float = field(
        default=0.5,
        metadata={
            "description": "Weight of topicality against accuracy in the evidence order (1: topicality "
            "only; used only with `trusted`)."
        },
    )

    # reports --------------------------------------------------------------------------------------------
    route: Literal["auto", "direct", "report"] = field(
        default="auto",
        metadata={
            "description": "Answer path: auto (decided from the question), direct (a cited answer) or "
            "report (outline, parallel sections, customize)."
        },
    )
    approve_outline: bool = field(
        default=False,
        metadata={
            "description": "Stop after planning a report's outline and wait for it to be approved or edited "
            "(needs a checkpointer; resume with the outline, see docs/usage.md)."
        },
    )
    outline_library: str | None = field(
        default_factory=lambda: _env("CITEWISE_OUTLINE_LIBRARY"),
        metadata={
            "description": "Outline instructions per question type (JSON); empty: the shipped library."
        },
    )
    style_exemplars: str | None = field(
        default_factory=lambda: _env("CITEWISE_STYLE_EXEMPLARS"),
        metadata={"description": "Exemplar answers whose style reports follow (markdown); empty: shipped."},
    )
    min_sections: int = field(default=2, metadata={"description": "Fewest sections a report outline plans."})
    max_sections: int = field(default=5, metadata={"description": "Most sections a report outline plans."})
    max_parallel_sections: int = field(
        default=5, metadata={"description": "Report sections researched and written at the same time."}
    )
    section_evidence: int = field(
        default=5, metadata={"description": "Kept chunks each report section's writer may use."}
    )
    report_words: int = field(
        default=900, metadata={"description": "Length budget of a report in words (customize condenses)."}
    )
    max_customize_attempts: int = field(
        default=2, metadata={"description": "Drafts customize may write until validation passes."}
    )

    # prompts --------------------------------------------------------------------------------------------
    condense_prompt: str = field(default=condense.PROMPT, metadata={"description": "Standalone question."})
    rewrite_prompt: str = field(default=rewrite.PROMPT, metadata={"description": "Query rewriting."})
    follow_up_prompt: str = field(
        default=rewrite.FOLLOW_UP,
        metadata={"description": "Second-hop queries from the first round's passages."},
    )
    score_prompt: str = field(default=score.PROMPT, metadata={"description": "Relevance scoring."})
    reflect_prompt: str = field(default=reflect.PROMPT, metadata={"description": "Self-reflection."})
    critique_prompt: str = field(default=critique.PROMPT, metadata={"description": "Critic."})
    summary_prompt: str = field(default=expand.PROMPT, metadata={"description": "Graded summaries."})
    answer_prompt: str = field(default=answer.PROMPT, metadata={"description": "Cited answer."})
    refine_prompt: str = field(default=answer.REFINE_PROMPT, metadata={"description": "Iterative synthesis."})
    verify_prompt: str = field(default=verify.PROMPT, metadata={"description": "Sentence -> source lines."})
    route_prompt: str = field(default=routing.PROMPT, metadata={"description": "Direct answer or report."})
    outline_prompt: str = field(default=outline.PROMPT, metadata={"description": "Adapt the outline."})
    section_prompt: str = field(default=section.PROMPT, metadata={"description": "Write one section."})
    section_refine_prompt: str = field(
        default=section.REFINE_PROMPT, metadata={"description": "Iterative synthesis of a section."}
    )
    customize_prompt: str = field(
        default=customize.PROMPT, metadata={"description": "Merge, condense and style the report."}
    )
    gentext_prompt: str = field(
        default=accuracy.GENTEXT_PROMPT, metadata={"description": "GenText from the trusted evidence."}
    )
    stance_prompt: str = field(
        default=accuracy.STANCE_PROMPT, metadata={"description": "A document's stance towards the GenText."}
    )

    # what the way in built --------------------------------------------------------------------------------
    resources: Annotated[Any, SkipJsonSchema()] = field(
        default=None,
        repr=False,
        compare=False,
        metadata={
            "description": "The index, chat models, embedder, reranker and outline centroids runs share "
            "(citewise.core.resources.Resources), built once by the way in; not a setting, so it is not in "
            "the JSON schema and no client of a served graph can set it. None: the run builds its own at "
            "first use and keeps it here."
        },
    )

    async def readable(self) -> tuple[str, ...] | None:
        """The collections this run may read: `collections` (a served run's: its caller's grants)."""
        return self.collections

    async def writable(self, remove: bool = False) -> str | None:
        """Where this run's ingest puts documents: None, the administrator's way (see `Writing.ingest`).

        A served run's is its caller's (`citewise.app.served.ServedContext`). Raises PermissionError when
        the caller may not write (or, with `remove`, remove).
        """
        return None

    def log(self, action: str, run: Mapping[str, Any]) -> None:
        """What this run did, for an audit log: nothing here (the API and the page log it themselves).

        A served run's goes to the server's audit log as its caller's (`citewise.app.served.ServedContext`).
        `action` is "ask" (`run`: the turn's question, route, citations and error, when its run ends) or
        "ingest" / "remove" (`run`: the paths, the report and the collection).
        """

    def __post_init__(self) -> None:
        """Refuse settings no run can use, each with the reason (Studio and `Context(...)` alike)."""
        problems = [message for bad, message in self._checks() if bad]
        if problems:
            raise ValueError("invalid context settings: " + "; ".join(problems))

    def _checks(self) -> list[tuple[bool, str]]:
        at_least_one = (
            "k", "max_candidates", "n_samples", "score_batch_size", "max_evidence", "context_tokens",
            "max_concurrency", "min_sections", "max_sections", "max_parallel_sections", "section_evidence",
            "max_customize_attempts",
        )  # fmt: skip
        not_negative = ("max_rewrites", "max_sub_queries", "max_retries", "timeout_seconds", "second_hop")
        checks = [
            (getattr(self, n) < 1, f"{n} must be at least 1 (got {getattr(self, n)})") for n in at_least_one
        ]
        checks += [
            (getattr(self, n) < 0, f"{n} must not be negative (got {getattr(self, n)})") for n in not_negative
        ]
        for name in ("alpha", "paragraph_weight", "paragraph_dense_weight", "beta"):
            value = getattr(self, name)
            checks.append((not 0 <= value <= 1, f"{name} must be between 0 and 1 (got {value})"))
        checks += [
            (not 0 < self.redundancy <= 1, f"redundancy must be in (0, 1] (got {self.redundancy})"),
            (
                self.local_cosine_zero >= self.local_cosine_full,
                f"local_cosine_zero ({self.local_cosine_zero}) must be below local_cosine_full "
                f"({self.local_cosine_full})",
            ),
            (
                self.min_sections > self.max_sections,
                f"min_sections ({self.min_sections}) must not exceed max_sections ({self.max_sections})",
            ),
            (self.report_words < 50, f"report_words must be at least 50 (got {self.report_words})"),
            (
                self.profile not in ("auto", "full", "lean"),
                f"profile must be auto, full or lean (got {self.profile!r})",
            ),
            (
                self.budget_seconds is not None and self.budget_seconds <= 0,
                f"budget_seconds must be positive (got {self.budget_seconds})",
            ),
            (
                self.context_window is not None and self.context_window < 512,
                f"context_window must be at least 512 tokens (got {self.context_window})",
            ),
            (
                self.resources is not None and not callable(getattr(self.resources, "models", None)),
                f"resources must be citewise.core.resources.Resources (got {type(self.resources).__name__})",
            ),
        ]
        return checks

    @property
    def llm(self) -> bool:
        """True when a writing model is configured (otherwise every node runs its local fallback)."""
        return bool(self.model)

    @property
    def lean(self) -> bool:
        """True when the lean profile applies (`profile`, with auto resolved from where the model runs)."""
        if self.profile != "auto" or not self.model:
            return self.profile == "lean" and bool(self.model)
        from citewise.models.server import is_local
        from citewise.models.specs import parse_model

        try:
            return is_local(parse_model(self.judge or self.model)[0])
        except ValueError:
            return False

    @property
    def judge(self) -> str | None:
        """The judging model: `judge_model`, else `model`."""
        return self.judge_model or self.model
