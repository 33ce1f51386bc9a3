"""A report's question read into its parts: each part gets a section headed by it and chosen by it."""

from __future__ import annotations

import pytest

from citewise.core.questions import ReportPart, report_parts

SUBMIT = "tell authors to submit their papers"


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        (
            "Give an overview of how GJ 486b was observed and what was found",
            [
                ReportPart("How GJ 486b was observed", "how GJ 486b was observed"),
                ReportPart("What was found", "what was found (GJ 486b)"),  # the subject the part leaves out
            ],
        ),
        (
            "Compare how the MNRAS and AIAA guides tell authors to submit their papers",
            [
                ReportPart("The MNRAS guide", f"how the MNRAS guide {SUBMIT}", "MNRAS"),
                ReportPart("The AIAA guide", f"how the AIAA guide {SUBMIT}", "AIAA"),
            ],
        ),
        (
            "Compare how the elsarticle and TUGboat classes are installed",
            [
                ReportPart("The elsarticle class", "how the elsarticle class are installed", "elsarticle"),
                ReportPart("The TUGboat class", "how the TUGboat class are installed", "TUGboat"),
            ],
        ),
        (
            "Compare Chemformer and LocalRetro on top-1 accuracy",  # what both are compared on, for both
            [
                ReportPart("Chemformer", "Chemformer on top-1 accuracy", "Chemformer"),
                ReportPart("LocalRetro", "LocalRetro on top-1 accuracy", "LocalRetro"),
            ],
        ),
        # one part: planned from the evidence instead
        ("Give an overview of how vaccines train the immune system", []),
        ("Write a report on how the Moon and the Sun shape ocean tides", []),  # "and" inside one part
        ("Compare how cats and dogs sleep", []),
    ],
)
def test_report_parts(question: str, parts: list[ReportPart]) -> None:
    assert report_parts(question) == parts
