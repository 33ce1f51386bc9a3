"""Local answers that answer the question: what it asks, which sentences answer it, in what order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from citewise.core import questions
from citewise.core.evidence import NO_ANSWER
from citewise.core.text import user_turns
from citewise.core.writing import answering_sentences, answers_nothing
from citewise.index.embeddings import Embedder
from citewise.nodes.answer import local_follow_up

BAIKAL = (
    "Lake Baikal is a rift lake in southern Siberia, Russia. It is among the clearest lakes in the world and "
    "is considered the oldest, at 25 million years. With a maximum depth of 1,642 metres, Baikal is the "
    "world's deepest lake. The lake holds about 23 percent of the world's fresh surface water."
)
MILL = (
    "The Baikalsk Pulp and Paper Mill was built on the southern shore in 1966. It was closed in 2013. "
    "For decades its waste water had polluted the lake near the town."
)


@dataclass
class Embedded:
    """All that answering_sentences asks of an index: `embed` (the index remembers), `tokens` and `idf`."""

    embedder: Embedder

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed(texts)

    def tokens(self, texts: list[str]) -> list[list[str]]:
        """Each text's terms: local mode's stems (an index reads them with BM25's stemmer)."""
        return [sorted(questions.stems(text)) for text in texts]

    def idf(self, terms: list[str]) -> list[float]:
        """Every term weighs the same (an index weighs them by their idf over its paragraphs)."""
        return [1.0] * len(terms)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When was the paper mill closed?", "date"),
        ("In which year did the mill open?", "date"),
        ("How deep is Lake Baikal?", "number"),
        ("How many rovers landed on Mars?", "number"),
        ("Who designed Demon Dice?", "person"),
        ("Where did Perseverance land?", "place"),
        ("Is Lake Baikal older than Lake Tanganyika?", "yesno"),
        ("What does the second-generation HTRF donor improve?", "description"),
    ],
)
def test_the_kind_of_answer_a_question_wants(question: str, kind: str) -> None:
    assert questions.read(question).kind == kind


def test_a_question_with_parts_is_split_into_them() -> None:
    parts = questions.parts("When was the paper mill closed, and what did it cost to build?")
    assert [p.text for p in parts] == ["When was the paper mill closed", "what did it cost to build"]
    assert [p.kind for p in parts] == ["date", "description"]
    assert len(questions.parts("Compare vaccines and antibiotics")) == 1


def test_a_follow_ups_bracketed_subject_is_no_part_of_it() -> None:
    # the standalone follow-up names what it is about in brackets: a sentence that names GJ 486b answers
    # nothing of it (as a part, "(GJ 486b)" made any such sentence answer every follow-up on the planet)
    parts = questions.parts("And what wavelengths does IGRINS cover? (GJ 486b)")
    assert len(parts) == 1 and "(GJ 486b)" in parts[0].text
    two = questions.parts("What did it cost? (GJ 486b) And when was it built?")
    assert [p.text for p in two] == ["What did it cost? (GJ 486b)", "when was it built"]


@pytest.mark.parametrize(
    ("sentence", "refers"),
    [("It was closed in 2013.", True), ("They landed in 2021.", True), ("The mill closed in 2013.", False)],
)
def test_a_sentence_that_needs_its_antecedent(sentence: str, refers: bool) -> None:
    assert questions.refers_back(sentence) is refers


def test_the_sentence_that_answers_comes_first(embedder: Embedder) -> None:
    chosen, missing = answering_sentences(
        Embedded(embedder), "How deep is Lake Baikal?", [("E1", BAIKAL[:60], BAIKAL)]
    )
    assert chosen[0] == ("E1", "With a maximum depth of 1,642 metres, Baikal is the world's deepest lake.")
    assert len(chosen) <= 2 and missing == []


def test_a_short_answer_survives_with_its_antecedent(embedder: Embedder) -> None:
    chunk = "The Baikalsk Pulp and Paper Mill was built on the southern shore in 1966."  # the kept chunk
    chosen, _ = answering_sentences(
        Embedded(embedder), "When was the paper mill closed?", [("E1", chunk, MILL)]
    )
    texts = [text for _, text in chosen]
    assert "It was closed in 2013." in texts  # a sentence of the kept chunk's paragraph, not the chunk
    assert texts.index(chunk) == texts.index("It was closed in 2013.") - 1  # "It" needs the mill sentence
    assert not any("polluted" in text for text in texts)  # stops once the question is covered


