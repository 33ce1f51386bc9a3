"""In-text citation markers, reference-list parsing and citation linking."""

from __future__ import annotations

import pytest

from citewise.index.citations import (
    MAX_RANGE,
    Marker,
    author_year_key,
    find_markers,
    is_reference_heading,
    link_citations,
    readable_entry,
    split_references,
)
from citewise.index.document import BibEntry, Paragraph


def keys_of(text: str) -> list[tuple[str, ...]]:
    return [marker.keys for marker in find_markers(text)]


# --- numeric markers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("as shown [3].", ("3",)),
        ("see [2-5] here", ("2", "3", "4", "5")),
        ("see [2\u20135] here", ("2", "3", "4", "5")),
        ("both [3, 9] agree", ("3", "9")),
        ("mixed [1,3-4] list", ("1", "3", "4")),
        ("repeats [2, 2] once", ("2",)),
    ],
)
def test_numeric_markers_expand_to_keys(text: str, keys: tuple[str, ...]) -> None:
    markers = find_markers(text)
    assert len(markers) == 1
    marker = markers[0]
    assert marker.kind == "numeric"
    assert marker.keys == keys
    assert text[marker.start : marker.end] == marker.text


@pytest.mark.parametrize(
    "text",
    [
        "the value [formula] and [figure] and [table]",
        "published [2021] and [1999]",
        "code x[0] + arr_1[2] + m[3, 4]",
        "empty [] and [a] and [0]",
    ],
)
def test_things_that_are_not_numeric_citations(text: str) -> None:
    assert find_markers(text) == []


def test_ranges_are_capped() -> None:
    (marker,) = find_markers("a huge range [1-200] here")
    assert len(marker.keys) == MAX_RANGE
    assert marker.keys[0] == "1" and marker.keys[-1] == str(MAX_RANGE)


def test_markers_come_in_order_with_offsets() -> None:
    text = "First [2], then (Lee et al., 2021), finally [1, 4]."
    markers = find_markers(text)
    assert [m.text for m in markers] == ["[2]", "(Lee et al., 2021)", "[1, 4]"]
    assert [m.kind for m in markers] == ["numeric", "author_year", "numeric"]
    assert all(text[m.start : m.end] == m.text for m in markers)
    assert markers == sorted(markers, key=lambda m: m.start)


# --- author-year markers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("as argued (Lee et al., 2021).", [("lee2021",)]),
        ("as argued (Lee and Kim, 2020).", [("lee2020",)]),
        ("as argued (Lee & Kim 2020; Park, 2019a).", [("lee2020", "park2019a")]),
        ("Lee et al. (2021) argued", [("lee2021",)]),
        ("Lee and Kim (2020) argued", [("lee2020",)]),
        ("van der Berg (2019, 2020) argued", [("vanderberg2019", "vanderberg2020")]),
        ("as argued (see Müller, 2018)", [("muller2018",)]),
        ("as argued (e.g., Smith, Jones, and Lee, 2020)", [("smith2020",)]),
        ("as argued [Park et al., 2017b]", [("park2017b",)]),
    ],
)
def test_author_year_markers(text: str, keys: list[tuple[str, ...]]) -> None:
    markers = find_markers(text)
    assert [m.keys for m in markers] == keys
    assert all(m.kind == "author_year" for m in markers)


@pytest.mark.parametrize(
    "text",
    [
        "released (January 2020) and (in 2019)",
        "a remark (which matters, 2021 times)",
        "see Table (2021) and the year 2020",
    ],
)
def test_parentheses_that_are_not_author_year_citations(text: str) -> None:
    assert find_markers(text) == []


def test_author_year_key() -> None:
    assert author_year_key("Lee", "2021a") == "lee2021a"
    assert author_year_key("O'Neil-Smith", "2020") == "oneilsmith2020"


