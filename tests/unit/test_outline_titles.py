"""Local report section titles read as a person would write them: the authors' own headings where the
passages have one, else noun phrases in the documents' own spelling, never cut-off fragments."""

from __future__ import annotations

from collections import Counter

from citewise.nodes.outline import distinctive_terms, heading, phrases, title_from


def test_a_group_is_titled_by_its_passages_own_heading_without_its_number() -> None:
    group = [
        {"chunk_id": "a", "section": "8 Implications for JWST"},
        {"chunk_id": "b", "section": "8 Implications for JWST"},
        {"chunk_id": "c", "section": "1 Introduction"},
    ]
    assert heading(group) == "Implications for JWST"
    assert (
        heading([{"chunk_id": "a", "section": "1 Introduction"}, {"chunk_id": "b", "section": "Abstract"}])
        == ""
    )
    assert heading([{"chunk_id": "a"}]) == ""


def test_title_terms_are_noun_phrases_in_the_documents_spelling() -> None:
    found = phrases("Observations with the Hubble Space Telescope ruled out clear atmospheres.", set())
    assert "hubble space telescope" in found
    assert not {"clear", "ruled", "chemical"} & found  # adjectives and participles end no title
    assert not any(p.endswith(" around") for p in phrases("the planet orbits around its host star", set()))
    forms: dict[str, Counter] = {}
    groups = [
        [
            "JWST will observe GJ 486b with the Hubble Space Telescope.",
            "The Hubble Space Telescope and JWST.",
        ],
        ["Chemical species such as water were searched for.", "Chemical species and their abundances."],
    ]
    terms = distinctive_terms(groups, set(), forms=forms)
    titles = [title_from(t, forms) for t in terms]
    assert titles[0] in ("Hubble Space Telescope and JWST", "JWST and Hubble Space Telescope"), titles
    assert titles[1].startswith("Chemical species"), titles