def test_the_part_the_documents_do_not_answer_is_named(embedder: Embedder) -> None:
    chosen, missing = answering_sentences(
        Embedded(embedder),
        "When was the paper mill closed, and how many workers did it employ?",
        [("E1", MILL, MILL)],
    )
    assert "It was closed in 2013." in [text for _, text in chosen]
    assert missing == ["how many workers did it employ"]


def test_a_follow_up_answered_in_other_words_is_not_named_unanswered(embedder: Embedder) -> None:
    viewer = (
        "FieldView is a web viewer for simulation results. FieldView is licensed under the GNU General "
        "Public License v3.0 and is compatible with GNU/Linux and Windows."
    )
    earlier = ("What is FieldView?", "FieldView is a web viewer for simulation results [1].")
    chosen, missing = answering_sentences(
        Embedded(embedder), "Under which license is it released?", [("E1", viewer, viewer)], earlier=earlier
    )
    assert any("GNU General Public License" in text for _, text in chosen), chosen
    assert missing == []  # "licensed under" answers it without the word "released"


def test_nothing_to_choose_from_gives_nothing(embedder: Embedder) -> None:
    assert answering_sentences(Embedded(embedder), "How deep is Lake Baikal?", []) == ([], [])


def test_a_sentence_is_cited_to_the_chunk_that_holds_it() -> None:
    from citewise.core.writing import paragraph_candidates

    first, second = MILL.split(". ", 1)[0] + ".", "It was closed in 2013."
    candidates = paragraph_candidates([("E1", first, MILL), ("E2", second, MILL)])
    labels = {c.text: c.label for c in candidates}
    assert labels[first] == "E1" and labels[second] == "E2"  # not E1, whose paragraph listed it first


SONG = (
    '"Death of Samantha" is a song written by Yoko Ono and first released on her 1973 album "Approximately '
    'Infinite Universe". It was also released as a single, backed by "Yang Yang".'
)
ONO = (
    "Yoko Ono is a Japanese multimedia artist, singer and songwriter. She is known for her work in "
    "performance art and filmmaking, and she was the second wife of John Lennon."
)


def test_a_document_the_answer_names_brings_its_best_sentence(embedder: Embedder) -> None:
    question = 'The writer of the song "Death of Samantha" was the second wife of what singer?'
    sources = [("E1", SONG, SONG), ("E2", ONO, ONO)]
    titles = {"E1": "Death of Samantha (song)", "E2": "Yoko Ono"}
    chosen, _ = answering_sentences(Embedded(embedder), question, sources, titles=titles)
    texts = [text for _, text in chosen]
    assert texts[0].startswith('"Death of Samantha" is a song written by Yoko Ono')
    assert any("second wife of John Lennon" in text for label, text in chosen if label == "E2")
    # a title no chosen sentence names brings nothing
    others = {"E1": "Death of Samantha (song)", "E2": "Sean Lennon"}
    plain, _ = answering_sentences(Embedded(embedder), question, [("E1", SONG, SONG)], titles=others)
    assert all(label == "E1" for label, _ in plain)


def test_a_sentence_two_copies_of_a_document_hold_is_said_once(embedder: Embedder) -> None:
    chosen, _ = answering_sentences(
        Embedded(embedder), "When was the paper mill closed?", [("E1", MILL, MILL), ("E2", MILL[:70], MILL)]
    )
    texts = [" ".join(text.lower().split()) for _, text in chosen]
    assert len(texts) == len(set(texts)) and "it was closed in 2013." in texts


def test_a_sentence_that_opens_with_it_follows_its_antecedent_said_earlier() -> None:
    from citewise.core.writing import Candidate, spoken

    song = Candidate("E1", '"Dear Brother" is a duet by Hank and Audrey Williams.', "", False)
    audrey = Candidate("E2", "Audrey Williams was the first wife of Hank Williams.", "", False)
    released = Candidate("E3", "It was released by MGM Records in 1950.", song.text, True)
    again = Candidate("E4", song.text, "", False)
    assert [label for label, _ in spoken([song, audrey, released, again])] == ["E1", "E3", "E2"]
    assert spoken([released])[0] == ("E3", song.text)  # the antecedent first, under the label that holds it