def test_marker_is_frozen() -> None:
    marker = Marker(0, 3, "[1]", "numeric", ("1",))
    with pytest.raises(AttributeError):
        marker.start = 2  # type: ignore[misc]


# --- reference lists -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "heading",
    [
        "References",
        "REFERENCES",
        "7 References",
        "7. Bibliography",
        "Works Cited",
        "Literature",
        "References:",
    ],
)
def test_reference_headings(heading: str) -> None:
    assert is_reference_heading(heading)


@pytest.mark.parametrize("heading", ["Related Literature", "References to prior work", "Introduction", ""])
def test_not_reference_headings(heading: str) -> None:
    assert not is_reference_heading(heading)


def test_split_numbered_references_by_section() -> None:
    paragraphs = [
        Paragraph("Body cites [1] and [2].", "1 Introduction"),
        Paragraph("[1] A. Smith. Citing sources. 2020.", "References"),
        Paragraph("[2] B. Jones. Retrieval. 2019.", "References"),
    ]
    body, bibliography = split_references(paragraphs)
    assert body == paragraphs[:1]
    assert bibliography == {
        "1": BibEntry("1", "A. Smith. Citing sources. 2020."),
        "2": BibEntry("2", "B. Jones. Retrieval. 2019."),
    }


def test_split_references_blob_from_a_pdf() -> None:
    blob = "[1] A. Smith. Citing sources. 2020. [2] B. Jones. Retrieval at\nscale. 2019. [3] C. Doe. 2018."
    body, bibliography = split_references([Paragraph("Text.", "Intro"), Paragraph(blob, "8 REFERENCES")])
    assert [p.text for p in body] == ["Text."]
    assert list(bibliography) == ["1", "2", "3"]
    assert bibliography["2"].text == "B. Jones. Retrieval at scale. 2019."


def test_entries_whose_labels_ocr_lost_are_split_off_by_their_author_lists_where_the_count_fits() -> None:
    # IEEE's labels in their own column: Tesseract kept "[1]" and "[4]" and read "[3]" as "Ss"
    listed = [
        "[1] Dixon, Mike J., et al. (2014). The allure of multi-line games. Addiction 109.11, 1920-1928.",
        "Dixon, Mike J., et al. (2018). Dark flow and multiline slot play. J. Gambl. Stud. 34.1, 73-84.",
        "Ss R. S. Sutton and A. G. Barto. (2018). Reinforcement learning: An introduction. MIT press.",
        "[4] Kelly, J.L. (1956). A new interpretation of information rate. Bell Syst. Tech. J. 35, 917-926.",
        "Thorp, J. M., & Waring, W. S. (1962). Modification of metabolism. Nature 194(4832), 948-949.",
    ]
    _, bibliography = split_references(
        [Paragraph(" ".join(listed[:3]) + "\n" + " ".join(listed[3:]), "References")]
    )
    assert list(bibliography) == ["1", "2", "3", "4"]  # the last entry is no longer than the others
    assert bibliography["2"].text == listed[1]
    assert bibliography["3"].text.startswith("R. S. Sutton and A. G. Barto. (2018)")  # "Ss" dropped
    assert bibliography["4"].text == " ".join(listed[3:]).removeprefix("[4] ")
    # one opening for two lost numbers: the entry stays whole, as in any list whose numbers skip
    _, skipped = split_references([Paragraph(" ".join(listed[:2]) + "\n" + listed[3], "References")])
    assert list(skipped) == ["1", "4"]


