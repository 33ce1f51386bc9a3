"""Formulas as readers see them: short LaTeX math turned into text ("H_2" -> "H₂", "x^2" -> "x²").

unarXive papers carry their formulas as LaTeX beside the text (`{{formula:ID}}` markers) and their abstracts
with `$...$` spans. pylatexenc (a maintained LaTeX-to-Unicode converter) renders the math; single-character
sub- and superscripts become Unicode ones where Unicode has them. A formula too long to read inline (a
display, a derivation) stays the placeholder "[formula]", as does one that renders to nothing readable. One
whose LaTeX holds nothing but script marks (unarXive kept the "R_" of R-sub-oplus as "_") is left out: a
placeholder there says less than nothing ("a 1.3 R[formula] exoplanet").
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

logging.getLogger("pylatexenc").setLevel(logging.CRITICAL)  # it logs every macro it cannot fill

PLACEHOLDER = "[formula]"
LIMIT = 40
"""The longest rendering kept inline, in characters; longer formulas become `PLACEHOLDER`."""

_SUB = str.maketrans("0123456789+-=()aeohklmnpstx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₕₖₗₘₙₚₛₜₓ")
_SUP = str.maketrans("0123456789+-=()n*", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ*")
_SCRIPT = re.compile(r"([_^])(\S)(?![\w'])")
_EMPTY = re.compile(r"[\s{}]*[_^][\s_^{}]*")
_DOLLARS = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.DOTALL)


@functools.cache
def _converter() -> Any:
    from pylatexenc import latex2text

    context = latex2text.get_default_latex_context_db()
    # text set in math keeps its words: \texttt{generation} -> "generation", not ""
    keep = [latex2text.MacroTextSpec(name, simplify_repl="%(1)s") for name in ("texttt", "text", "textsf")]
    # pylatexenc knows \neq but not its short form \ne, which it dropped: "p_A \ne p_B" read "p_Ap_B"
    keep.append(latex2text.MacroTextSpec("ne", simplify_repl="≠"))
    context.add_context_category("citewise-keep", macros=keep, prepend=True)
    return latex2text.LatexNodes2Text(math_mode="text", latex_context=context)


def formula_text(latex: str) -> str:
    """The formula as a reader would write it in text.

    `PLACEHOLDER` when it is long or unreadable; "" when its LaTeX is only script marks.
    """
    if _EMPTY.fullmatch(latex):
        return ""
    try:
        text = _converter().latex_to_text(latex)
    except (
        Exception
    ):  # pylatexenc raises its own and IndexError on malformed LaTeX: a formula is not worth a file
        return PLACEHOLDER
    text = " ".join(text.split())
    text = _SCRIPT.sub(_script, text).rstrip("_^").strip()
    if not text or len(text) > LIMIT or "%s" in text:  # "%s": a macro pylatexenc could not fill
        return PLACEHOLDER
    return text


def inline_math(text: str) -> str:
    """Text with its `$...$` and `$$...$$` spans rendered by `formula_text`."""
    return _DOLLARS.sub(lambda match: formula_text(match.group(1) or match.group(2)), text)


def _script(match: re.Match[str]) -> str:
    table = _SUB if match.group(1) == "_" else _SUP
    char = match.group(2)
    converted = char.translate(table)
    if converted != char or not char.isalnum():
        return converted  # "₂", "⁺"; a symbol with no script form stands as itself ("R⊕")
    return match.group(0)  # "a_i" (Unicode has no subscript i)