PULP = "The Baikalsk Pulp and Paper Mill made bleached pulp for aircraft tyres."
SIBERIA = "Pulp mills across Siberia sell their pulp to paper makers in China."


def test_another_document_sharing_only_a_common_word_of_the_question_is_left_out(embedder: Embedder) -> None:
    # the mill's sentence leaves "sell" open; another document's "sell" is about other mills: an open
    # common word counts only in a document already chosen from (an open identifier anywhere). Before this
    # rule the Siberian mills' sentence was added
    question = "What did the Baikalsk mill make and sell?"
    sources = [("E1", PULP, PULP), ("E2", SIBERIA, SIBERIA)]
    titles = {"E1": "Baikalsk Pulp and Paper Mill", "E2": "Pulp industry in Siberia"}
    chosen, _ = answering_sentences(Embedded(embedder), question, sources, titles=titles)
    assert [label for label, _ in chosen] == ["E1"]


def test_a_pronoun_sentence_is_not_credited_with_its_antecedents_words() -> None:
    from citewise.core.writing import Candidate, pick

    question = questions.read("Which painter spoke at the Brisbane Institute in Queensland?")
    speaker = Candidate("E1", "Jeffrey Smart spoke at the Brisbane Institute.", "", False)
    forum = Candidate("E2", "The Brisbane Institute is a forum in Queensland.", "", False)
    pronoun = Candidate("E2", "It invites speakers from every field.", forum.text, True)
    for candidate, score in ((speaker, 1.0), (forum, 0.8), (pronoun, 0.9)):
        candidate.score = score
        candidate.own_terms = frozenset(questions.stems(candidate.text))
        candidate.terms = candidate.own_terms | questions.stems(candidate.previous)
    documents = {"E1": "Jeffrey Smart", "E2": "Brisbane Institute"}
    # "Queensland" is left open; the pronoun sentence holds it only through its antecedent, which says it
    # alone (before, the pronoun sentence won on its higher score and brought the antecedent: two sentences)
    assert pick(question, [speaker, forum, pronoun], np.eye(3, dtype=np.float32), documents) == [0, 1]


def test_a_follow_up_is_read_with_the_question_before_it() -> None:
    earlier = "What does the spectrum of GJ 486b reveal about its atmosphere?"
    read = questions.follow_up(earlier, "And GJ 1132b?")
    assert read.kind == "finding"  # it asks nothing of its own form: the earlier question's kind
    assert {"1132b", "486b", "spectr"} <= read.terms
    assert "1132b" in read.key_terms and "486b" not in read.key_terms  # its own words are the point
    assert questions.follow_up("Which telescope observed GJ 486b?", "When was it built?").kind == "date"
    assert questions.standalone(["Which telescope observed GJ 486b?"], "When was it built?") == (
        "When was GJ 486b built?"  # its reference resolved, never the question before glued to it
    )
    turn = questions.read_turn(["Which telescope observed GJ 486b?", "When was it built?"])
    assert turn.search == "Which telescope observed GJ 486b? When was it built?"  # what search reads
    assert questions.standalone(["Which telescope observed GJ 486b?"], "How deep is Lake Baikal?") == (
        "How deep is Lake Baikal?"
    )


def test_a_new_subject_with_its_own_pronoun_stands_alone() -> None:
    asked = [
        "What is the boiling point of tungsten?",
        "What does the spectrum of GJ 486b reveal about its atmosphere?",
    ]
    turn = questions.read_turn(asked)
    assert (turn.question, turn.earlier) == (asked[1], "")  # "its" is GJ 486b's: nothing of tungsten carried
    assert (
        questions.read_turn(  # the thread names a subject: the pronoun is the thread's
            ["What is GJ 1132b's radius?", "What did Hubble transit data suggest about its atmosphere?"]
        ).question
        == "What did Hubble transit data suggest about GJ 1132b's atmosphere?"
    )
    assert questions.read_turn(  # the pronoun before the name: a follow-up
        [
            "Which bug localization tool does the review recommend?",
            "How many settings does its extended BugLocator give?",
        ]
    ).earlier


def conversation(*asked: str) -> list[str]:
    """The standalone question of each turn."""
    return [questions.read_turn(asked[: n + 1]).question for n in range(len(asked))]