def test_a_run_together_list_goes_on_past_a_label_ocr_misread_and_splits_the_entry_before_it() -> None:
    # IEEE's journal list read by Tesseract: "[2]" read as "[8]" amid entry 1's words, "[10]" lost, and the
    # year of entry 10 more than 200 characters after its author list
    one = (
        '[1] I. Armeni, Z.-Y. He, and S. Savarese, "3D Scene Graph: A structure for unified semantics," in '
        "Proceedings of the IEEE/CVF International Conference on Computer [8] Vision, 2019, pp. 5664-5673."
    )
    two = 'M. Abate, J. Shi, and L. Carlone, "3D dynamic scene graphs," arXiv preprint, 2020.'
    three = 'S.-C. Wu, J. Wald, and F. Tombari, "SceneGraphFusion: Incremental Scene Graph Prediction," 2021.'
    nine = 'J. Jiao, H. Ye, and M. Liu, "Robust Odometry and Mapping," IEEE Trans. Robotics, pp. 1-10, 2021.'
    ten = (
        'K. Koide, J. Miura, and E. Menegatti, "A portable three-dimensional LIDAR-based system for '
        'long-term and wide-area people behavior measurement," International Journal of Advanced Robotic '
        "Systems, vol. 16, no. 2, Mar. 2019."
    )
    eleven = '[11] R. Dube, A. Cramariuc, and C. Cadena, "SegMap," Int. J. Robotics Research, 2019.'
    blob = f"{one} {two} [3] {three}\n[9] {nine} {ten}\n{eleven}"
    _, bibliography = split_references([Paragraph(blob, "References")])
    assert list(bibliography) == ["1", "2", "3", "9", "10", "11"]
    assert bibliography["2"].text == two and bibliography["3"].text == three
    assert bibliography["10"].text == ten


def test_lost_labels_of_an_ams_style_list_are_found_after_its_review_numbers_and_a_repeated_author() -> None:
    # amsplain ends an entry with its MR number and review ("MR 2802469 (2012h:53097)") and sets a repeated
    # author as a dash, which OCR drops (", On the analyticity ..."); OCR read "P.T." as "PT."
    listed = [
        "[2] PT. Chrusciel and E. Delay, Unique continuation, J. Geom. Phys. 61 (2011), 1249-1257. "
        "MR 2802469 (2012h:53097)",
        "C.W. Misner, K. Thorne, and J.A. Wheeler, Gravitation, Freeman, San Fransisco, 1973. MR 0418833",
        "V. Moncrief, Spacetime symmetries and linearization stability, J. Math. Phys. 16 (1975), 493-498.",
        ", On the analyticity of the solutions of analytic non-linear elliptic systems of partial "
        "differential equations. I. Analyticity in the interior, Amer. J. Math. 80 (1958), 198-218. "
        "MR 106336",
        "[6] A. Friedman, On the regularity of the solutions of non-linear elliptic systems, J. Math. 7.",
    ]
    _, bibliography = split_references([Paragraph(" ".join(listed[:4]) + "\n" + listed[4], "References")])
    assert list(bibliography) == ["2", "3", "4", "5", "6"]
    assert bibliography["3"].text == listed[1] and bibliography["5"].text == listed[3]


def test_a_last_entry_running_on_over_several_is_split_at_their_author_lists() -> None:
    entries = [
        f"[{n}] Author{'abcdefg'[n]}, A. ({2000 + n}). Title number {n}. Journal {n}, 1-10."
        for n in range(1, 5)
    ]
    tail = [f"Writer{c}, B. (201{k}). Another title. Journal, 5-{k}." for k, c in enumerate("xyz")]
    _, bibliography = split_references([Paragraph("\n".join(entries) + " " + " ".join(tail), "References")])
    assert list(bibliography) == ["1", "2", "3", "4", "5", "6", "7"]
    assert bibliography["7"].text == tail[-1]


def test_dotted_numbers_inside_an_entry_do_not_start_a_new_one() -> None:
    lines = "1. Smith, A. Title. Journal, vol. 2. pp. 3-4, 2020.\n2. Jones, B. Other. 2019.\n3) Doe, C. 2018."
    _, bibliography = split_references([Paragraph(lines, "References")])
    assert bibliography["1"].text == "Smith, A. Title. Journal, vol. 2. pp. 3-4, 2020."
    assert bibliography["2"].text == "Jones, B. Other. 2019."
    assert bibliography["3"].text == "Doe, C. 2018."


