"""corpus.translation_check as functions, on hand-made pairs: each figure's value, the loop test,
the accepted figures, the decision that a translator is broken and the console line; the stages
that stop on it are tested end to end in tests/workflows/test_translations_flow.py."""

import pytest

from corpus.errors import InputError
from corpus.translation_check import (
    accepted_figures,
    broken_translator,
    figures_line,
    loops,
    out_of_bounds,
    translation_figures,
)
from pipelines.translator import best_labels

SOURCES = ["Muž hraje.", "Pes běží.", "Pes běží.", "Kočka jí."]


def test_figures_of_a_translator_that_translates_and_copies_one_source():
    figures = translation_figures(SOURCES, ["A man plays.", "The dog runs.", "The dog runs.", "Kočka jí."])
    # lengths 12/10, 13/9, 13/9, 9/9: the median is halfway between 1.2 and 1.4444
    assert {name: value for name, value in figures.items() if name != "english"} == {"distinct": 1.0, "copies": 0.25, "length": 1.3222, "loops": 0.0}


def test_one_sentence_for_every_source_is_one_distinct_translation_of_three_sources():
    assert translation_figures(SOURCES, ["A man in a blue shirt."] * 4)["distinct"] == 0.3333


def test_english_is_higher_for_english_than_for_copies_of_czech():
    english = translation_figures(SOURCES, ["A man plays.", "The dog runs.", "The dog runs.", "A cat eats."])["english"]
    copied = translation_figures(SOURCES, SOURCES)["english"]
    assert 0 <= copied < english <= 1


def test_a_sample_of_no_pairs_has_no_figures():
    assert translation_figures([], []) == {}


@pytest.mark.parametrize(("translation", "looping"), [
    ("the end of the end of the end of it", True),  # "the end of" three times
    ("The End of the end OF THE END of", True),  # lowercased
    ("a b c a b c", False),  # twice only
    ("one two", False),  # no 3-gram
    ("", False),
])
def test_a_loop_is_a_word_trigram_said_three_times(translation, looping):
    assert loops(translation) is looping


def test_the_loops_figure_is_the_share_of_looping_translations():
    assert translation_figures(["Ahoj.", "Pes."], ["the end of the end of the end of it", "A dog."])["loops"] == 0.5


def test_accepted_figures_are_named_figures_and_another_name_is_an_input_error():
    assert accepted_figures(" copies, loops ,") == {"copies", "loops"}
    assert accepted_figures("") == set()
    with pytest.raises(InputError,
                       match=r"--accept-translations: unknown figure\(s\) \['nope'\]; choose from distinct, copies, length, english, loops"):
        accepted_figures("copies,nope")


def test_out_of_bounds_are_the_figures_outside_their_bounds_the_bounds_inside():
    figures = {"distinct": 0.25, "copies": 0.5, "length": 6.1, "english": 0.5, "loops": 0.0}
    assert [bound.name for bound in out_of_bounds(figures)] == ["distinct", "length"]
    assert out_of_bounds({}) == []


def test_the_first_figure_out_of_bounds_and_not_accepted_says_the_translator_is_broken():
    figures = {"good": {"distinct": 1.0, "copies": 0.0}, "sys": {"distinct": 0.25, "copies": 0.6}}
    assert broken_translator(figures, set()) == (
        "distinct", "the translations of sys look broken: distinct translations per distinct source is 0.25 "
                    "(a translator that translates gives at least 0.5)")
    assert broken_translator(figures, {"distinct"}) == (
        "copies", "the translations of sys look broken: share of translations identical to their source is 0.6 "
                  "(a translator that translates gives at most 0.5)")
    assert broken_translator(figures, {"distinct", "copies"}) is None


def test_a_variant_set_may_loop_as_much_above_its_beams_best_as_the_bound_allows_and_no_more():
    """A weak model's constrained searches loop more than its beam (the demo's: 0.11 and 0.31);
    a broken decoder loops far more than its beam, and is still stopped."""
    weak = {"own model": {"loops": 0.11}, "own model (constrained beam 4, 2 banned)": {"loops": 0.31}}
    best_of = best_labels(weak)
    assert best_of == {"own model (constrained beam 4, 2 banned)": "own model"}
    assert broken_translator(weak, set(), best_of) is None
    assert broken_translator(weak, set())[0] == "loops"  # judged alone, as the beam's best is
    broken = {"own model": {"loops": 0.02}, "own model (constrained beam 4, 2 banned)": {"loops": 0.31}}
    assert broken_translator(broken, set(), best_labels(broken)) == (
        "loops", "the translations of own model (constrained beam 4, 2 banned) look broken: share of translations that say a word 3-gram "
                 "three times or more is 0.31 (a translator that translates gives at most 0.27: 0.25 above its beam's best, 0.02)")
    looping_best = {"own model": {"loops": 0.3}, "own model (nbest beam 12)": {"loops": 0.3}}
    assert broken_translator(looping_best, set(), best_labels(looping_best))[1].startswith("the translations of own model look broken")
    assert best_labels(["Online-B (2021)", "Online-B (2021) (sampling seed 1)", "other (nbest)"]) == {
        "Online-B (2021) (sampling seed 1)": "Online-B (2021)"}


def test_the_console_line_gives_a_range_over_several_systems():
    figures = {"a": {"distinct": 1.0, "copies": 0.0}, "b": {"distinct": 0.9, "copies": 0.0}}
    assert figures_line(figures) == "distinct 0.90–1.00, copies 0.00"