def test_the_thread_s_subject_carries_into_follow_ups_more_than_one_turn_deep() -> None:
    assert conversation(
        "Which telescopes were used to observe the transits of GJ 486b?",
        "When was it built?",
        "And its radius?",  # two turns on: still GJ 486b (it got GJ 1132b's radius, the turn before lost it)
        "And that one's mass?",
    ) == [
        "Which telescopes were used to observe the transits of GJ 486b?",
        "When was GJ 486b built?",
        "And GJ 486b's radius?",
        "And that one's mass? (GJ 486b's radius)",  # "that one": the question before says what
    ]
    asked = [
        "Which telescopes were used to observe the transits of GJ 486b?",
        "When was it built?",
        "And its radius?",
    ]
    assert questions.read_turn(asked).search == "When was it built? (GJ 486b) And its radius?"


def test_a_follow_up_naming_another_thing_asks_the_last_question_about_it() -> None:
    assert conversation(
        "What is the equilibrium temperature of GJ 486b?", "And GJ 1132b?", "And its radius?"
    ) == [
        "What is the equilibrium temperature of GJ 486b?",
        "What is the equilibrium temperature of GJ 1132b?",
        "And GJ 1132b's radius?",  # the subject moved
    ]
    assert (
        conversation(
            "What resolving power did the IGRINS spectrograph have?",
            "How many SYSREM iterations were applied to its data?",
            "What about SPIRou?",
        )[2]
        == "How many SYSREM iterations were applied to SPIRou's data?"
    )  # the question before, about it


def test_a_pronoun_after_a_question_for_a_thing_means_the_thing_the_answer_named() -> None:
    asked = [
        "Which single-step retrosynthesis models were compared?",
        "Which one had the best top-1 accuracy?",
        "And its top-50 accuracy?",
        "And its solvability?",
        "What about LocalRetro?",
    ]
    replies = [
        "Chemformer, LocalRetro and MHNreact were compared [1].",
        "For top-1 accuracy, Chemformer outperforms the other models [1]. LocalRetro follows [2].",
        "AZF gives 78.1% accuracy at top-50 [1].",
        "High solvability does not imply many solved routes [1].",
    ]
    read = [questions.read_turn(asked[: n + 1], replies) for n in range(len(asked))]
    assert [turn.question for turn in read[2:]] == [
        "And Chemformer's top-50 accuracy?",
        "And Chemformer's solvability?",  # it stays the subject
        "And LocalRetro's solvability?",  # a switch replaces it
    ]
    assert [turn.search for turn in read[2:]] == [
        "Which one had the best top-1 accuracy? (Chemformer) And its top-50 accuracy?",
        "And its top-50 accuracy? (Chemformer) And its solvability?",
        "And its top-50 accuracy? (LocalRetro) And its solvability?",
    ]
    assert questions.own_search(read[2]) == "And its top-50 accuracy? Chemformer"
    assert [turn.question for turn in read[:2]] == asked[:2]  # no pronoun: nothing carried


def test_a_pronoun_keeps_the_thing_the_question_named_or_an_honest_no_answer_names_nothing() -> None:
    asked = ["Which telescopes were used to observe the transits of GJ 486b?", "And its temperature?"]
    named = ["The first transit was observed with the IRD instrument on the Subaru telescope [1].", ""]
    assert questions.read_turn(asked, named).question == "And GJ 486b's temperature?"  # not Subaru's
    asked = ["Which one was the best?", "And its accuracy?"]
    honest = [f"{NO_ANSWER} The closest passages are below; they do not answer it.", ""]
    assert questions.read_turn(asked, honest).question == "And its accuracy? (one best)"
    assert (
        questions.read_turn(asked).question == "And its accuracy? (one best)"
    )  # no replies known: as before
    assert questions.read_turn(asked, honest).search == " ".join(asked)


def test_the_user_s_turns_pair_each_question_with_its_reply() -> None:
    messages = [
        HumanMessage("Which one was the best?"),
        AIMessage("Chemformer [1]."),
        HumanMessage("And its accuracy?"),
    ]
    assert user_turns(messages) == (["Which one was the best?", "And its accuracy?"], ["Chemformer [1].", ""])