def test_split_author_year_references_with_wrapped_lines_and_duplicates() -> None:
    entries = (
        "Lee, J., Park, S. 2021. Grounded answers.\n  Journal of Retrieval, 12(3).\n"
        "Lee, J. 2021. Another one.\nPark, S. (2019a). Names and years."
    )
    body, bibliography = split_references([Paragraph("Body."), Paragraph(entries, "Works Cited")])
    assert [p.text for p in body] == ["Body."]
    assert list(bibliography) == ["lee2021", "lee2021b", "park2019a"]
    assert (
        bibliography["lee2021"].text
        == "Lee, J., Park, S. 2021. Grounded answers. Journal of Retrieval, 12(3)."
    )
    assert bibliography["lee2021b"].text == "Lee, J. 2021. Another one."


def test_authors_biographies_filed_under_the_list_are_not_the_list() -> None:
    # the OUP template: bios after the list under a run-in "Author Name." that files them under References
    entries = [
        Paragraph(
            "D. Bahdanau, K. Cho, and Y. Bengio. Neural machine translation. arXiv, 2014.", "References"
        ),
        Paragraph(
            "S. Horvath and K. Raj. DNA methylation-based biomarkers. Nature Reviews, 2018.", "References"
        ),
    ]
    bios = [
        Paragraph(
            "This is sample author biography text. The values provided in the optional argument.",
            "References > Author Name.",
        ),
        Paragraph(
            "This is sample author biography text this is sample author biography text.",
            "References > Author Name.",
        ),
    ]
    body, bibliography = split_references([Paragraph("Body."), *entries, *bios])
    assert [entry.text[:12] for entry in bibliography.values()] == ["D. Bahdanau,", "S. Horvath a"]
    assert body[1:] == bios  # they stay in the body


def test_heading_as_paragraph_text_and_appendix_after_references() -> None:
    paragraphs = [
        Paragraph("Body [1].", "Main"),
        Paragraph("References", "Main"),
        Paragraph("[1] A. Smith. 2020.", "Main"),
        Paragraph("Extra material.", "Appendix A"),
    ]
    body, bibliography = split_references(paragraphs)
    assert [p.text for p in body] == ["Body [1].", "Extra material."]
    assert list(bibliography) == ["1"]


def test_no_reference_section_leaves_paragraphs_alone() -> None:
    paragraphs = [Paragraph("Body [1].", "Intro"), Paragraph("[1] looks like an entry", "Notes")]
    body, bibliography = split_references(paragraphs)
    assert body == paragraphs
    assert bibliography == {}


def test_the_last_reference_section_is_used() -> None:
    paragraphs = [
        Paragraph("[1] first list.", "References"),
        Paragraph("Body [1].", "Discussion"),
        Paragraph("[1] second list. 2020.", "References"),
    ]
    body, bibliography = split_references(paragraphs)
    assert [p.text for p in body] == ["[1] first list.", "Body [1]."]
    assert bibliography["1"].text == "second list. 2020."


# --- linking -------------------------------------------------------------------------------------------


def test_link_numeric_citations_drops_unknown_keys_and_duplicates() -> None:
    bibliography = {key: BibEntry(key, f"entry {key}") for key in ("1", "2", "3")}
    paragraphs = [Paragraph("See [3] and [1-2], then [3] again and [9].", "S"), Paragraph("No markers.", "S")]
    linked = link_citations(paragraphs, bibliography)
    assert linked[0].citations == ("3", "1", "2")
    assert linked[1].citations == ()
    assert linked[0].text == paragraphs[0].text and linked[0].section == "S"


