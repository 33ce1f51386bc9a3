"""Short formulas read as text, long ones stay a placeholder (citewise/index/formulas.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citewise.index.formulas import PLACEHOLDER, formula_text, inline_math
from citewise.index.loaders import load_path


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        ("_2", "₂"),  # "H{{formula}}/He" in unarXive: H₂/He
        ("x^2+y^2", "x²+y²"),
        ("^+", "⁺"),
        ("R_{\\rm {p}} < 1.4 \\, R_", "Rₚ < 1.4 R"),  # unarXive lost the \oplus; the trailing "_" goes
        ("\\mu _c(\\cdot )", "μ_c(·)"),
        ("\\mathcal {W} = \\lbrace \\texttt {Text}, \\texttt {generation}\\rbrace", "𝒲 = {Text, generation}"),
        ("\\frac{a}{b}", "a/b"),
        ("p_A\\ne p_B", "p_A≠p_B"),  # \ne, which pylatexenc does not know, once dropped: "p_Ap_B"
        ("\\begin{@align*}{1}{-1}P_n(z)=(z-X_1)\\ldots (z-X_n)(z-X_{n+1})\\end{@align*}", PLACEHOLDER),
        ("", PLACEHOLDER),
        ("\\frac{", PLACEHOLDER),  # malformed
    ],
)
def test_formula_text(latex: str, text: str) -> None:
    assert formula_text(latex) == text


def test_inline_math_in_an_abstract() -> None:
    assert inline_math("Let $X_1,X_2,\\ldots$ be random and $$ P_n(z) $$ a polynomial.") == (
        "Let X₁,X₂,… be random and Pₙ(z) a polynomial."
    )


def test_unarxive_formulas_are_read_as_text(tmp_path: Path) -> None:
    record = {
        "paper_id": "1",
        "metadata": {"title": "Hot rocks"},
        "abstract": {"text": "A planet of $1.3\\,R_\\oplus$."},
        "body_text": [
            {
                "section": "Atmosphere",
                "sec_number": "1",
                "text": "No H{{formula:a}}/He envelope, no H{{formula:a}} O, and CO{{formula:a}} The "
                "spectrum obeys {{formula:b}} everywhere.",
            }
        ],
        "bib_entries": {},
        "ref_entries": {
            "a": {"type": "formula", "latex": "_2"},
            "b": {
                "type": "formula",
                "latex": "\\sum _{i=1}^{n} \\int _0^1 f_i(t)\\, g_i(t)\\, h_i(t)\\, k_i(t)\\, dt = 0",
            },
        },
    }
    path = tmp_path / "paper.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (document,) = load_path(path)
    assert [p.text for p in document.paragraphs] == [
        "A planet of 1.3 R⊕.",
        "No H₂/He envelope, no H₂O, and CO₂ The spectrum obeys [formula] everywhere.",  # the marker's space
    ]