def test_a_new_subject_mid_thread_and_questions_that_stand_alone() -> None:
    assert conversation(
        "What is the mass of GJ 486b?",
        "Which code computed the model spectra of petitRADTRANS?",  # names its own subject
        "How many layers did it use?",
        "How deep is Lake Baikal?",  # no reference back: stands alone
        "What is the melting point of tungsten?",
        "And its density?",
        "How hard is it?",  # a subject with no name: read with the question before it
    ) == [
        "What is the mass of GJ 486b?",
        "Which code computed the model spectra of petitRADTRANS?",
        "How many layers did petitRADTRANS use?",
        "How deep is Lake Baikal?",
        "What is the melting point of tungsten?",
        "And its density? (melting point tungsten)",  # a subject with no name: the words before say it
        "How hard is it? (density melting point tungsten)",
    ]
    assert questions.entities("Which telescopes observed LHS 3844 b and the J band?") == ["LHS 3844 b"]


def test_a_follow_up_does_not_say_the_earlier_answer_again(embedder: Embedder) -> None:
    earlier = (
        "How deep is Lake Baikal?",
        "With a maximum depth of 1,642 metres, Baikal is the world's deepest lake [1].",
    )
    chosen, missing = answering_sentences(
        Embedded(embedder), "And how old is it?", [("E1", BAIKAL[:60], BAIKAL)], earlier=earlier
    )
    texts = [text for _, text in chosen]
    assert any("25 million years" in text for text in texts), texts
    assert not any("1,642 metres" in text for text in texts) and missing == []


def test_a_follow_up_no_sentence_adds_to_gets_nothing(embedder: Embedder) -> None:
    earlier = ("When was the paper mill closed?", "It was closed in 2013 [1].")
    chosen, missing = answering_sentences(
        Embedded(embedder), "Who owned it?", [("E1", MILL[:60], MILL)], earlier=earlier
    )
    assert chosen == [] and missing == []  # nothing about owners: no answer, not the mill's dates again


def test_a_follow_up_the_earlier_answer_already_answered_gets_that_sentence_again(embedder: Embedder) -> None:
    camera = (
        "For the July 2019 eclipse, we mounted the camera on a Stellarvue 70 mm f/6 refracting telescope "
        "behind a bandpass filter centred at 734 nm with 46 nm width. The camera was read out at 10 frames "
        "per second."
    )
    earlier = (
        "What telescope was the camera mounted on?",
        "For the July 2019 eclipse, we mounted the camera on a Stellarvue 70 mm f/6 refracting telescope "
        "behind a bandpass filter centred at 734 nm with 46 nm width [1].",
    )
    chosen, _ = answering_sentences(
        Embedded(embedder), "And the filter?", [("E1", camera[:60], camera)], earlier=earlier
    )
    # nothing else names a filter: the sentence said before answers it, not "not in your documents"
    assert [text for _, text in chosen] == [camera.split(". The camera")[0] + "."]


def test_a_follow_up_that_names_nothing_is_not_answered_from_another_document(
    embedder: Embedder,
) -> None:
    magnets = (
        "The field was assumed to come from two bar magnets with a remanence of 1.3 T. "
        "The distance between the two magnets was taken as 3.6 mm."
    )
    other = "With DYST it is far less likely for this race condition to appear for isolated hosts."
    sources = [("E1", magnets, magnets), ("E2", other, other)]
    titles = {"E1": "Laser cooling in a hybrid trap", "E2": "A covert channel"}
    earlier = (
        "What remanence did the magnets have?",
        "The field was assumed to come from two bar magnets with a remanence of 1.3 T [1].",
    )
    chosen, _ = answering_sentences(
        Embedded(embedder), "And how far apart are they?", sources, titles=titles, earlier=earlier
    )
    assert chosen == []  # the other paper's "far less likely" is no answer: nothing, said as nothing
    named, _ = answering_sentences(
        Embedded(embedder), "And with DYST?", sources, titles=titles, earlier=earlier
    )
    assert "E2" in [label for label, _ in named]  # a follow-up naming another thing may go to its document