def test_link_author_year_by_key_and_by_surname_and_year() -> None:
    bibliography = {
        "lee2021": BibEntry("lee2021", "Lee, J. 2021. Grounded answers."),
        "7": BibEntry("7", "Park, S. and Kim, H. Names and years. 2019."),
        "8": BibEntry("8", "Park, S. Other work. 2019b."),
    }
    (linked,) = link_citations(
        [Paragraph("Known (Lee et al., 2021); Park and Kim (2019); (Park, 2019b); (Ghost, 2001).")],
        bibliography,
    )
    assert linked.citations == ("lee2021", "7", "8")


def test_link_author_year_when_entries_give_first_names_first() -> None:
    # ACL-style lists: "Elad Amrani, Rami Ben-Ari, ... 2021." cited as (Amrani et al., 2021)
    bibliography = {
        "elad2021": BibEntry("elad2021", "Elad Amrani, Rami Ben-Ari, and Alex Bronstein. 2021. Noise."),
        "yuki2020b": BibEntry("yuki2020b", "Yuki M. Asano and Andrea Vedaldi. 2020b. Self-labelling."),
        "max2021": BibEntry("max2021", "Max Bain and Andrea Vedaldi. 2021. Frozen in time."),
    }
    (linked,) = link_citations(
        [Paragraph("Noise (Amrani et al., 2021); labels (Asano and Vedaldi, 2020b); not (Vedaldi, 2021).")],
        bibliography,
    )
    assert linked.citations == ("elad2021", "yuki2020b")  # Vedaldi is no first author


def test_numeric_markers_glued_to_a_word_of_prose_but_not_to_code() -> None:
    bibliography = {key: BibEntry(key, f"entry {key}") for key in ("1", "2", "8")}
    (linked,) = link_citations(
        [Paragraph("A pathology[1], Lee's[8] study and emerging work[2]; not x[1], item_2[2] or arr2[8].")],
        bibliography,
    )
    assert linked.citations == ("1", "8", "2")


def test_link_citations_replaces_existing_citations() -> None:
    (linked,) = link_citations([Paragraph("Nothing cited.", "", ("old",))], {"old": BibEntry("old", "x")})
    assert linked.citations == ()


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (  # unarXive dropped the journal macro (\aap) and left its field empty
            "Chiavassa, A., & Brogi, M. 2019, , 631, A100, doi: 10.1051/0004-6361/201936566",
            "Chiavassa, A., & Brogi, M. 2019, 631, A100, doi: 10.1051/0004-6361/201936566",
        ),
        ("Doe, J. () 2019, , , Nature, 1", "Doe, J. 2019, Nature, 1"),
        ("Smith, J. 2020, ApJ, 900, 1", "Smith, J. 2020, ApJ, 900, 1"),  # a whole entry is left alone
    ],
)
def test_a_bibliography_entry_is_shown_without_empty_fields(stored: str, shown: str) -> None:
    assert readable_entry(stored) == shown


def test_a_numbered_list_with_no_heading_is_found_and_body_text_set_after_it_stays_body() -> None:
    # APS journals print no heading over the references; the list's first entries may stand at a column's
    # foot with body text set after them (column balancing), and an entry may run on from the last sentence
    paragraphs = [
        Paragraph("Earlier work bounded the zeros [1] and their transport [2, 3].", "I. INTRODUCTION"),
        Paragraph("We close with open problems. [1] S. Byun and J. Lee. Zeros of random", "IV. COMMENTS"),
        Paragraph("polynomials. Trans. Amer. Math. Soc. 375, 2022.", "IV. COMMENTS"),
        Paragraph("[2] S. O'Rourke. A nonlocal transport equation. Proc. AMS 149, 2021.", "IV. COMMENTS"),
        Paragraph(
            "The sharpest general statements for anti-concentration of multi-affine polynomials are those of "
            "Meka, Nguyen and Vu, for which the conjecture lies well beyond the bounds known today; we note "
            "that a positive answer would upgrade the theorem to hold for every exponent at once, and that "
            "the only assumptions used are the conclusions of the two lemmas above, which we state again.",
            "IV. COMMENTS",
        ),
        Paragraph("[3] T. Alazard and O. Lazar. On the dynamics of roots. J. Math. Pures Appl. 162, 2022."),
    ]
    body, bibliography = split_references(paragraphs)
    assert sorted(bibliography) == ["1", "2", "3"]
    assert bibliography["1"].text.startswith("S. Byun and J. Lee. Zeros of random polynomials.")
    assert [p.text[:30] for p in body] == [
        "Earlier work bounded the zeros",
        "We close with open problems.",
        "The sharpest general statement",
    ]


