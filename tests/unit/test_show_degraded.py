"""The CLI shows the stages that fell back, and its JSON carries them."""

from __future__ import annotations

import pytest

from citewise.app.cli import OUTPUT_KEYS, show_answer

DEGRADED = [
    {
        "stage": "score",
        "reason": "provider failed after retries: InternalServerError (HTTP 500): used question similarity",
        "chunks": ["a", "b"],
    }
]


def payload(**values: object) -> dict:
    return {
        **{key: default for key, default in OUTPUT_KEYS.items()},
        "question": "q",
        "answer": "A.",
        **values,
    }


def test_a_degraded_run_prints_which_stage_fell_back_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    show_answer(payload(mode="llm", degraded=DEGRADED))
    out = capsys.readouterr().out
    assert "Degraded:" in out
    assert "score: provider failed after retries: InternalServerError (HTTP 500)" in out
    assert "(2 chunk(s))" in out


def test_a_run_without_fallbacks_prints_no_degraded_block(capsys: pytest.CaptureFixture[str]) -> None:
    show_answer(payload(mode="llm"))
    assert "Degraded" not in capsys.readouterr().out


def test_the_json_output_keys_include_degraded() -> None:
    assert OUTPUT_KEYS["degraded"] == []