def test_the_answer_stage_knows_a_local_follow_up_and_what_was_said_before() -> None:
    first, follow = "Which telescope observed GJ 486b?", "When was it built?"
    said = "The first transit was observed with the Subaru telescope [1]."
    state = {
        "messages": [HumanMessage(first), AIMessage(said), HumanMessage(follow)],
        "question": "When was GJ 486b built?",  # as condense reads it without a model
    }
    assert local_follow_up(state) == (follow, first, said)
    assert local_follow_up(state | {"question": follow}) is None  # a model made it standalone
    alone = {"messages": [HumanMessage(first)], "question": first}
    assert local_follow_up(alone) is None
    listed = f"{NO_ANSWER} The closest passages are below; they do not answer it."
    abstained = state | {"messages": [HumanMessage(first), AIMessage(listed), HumanMessage(follow)]}
    assert local_follow_up(abstained) == (follow, first, "")  # passages listed as not answering: not said


def test_a_sentence_with_a_bracketed_placeholder_is_known_as_said(embedder: Embedder) -> None:
    planet = (
        "GJ 486b has a radius of 1.3 R[formula] and a mass of 2.8 M[formula] [74]. It orbits in 1.5 d. "
        "The mass was measured from the star's radial velocities."
    )
    earlier = (
        "How large is GJ 486b?",
        "GJ 486b has a radius of 1.3 R[formula] and a mass of 2.8 M[formula] (ref. 74) [1].",  # as shown
    )
    chosen, _ = answering_sentences(
        Embedded(embedder), "And what is its mass?", [("E1", planet, planet)], earlier=earlier
    )
    # "[formula]" is no marker, and the answer showed "[74]" as "(ref. 74)": said, so not said again while
    # another sentence on the mass is new
    assert [text for _, text in chosen] == ["The mass was measured from the star's radial velocities."]


@pytest.mark.parametrize(
    ("sentence", "new"),
    [
        ("In an applied field of 90 mT, the velocity increases to 16 km/s near k=5 rad/μm.", True),
        ("We calculate the SW group velocity for μ₀ H=90 mT [blue line in a figure (c)].", False),
        ("The group velocity at 90 mT is shown in figure 3 and discussed in Section 4.2 [12], [13].", False),
        ("The velocity (ref. 74) at 90 mT is the highest measured.", False),
    ],
)
def test_a_value_the_question_does_not_hold_is_new(sentence: str, new: bool) -> None:
    assert questions.new_numbers(sentence, "What group velocity do the spin waves reach at 90 mT?") is new


@pytest.mark.parametrize(
    ("sentence", "says"),
    [
        ("For top-1 accuracy, Chemformer outperforms the other models, with 54.7%.", True),  # no superlative
        ("Chemformer reaches the highest top-1 accuracy of the models tested.", True),
        ("Surprisingly, Chemformer delivers the lowest accuracy in the top-50 of the models tested.", False),
        ("Chemformer is the hardest model to train.", True),  # a superlative with no direction read here
        ("Chemformer reaches a top-1 accuracy of 54.7%.", False),
    ],
)
def test_a_superlative_answers_in_the_direction_asked(sentence: str, says: bool) -> None:
    assert questions.says_most(sentence, "Which one had the best top-1 accuracy?") is says


def test_a_superlative_question_without_a_direction_takes_either() -> None:
    asked = "Which mutation operator was the hardest for the RoBERTa detector to detect?"
    assert questions.says_most("The most inaccurate operator overall was always antonyms.", asked)
    assert questions.says_most("Antonyms gave the lowest detection accuracy.", asked)


def test_a_count_of_the_asked_thing_names_none_of_them() -> None:
    asked = questions.read("Which telescopes were used to observe the transits of GJ 486b?")
    assert not questions.has_kind("We used three different telescopes to observe three transits.", asked)
    assert questions.has_kind("The first transit was observed with the 8.2 meter Subaru telescope.", asked)
    assert questions.has_kind("The second was observed with telescope 2 of the array.", asked)


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("Which instruments observed the transits of GJ 486b?", "instru"),  # the subject, its verb after it
        ("What aircraft carried AIR-Spec during the eclipse flights?", "aircra"),
        ("Which model predicts ESG ratings best?", "model"),
        ("Which telescopes were used to observe the transits?", "telesc"),  # up to its verb, as before
        ("What happens next?", ""),  # no thing asked for: a description
        ("What happens to their accuracy after 8-bit quantization?", ""),
        ("What causes the broadening?", ""),
    ],
)
def test_a_which_question_whose_subject_is_the_asked_thing_wants_one_named(question: str, asked: str) -> None:
    read = questions.read(question)
    assert read.asked == asked and (read.kind == "named") == bool(asked)
    if asked == "instru":
        assert not questions.has_kind("We used three different instruments to observe three transits.", read)
        assert questions.has_kind("The first transit was observed with the IRD instrument on Subaru.", read)


