"""Several paraphrases a source (models.nmt.paraphrase) with the tiny toy model, on CTranslate2."""

import pytest
from nmt_fixtures import tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture

from corpus.paraphrases import content_words, unigram_f1
from corpus.text import english_tokens
from models.nmt.paraphrase import DiversityOptions, paraphrase
from models.nmt.search import Sampling, Search
from models.nmt.translate import load_translator


@pytest.fixture(scope="module")
def sources():
    pairs = toy_pairs(60, seed=11)
    return [cs for cs, _ in pairs], english_tokens(en for _, en in pairs)


@pytest.fixture(scope="module")
def translator(tiny_nmt):
    return load_translator(tiny_nmt.model, threads=1)


def made(translator, sources, **settings):
    texts, references = sources
    return translator.paraphrase(texts, ["cs"] * len(texts), references, DiversityOptions(**settings), seed=7)


@pytest.mark.parametrize("method", ["nbest", "sampling", "constrained", "parabank"])
def test_variant_zero_is_the_beams_best_and_the_others_are_distinct(translator, sources, method):
    best = translator.translate(sources[0])
    for one, found in zip(best, made(translator, sources, paraphrases=4, diversity=method), strict=True):
        assert (found.variants[0].hypothesis, found.variants[0].made) == (one, "beam 12")
        assert 1 <= len(found.variants) <= 4
        words = [tuple(tokens.split()) for tokens in english_tokens(v.hypothesis.text for v in found.variants)]
        assert len(set(words)) == len(words)
        assert all(v.hypothesis.score < 0 for v in found.variants)
    assert sum(len(found.variants) for found in made(translator, sources, paraphrases=4, diversity=method)) > 1.5 * len(best)


def test_one_paraphrase_is_the_one_best_translation(translator, sources):
    one = made(translator, sources, paraphrases=1, diversity="parabank")
    assert [found.variants for found in one] == [[v] for v in [found.variants[0] for found in one]]
    assert [found.variants[0].hypothesis for found in one] == translator.translate(sources[0])


def test_nbest_keeps_the_beams_order(translator, sources):
    for found in made(translator, sources, paraphrases=5, diversity="nbest", meaning_floor=0):
        scores = [v.hypothesis.score for v in found.variants]
        assert scores == sorted(scores, reverse=True)


def test_the_same_seed_draws_the_same_samples_and_another_seed_others(translator, sources):
    texts = sources[0]
    search = Search(4, Sampling(0, 1.0, 1.0, seed=3))
    first, again = translator.search(texts, search=search), translator.search(texts, search=search)
    assert [[h.text for h in found] for found in first] == [[h.text for h in found] for found in again]
    other = translator.search(texts, search=Search(4, Sampling(0, 1.0, 1.0, seed=4)))
    assert [[h.text for h in found] for found in first] != [[h.text for h in found] for found in other]


def test_a_constrained_paraphrase_never_says_a_banned_word_and_records_them(translator, sources):
    constrained = [v for found in made(translator, sources, paraphrases=4, diversity="constrained", meaning_floor=0)
                   for v in found.variants[1:]]
    assert constrained and all(v.banned and v.made == "constrained beam 4, 2 banned" for v in constrained)
    for variant, tokens in zip(constrained, english_tokens(v.hypothesis.text for v in constrained), strict=True):
        assert not set(variant.banned) & set(tokens.split()), (variant.banned, variant.hypothesis.text)


def test_no_search_bans_a_word_its_source_holds(translator, sources):
    """A name carried over from the source (here each reference's longest word, put in its
    source too, once inflected) is not banned: there is no other way to say it."""
    texts, references = sources
    carried = [content_words(tokens)[0] for tokens in references]
    held = [f"{text} {word}{'ovi' if i % 2 else ''}" for i, (text, word) in enumerate(zip(texts, carried, strict=True))]
    found = paraphrase(translator, held, ["cs"] * len(held), references, DiversityOptions(paraphrases=4, diversity="constrained",
                                                                                          meaning_floor=0), seed=7)
    bans = [(word, v.banned) for word, one in zip(carried, found, strict=True) for v in one.variants[1:]]
    assert bans and not [(word, banned) for word, banned in bans if word in banned]


def test_parabank_keeps_one_paraphrase_per_cluster(translator, sources):
    for found in made(translator, sources, paraphrases=5, diversity="parabank", cluster_f1=0.8, meaning_floor=0):
        words = [tokens.split() for tokens in english_tokens(v.hypothesis.text for v in found.variants)]
        assert all(unigram_f1(words[i], words[j]) < 0.8 for i in range(len(words)) for j in range(i))
        assert all(v.made.startswith("parabank: ") for v in found.variants[1:])


def test_parabank_draws_as_many_samples_as_it_is_told(translator, sources):
    """--parabank-samples: its sampled candidates (0: K), the rest of the recipe as before."""

    class Recording:
        """The real translator, with the searches it is asked for kept."""

        def __init__(self, real):
            self.real, self.searches = real, []

        def __getattr__(self, name):
            return getattr(self.real, name)

        def search(self, texts, *args, **kwargs):
            self.searches.append(kwargs.get("search", args[1] if len(args) > 1 else None))
            return self.real.search(texts, *args, **kwargs)

    texts, references = sources
    drawn = {}
    for samples in (0, 2):
        recording = Recording(translator)
        paraphrase(recording, texts, ["cs"] * len(texts), references, DiversityOptions(paraphrases=5, diversity="parabank",
                                                                                        parabank_samples=samples), seed=7)
        drawn[samples] = [search.hypotheses for search in recording.searches if search and search.sampling]
    assert drawn == {0: [5], 2: [2]}


def test_the_meaning_floor_drops_what_scores_far_below_the_best_with_its_reason(translator, sources):
    strict = made(translator, sources, paraphrases=5, diversity="sampling", meaning_floor=0.05)
    dropped = [drop for found in strict for drop in found.dropped]
    assert dropped and {drop.reason for drop in dropped} == {"below_meaning_floor"}
    for found in strict:
        best = found.variants[0].hypothesis.score
        assert all(best - v.hypothesis.score <= 0.05 for v in found.variants)
        assert all(best - drop.variant.hypothesis.score > 0.05 for drop in found.dropped)


def test_the_fairseq_engine_refuses_several_hypotheses_in_one_line(tiny_nmt, sources):
    fairseq = load_translator(tiny_nmt.model, engine="fairseq", threads=1)
    with pytest.raises(ValueError, match="ctranslate2 engine"):
        fairseq.search(sources[0][:2], search=Search(hypotheses=3))