def test_an_unheaded_list_whose_entries_end_on_their_doi() -> None:
    # physics entries often end on a DOI, with no stop: a label after one still goes on with the list (else
    # the entries after it were taken for body text)
    entries = [
        Paragraph(f"[{n}] A. Author{n} et al., Phys. Rev. D {n} (1985), 189-231 doi:10.1103/PhysRevD.{n}.189")
        for n in range(3, 9)
    ]
    paragraphs = [
        Paragraph(
            "The charmed mesons were found long ago [1, 2] and modelled since [3, 4].", "I. INTRODUCTION"
        ),
        Paragraph(
            "[1] J. E. Augustin et al., Phys. Rev. Lett. 33 (1974), 1406 doi:10.1103/PhysRevLett.33.1406 "
            "[2] J. J. Aubert et al., Phys. Rev. Lett. 33 (1974), 1404 doi:10.1103/PhysRevLett.33.1404"
        ),
        *entries,
    ]
    body, bibliography = split_references(paragraphs)
    assert sorted(bibliography, key=int) == [str(n) for n in range(1, 9)]
    assert bibliography["2"].text.endswith("doi:10.1103/PhysRevLett.33.1404")
    assert len(body) == 1


def test_a_lone_bracketed_number_in_the_body_is_no_reference_list() -> None:
    paragraphs = [Paragraph("As shown in [1], the bound holds."), Paragraph("[1] is the usual form.")]
    body, bibliography = split_references(paragraphs)
    assert bibliography == {} and body == paragraphs


@pytest.mark.parametrize(
    "heading",
    [
        "Referências",
        "REFERÊNCIAS BIBLIOGRÁFICAS",
        "Referencias",
        "Bibliografía",
        "Riferimenti bibliografici",
        "Références",
        "Literaturverzeichnis",
        "Bibliographie",
        "5 Bibliografia",
    ],
)
def test_reference_headings_in_other_languages(heading: str) -> None:
    assert is_reference_heading(heading)


def test_an_abnt_list_keys_its_entries_by_their_own_year_and_its_citations_by_their_place() -> None:
    # abntex2's sample article: surnames in capitals, a standard's edition before the entry's year, the
    # author's 2015 entries printed without their letters, and co-authors parted by semicolons in citations
    paragraphs = [
        Paragraph(
            "See the class manual (ARAUJO, 2015a), the package's (ARAUJO, 2015c) and memoir's "
            "(WILSON; MADSEN, 2010).",
            "1 Introdução",
        ),
        Paragraph(
            "ARAUJO, L. C. A classe abntex2: compatível com as normas ABNT NBR 14724:2011. [S.l.], 2015.",
            "Referências",
        ),
        Paragraph("ARAUJO, L. C. Como customizar o abnTeX2. 2015. Wiki do abnTeX2.", "Referências"),
        Paragraph("ARAUJO, L. C. O pacote abntex2cite: ABNT NBR 10520:2002. [S.l.], 2015.", "Referências"),
        Paragraph("WILSON, P.; MADSEN, L. The Memoir Class. Normandy Park, WA, 2010.", "Referências"),
    ]
    body, bibliography = split_references(paragraphs)
    assert list(bibliography) == ["araujo2015", "araujo2015b", "araujo2015c", "wilson2010"]
    [linked] = link_citations(body, bibliography)
    assert linked.citations == ("araujo2015", "araujo2015c", "wilson2010")