@pytest.mark.parametrize(
    ("question", "measured", "answer", "elsewhere"),
    [
        (
            "How many companies did they get ratings for?",
            "compan",
            "We retrieved ratings for all US companies rated for 2018-2020, in total for 3,343 companies.",
            "All three ratings have values between 0 to 100 (the higher, the better the company).",
        ),
        (
            "How large are the Zeeman splittings the ion sees?",
            "splitt",
            "The ion samples field strengths that cause Zeeman splittings of up to 120 MHz.",
            "Zeeman splittings across the whole ion trajectory and misalignments of the two trap centres.",
        ),
        (
            "How many epochs were used?",  # "epochs" and "epoch" alike
            "epoch",
            "Each model was trained for one epoch.",
            "We trained 4 models and kept the epochs short.",
        ),
        ("How many SYSREM iterations were applied?", "iterat", "We applied 5 SYSREM iterations.", ""),
        (  # the question's own number is no value of it
            "How many Class 0 protostars were studied?",
            "protos",
            "We collected observations of six Class 0 protostars carried out with ALMA.",
            "Our aim is to characterize the dust emission in the inner envelopes of Class 0 protostars.",
        ),
        ("How much does it cost?", "", "It costs 5 dollars.", ""),  # no thing named: any number answers
        (  # an amount of a mass noun: the noun; of time, a span of it
            "How much compute time did all their simulations take?",
            "time",
            "The simulations for all experiments have taken approximately 600 hours across both machines.",
            "The framework used to define and simulate the circuits is Qiskit 0.39.",
        ),
    ],
)
def test_a_how_many_question_wants_the_number_of_the_thing_it_measures(
    question: str, measured: str, answer: str, elsewhere: str
) -> None:
    read = questions.read(question)
    assert read.kind == "number" and read.asked == measured
    assert questions.has_kind(answer, read)
    if elsewhere:  # a number, but not of the thing measured
        assert not questions.has_kind(elsewhere, read)


def test_a_piece_of_a_sentence_a_display_broke_off_is_no_candidate() -> None:
    from citewise.core.writing import paragraph_candidates

    pieces = [  # a paper's paragraph cut by display equations, as unarXive gives it
        "The radiative decay widths are computed in the modified relativistic quark model.",
        "and the magnetic transition width is,",
        "where m is the mass of the light quark in the model.",
    ]
    texts = [c.text for c in paragraph_candidates([(f"E{n}", p, p) for n, p in enumerate(pieces, 1)])]
    assert not any(t.startswith("and the magnetic") for t in texts)
    assert any(t.startswith("where m is the mass") for t in texts)  # it opens mid-sentence, but ends one


def test_an_answer_that_answers_no_part_and_holds_nothing_asked_for_is_no_answer() -> None:
    question = "How many nodes does that cluster have?"
    background = "The codes were run on the UMass Dartmouth Carnie Cluster employing Intel Xeon Silver CPUs."
    assert answers_nothing(question, [("E1", background)], [question.rstrip("?")])
    assert not answers_nothing(question, [("E1", "The cluster has 64 nodes.")], [question.rstrip("?")])
    assert not answers_nothing(question, [("E1", background)], [])  # its part answered: said
    two = "How many nodes does it have, and who built it?"  # one part unanswered: said, the gap noted
    assert not answers_nothing(two, [("E1", background)], ["How many nodes does it have"])


def test_a_follow_up_is_searched_in_its_own_words_with_the_thread_s_subject() -> None:
    asked = ["What does the DYST covert channel send as its signal?", "Which hash function does it use?"]
    assert questions.own_search(questions.read_turn(asked)) == "Which hash function does it use? DYST"
    assert questions.own_search(questions.read_turn(asked[:1])) == ""  # stands alone: nothing more
    switched = ["What is the equilibrium temperature of GJ 486b?", "And GJ 1132b?"]
    assert questions.own_search(questions.read_turn(switched)) == ""  # asked as the question before, anew


