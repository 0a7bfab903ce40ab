"""No decile of the tie-aware keys the corpus ranks is decided by ties, on pairs like a
back-translating model's: copies, dropped words, a swapped pair of words and replaced words over
the demo corpus's real English sentences, alone and joined two or three to a line (real corpora
have long lines too). Ranked by τ itself and by the trigram overlap alone (corpus/7) the same
pairs have deciles that are one tie, and so has Kendall's z where a tenth of the pairs keep five
words in their order (the project's own model's corpus, decile 4, corpus/8); by the keys
``kendall_z_then_f1`` and ``trigram_then_f1`` (corpus/9) none.
(Unigram F1 is ranked as it is: on these short sentences one value, 2/3, fills a decile; on the
94,886 pairs the project's model back-translated none does, docs/2026-12-04-own-corpus-table4.md.)"""

import gzip

import numpy as np
import pytest

from corpus.deciles import SCORERS, assign, cut_ranks, cuts_of_all
from corpus.diversity import kendall, kendall_z, unigram_f1
from corpus.ids import id_hashes
from corpus.overlap import trigram_overlap
from corpus.scoring import ties_ordered_by_f1
from corpus.stats import tied_deciles
from corpus.text import english_tokens
from corpus.tokenbatch import TokenBatch
from workflows.ingest import demo_corpus


def imperfect_translations(sentences: list[list[str]], seed: int = 3) -> list[list[str]]:
    """Each sentence copied, with a word dropped, two neighbours swapped, or half its words
    replaced by words of other sentences: what one model's back-translations look like (copies
    are 2.6 % of the corpus the project's own model made; a tenth would make the top decile of
    every overlap one tie, which no key can order)."""
    rng = np.random.default_rng(seed)
    vocabulary = sorted({word for words in sentences for word in words})
    made = []
    for words in sentences:
        words = list(words)
        kind = rng.choice(["copy", "drop", "swap", "replace"], p=[0.03, 0.3, 0.04, 0.63])
        if kind == "drop" and len(words) > 2:
            del words[rng.integers(len(words))]
        elif kind == "swap" and len(words) > 2:
            i = rng.integers(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
        elif kind == "replace":
            for i in rng.choice(len(words), size=max(1, len(words) // 2), replace=False):
                words[i] = vocabulary[rng.integers(len(vocabulary))]
        made.append(words)
    return made


def five_words_kept_in_order(pairs: int, seed: int = 4) -> tuple[list[str], list[str]]:
    """Short pairs that share five words, once each and in one order, and differ in up to four
    more a side: τ = 1 over k = 5, one z for all (a tenth of a corpus of short sentences)."""
    rng = np.random.default_rng(seed)
    words = [f"w{n}" for n in range(1000)]
    references, translations = [], []
    for _ in range(pairs):
        drawn = [words[i] for i in rng.choice(len(words), size=13, replace=False)]
        shared, own, other = drawn[:5], drawn[5:9], drawn[9:]
        references.append(" ".join(shared + own[: rng.integers(0, 5)]))
        translations.append(" ".join(other[: rng.integers(0, 5)] + shared))
    return references, translations


def deciles_of(key: np.ndarray, hashes: np.ndarray) -> dict[int, dict]:
    """{decile: {min, max}} of ``key`` ranked into ten equal bins by the corpus stage's own cuts
    (corpus.deciles: by (key, id hash); NaN: not ranked)."""
    ranked = ~np.isnan(key)
    key, hashes = key[ranked], hashes[ranked]
    bins = assign(key, hashes, cuts_of_all(key, hashes, cut_ranks(len(key))))
    return {d: {"min": float(key[bins == d].min()), "max": float(key[bins == d].max())} for d in range(10)}


@pytest.fixture(scope="module")
def scores() -> dict[str, np.ndarray]:
    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        english = [line.rstrip("\n").split("\t")[3] for line in handle]
    rng = np.random.default_rng(5)
    english += [" ".join(english[j] for j in rng.choice(len(english), size=rng.integers(2, 4))) for _ in range(2 * len(english))]
    references = english_tokens(english)
    translations = [" ".join(words) for words in imperfect_translations([tokens.split() for tokens in references])]
    kept, extra = five_words_kept_in_order(len(references) // 4)
    references, translations = references + kept, translations + extra
    batch = TokenBatch.from_joined(references, translations)
    overlap, f1 = trigram_overlap(batch), unigram_f1(batch)
    tau, compared = kendall(batch)
    z = kendall_z(tau, compared)
    return {"id_hash": id_hashes([f"demo-{n}" for n in range(len(references))]), "trigram_overlap": overlap, "kendall_tau": tau, "kendall_z": z,
            "trigram_then_f1": ties_ordered_by_f1(overlap, f1), "kendall_z_then_f1": ties_ordered_by_f1(z, f1), "unigram_f1": f1}


def test_ranked_by_the_raw_scores_some_deciles_are_one_tie(scores):
    assert tied_deciles(deciles_of(scores["trigram_overlap"], scores["id_hash"]))
    assert tied_deciles(deciles_of(scores["kendall_tau"], scores["id_hash"]))
    assert tied_deciles(deciles_of(scores["kendall_z"], scores["id_hash"]))


@pytest.mark.parametrize("scorer", ["trigram", "tau"])
def test_ranked_by_the_corpus_keys_no_decile_is_one_tie(scores, scorer):
    assert tied_deciles(deciles_of(scores[SCORERS[scorer]], scores["id_hash"])) == []


@pytest.mark.parametrize(("score", "key", "tie"), [("trigram_overlap", "trigram_then_f1", 0.0), ("kendall_z", "kendall_z_then_f1", np.sqrt(6))])
def test_a_key_keeps_its_scores_order_and_orders_its_ties_by_f1(scores, score, key, tie):
    """``tie``: the commonest value (no shared trigram; τ = 1 over five words: z = √6)."""
    ranked = ~np.isnan(scores[score])
    score, f1, key = scores[score][ranked], scores["unigram_f1"][ranked], scores[key][ranked]
    order = np.argsort(key, kind="stable")
    assert (np.diff(score[order]) >= 0).all()
    tied = np.isclose(score[order], tie, rtol=0, atol=1e-12)
    assert tied.sum() > 100 and (np.diff(f1[order][tied]) >= 0).all() and len(np.unique(f1[order][tied])) > 10