def test_a_follow_up_is_answered_by_the_value_it_asks_for(embedder: Embedder) -> None:
    waves = (
        "In a small magnetic field of 30 mT, the decay length of spin waves is about 10 micrometres. The "
        "dispersion measured over a large wave vector regime is of fundamental importance as it allows one "
        "to quantify the exchange stiffness length with large precision. Covering a large regime of wave "
        "vectors, we find the exchange stiffness length to be relatively short and only about 1 Å."
    )
    earlier = (
        "How far do spin waves travel in hematite at a field of 30 mT?",
        "In a small magnetic field of 30 mT, the decay length of spin waves is about 10 micrometres [1].",
    )
    chosen, _ = answering_sentences(
        Embedded(embedder), "And its exchange stiffness length?", [("E1", waves, waves)], earlier=earlier
    )
    assert "about 1 Å" in chosen[0][1], chosen  # the value first, not the sentence that only names it


@pytest.mark.parametrize(
    ("sentence", "leans"),
    [
        ("These models assumed an isothermal profile at the equilibrium temperature: 700 K.", True),
        ("This method needs no oracle function.", True),
        ("He was Leader of the Opposition from 1920.", False),  # leans on the paragraph's subject only
        ("It orbits its star in 1.5 days.", False),
        ("Thesis defences are public.", False),
    ],
)
def test_a_sentence_opening_with_this_or_these_leans_on_the_sentence_before(
    sentence: str, leans: bool
) -> None:
    assert (questions.DEMONSTRATIVE_OPENING.match(sentence) is not None) is leans


def test_a_question_for_an_age_a_duration_a_frequency_or_a_price_needs_a_sentence_that_says_one() -> None:
    old = questions.focus("How old is the host star?")
    assert old is not None and old.search("The host star is about 8 Gyr old.")
    assert not old.search("55 Cancri e orbits its G8V host star in 17 hours.")  # the star, no age
    took = questions.focus(
        "Which planner? (Retro*) How long did its searches take?"
    )  # a follow-up's last part
    assert (
        took is not None and took.search("Retro* needed 18737 sec in total.") and not took.search("It ran.")
    )
    glued = questions.focus("How long did that training take? (overall accuracy mutation detector)")
    assert glued is not None and glued.search("Each epoch took 13 hours.")  # the subject after it, too
    often = questions.focus("How often did a citation point at the wrong passage?")
    assert often is not None and not often.search("Citations point at passages.")
    for said in ("updated every 15 minutes", "one citation in five", "in 3 of 10 answers", "12% of them"):
        assert often.search(said), said  # a frequency, or a share
    assert questions.focus("How much did the camera cost?").search("It cost $1,200.")
    for any_sentence in ("How long is the cable?", "How many layers are there?", "What is its age?"):
        assert questions.focus(any_sentence) is None  # a length, a count, an age asked otherwise: not judged


def test_a_plural_pronoun_after_one_named_thing_means_a_group_the_question_before_spoke_of() -> None:
    # "them" is the mutation operators, not RoBERTa; "they" the bar magnets, not the Ca+ ion: the question
    # before's words say what the follow-up is about, no name is put for the pronoun
    assert (
        conversation(
            "Which mutation operators were used to train the RoBERTa detector?",
            "Which of them was the hardest?",
        )[1]
        == "Which of them was the hardest? (mutation operators used train RoBERTa detector)"
    )
    assert conversation("What is the radius of GJ 486b?", "And its mass?")[1] == (
        "And GJ 486b's mass?"  # one thing's pronoun still takes its name
    )


@pytest.mark.parametrize(
    ("claim", "source", "stated"),
    [
        ("The data were imaged with CASA 5.", "with the tclean task of the CASA software version 5.8", False),
        ("Searches took 18737 s [E1].", "Its multi-step searches took 18,737 sec in all.", True),
        ("It orbits in 1.5 days.", "an orbital period of 1.5 days", True),
        ("Three transits were observed.", "We observed three separate transit events.", True),
        ("The period is 1.4 days.", "an orbital period of 1.5 days", False),
    ],
)
def test_a_claim_states_a_number_only_as_its_source_does(claim: str, source: str, stated: bool) -> None:
    from citewise.core.text import states_figures_of

    assert states_figures_of(claim.replace("[E1]", ""), source) is stated
