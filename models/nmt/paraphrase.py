"""Several paraphrases of each source: the beam's best (variant 0, the paper's one pair) and up
to K-1 others, made another way (``--diversity``), each kept only when it keeps the meaning.

Methods, all on the engine's own search (CTranslate2: ``num_hypotheses``, its samplers,
``suppress_sequences``):

* ``nbest``: the beam's K best hypotheses;
* ``sampling``: K random samples (top-k, top-p, temperature; the same draws for the same chunk
  on every run: ``models.nmt.translate.Ct2Translator.searching``);
* ``constrained``: negative constraints (ParaBank, Hu et al. 2019): each other variant is a beam
  search that may not say a set of the reference's content words (``corpus.paraphrases.banned_sets``;
  none the source holds too: names, brands, loanwords), its words and their capitalized forms banned as target pieces. CTranslate2 takes one list of
  banned sequences per call, not per sentence: searches are grouped so that a group's list holds
  no word a member's best translation says unless the member bans it itself
  (``corpus.paraphrases.compatible_groups``), and a group is batched as any search is;
* ``parabank``: ParaBank 2's recipe (Hu et al., CoNLL 2019): the candidates of all three, each
  scored by the model, clustered by their words, the best-scored of each new cluster kept.

Every candidate but the beam's own is rescored by forced decoding, so ``trans_score`` means the
same for each: the model's mean log-probability per token of it given the source. A candidate
that says what a kept one says (the same words) is not distinct and is left out; one that still
says a banned word (spelled in other pieces), or scores more than ``meaning_floor`` below its
source's best, is dropped with that reason.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from corpus import paraphrases
from corpus.settings import setting
from corpus.text import english_tokens
from models.nmt.search import BEST, Hypothesis, Sampling, Search, Searcher

METHODS = ("nbest", "sampling", "constrained", "parabank")
# The methods whose candidates include beam searches that ban some of the reference's words.
CONSTRAINED_METHODS = ("constrained", "parabank")
# Constrained searches that share one list of banned words at most: the longer the list, the more
# each step of the decoder masks.
GROUP_SEARCHES = 256


@dataclass(frozen=True)
class DiversityOptions:
    """How many paraphrases each source gets and how they are made (defaults: the paper's one)."""

    paraphrases: int = setting(1, "Paraphrases of each source sentence, at most (1: the beam's best only, the paper's corpus; more: "
                                  "variant 0 is that pair and the others are made as --diversity says).", minimum=1)
    diversity: str = setting("nbest", "How the other paraphrases are made: nbest (the beam's K best), sampling (seeded random "
                                      "samples), constrained (beam searches that may not say some of the reference's content words), "
                                      "parabank (all three, clustered by their words, the best of each cluster: ParaBank 2).",
                             choices=METHODS)
    sampling_topk: int = setting(50, "Sampling: from the k most likely pieces at each step (0: all). CTranslate2 sorts the pieces "
                                     "it samples from at each step: from all of them, sampling cost 3 times as much on the CPU "
                                     "(docs/2026-12-07-cpu-decoding.md).", minimum=0)
    sampling_topp: float = setting(0.9, "Sampling: from the fewest pieces whose probability reaches p (nucleus sampling; 1: no cut).", minimum=0)
    sampling_temperature: float = setting(1.0, "Sampling: temperature of the model's distribution.", minimum=0)
    seed: int = setting(1, "Sampling: the seed; a chunk's draws depend on it and the chunk alone, so a rerun gives the same bytes.",
                        minimum=0)
    banned_words: int = setting(2, "Constrained: content words of the reference each other variant may not say (longest first; "
                                   "variant 1 bans the first ones, variant 2 the next, …).", minimum=1)
    constrained_beam: int = setting(4, "Constrained: the beam of each search that bans words (a search a variant: a narrower beam than "
                                       "the 1-best's keeps their cost near one 1-best translation in all).", minimum=1)
    parabank_constraints: int = setting(2, "Parabank: the constrained searches of a source (sets of banned words) among its candidates.",
                                        minimum=0)
    parabank_samples: int = setting(0, "Parabank: the sampled candidates of a source (0: as many as --paraphrases). 2 cost 2.6 times "
                                        "the 1-best's decoding, not 3.3, but trained encoders 0.4-0.5 worse on csen-more "
                                        "(docs/2026-12-07-paraphrase-encoders.md).", minimum=0)
    cluster_f1: float = setting(0.7, "Parabank: candidates whose unigram F1 with a kept paraphrase reaches this say the same thing "
                                     "(one cluster, one kept).", minimum=0)
    meaning_floor: float = setting(1.0, "A variant whose trans_score (mean log-probability per token) is more than this below its "
                                        "source's beam best lost the meaning: rejected as below_meaning_floor (0: none is).", minimum=0)

    def label(self, method: str, beam: int) -> str:
        """The ``diversity`` column of a variant made by ``method`` (``beam``: variant 0)."""
        made = {
            "beam": f"beam {beam}",
            "nbest": f"nbest beam {beam}",
            "sampling": f"sampling top-k {self.sampling_topk} top-p {self.sampling_topp:g} temperature {self.sampling_temperature:g} "
                        f"seed {self.seed}",
            "constrained": f"constrained beam {self.constrained_beam}, {self.banned_words} banned",
        }[method]
        return made if method == "beam" or self.diversity != "parabank" else f"parabank: {made}"


@dataclass(frozen=True)
class Variant:
    """One paraphrase of a source: its hypothesis, how it was made (the ``diversity`` label) and
    the words banned while decoding it."""

    hypothesis: Hypothesis
    made: str
    banned: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dropped:
    """A candidate that lost the meaning or said a banned word: a reject with ``reason``."""

    variant: Variant
    reason: str
    detail: str


@dataclass(frozen=True)
class Paraphrases:
    """A source's variants (variant 0 first), each one's highest unigram F1 with a sibling, and
    the candidates dropped."""

    variants: list[Variant]
    sibling_f1: list[float | None]
    dropped: list[Dropped]


def chunk_seed(seed: int, first_id: str) -> int:
    """The sampling seed of a chunk: the user's seed and the chunk's first pair id, so chunks
    draw differently and a chunk draws the same on every run."""
    return int.from_bytes(hashlib.blake2b(f"{seed}\t{first_id}".encode(), digest_size=4).digest(), "big")


def paraphrase(translator: Searcher, texts: list[str], pivots: list[str], references_tok: list[str], options: DiversityOptions,
               seed: int) -> list[Paraphrases | None]:
    """Each source's paraphrases (None for a source without any piece), as ``options`` say;
    ``seed``: the chunk's (``chunk_seed``)."""
    beam, wanted = translator.options.beam_size, options.paraphrases
    method = options.diversity
    best_first = translator.search(texts, pivots, Search(hypotheses=min(wanted, beam)) if method in ("nbest", "parabank") else BEST)
    candidates: list[list[Variant]] = [[] for _ in texts]
    if wanted > 1 and method in ("nbest", "parabank"):
        for found, hypotheses in zip(candidates, best_first, strict=True):
            found += [Variant(h, options.label("nbest", beam)) for h in (hypotheses or [])[1:]]
    samples = options.parabank_samples or wanted if method == "parabank" else wanted if method == "sampling" else 0
    if wanted > 1 and samples:
        sampling = Sampling(options.sampling_topk, options.sampling_topp, options.sampling_temperature, seed)
        for found, hypotheses in zip(candidates, translator.search(texts, pivots, Search(samples, sampling)), strict=True):
            found += [Variant(h, options.label("sampling", beam)) for h in hypotheses or []]
    if wanted > 1 and method in CONSTRAINED_METHODS:
        _add_constrained(translator, texts, pivots, references_tok, best_first, options, candidates)
    return [None if hypotheses is None else _chosen(Variant(hypotheses[0], options.label("beam", beam)), found, options)
            for hypotheses, found in zip(best_first, candidates, strict=True)]


def _add_constrained(translator: Searcher, texts: list[str], pivots: list[str], references_tok: list[str], best: list[list[Hypothesis] | None],
                     options: DiversityOptions, candidates: list[list[Variant]]) -> None:
    """A beam search per set of banned words of each source (``corpus.paraphrases.banned_sets``),
    in groups that share their banned words (``corpus.paraphrases.compatible_groups``): one
    engine call per group, batched, not one per sentence."""
    sets = min(options.paraphrases - 1, options.parabank_constraints) if options.diversity == "parabank" else options.paraphrases - 1
    searches = [(i, banned) for i, tokens in enumerate(references_tok) if best[i]
                for banned in paraphrases.banned_sets(tokens, sets, options.banned_words, texts[i])]
    if not searches:
        return
    words = sorted({word for _, banned in searches for word in banned})
    forms = {word: sorted({word, word.capitalize()}) for word in words}
    spelled = [form for word in words for form in forms[word]]
    pieces = dict(zip(spelled, translator.codec.encode_target(spelled), strict=True))
    said = [set(tokens.split()) for tokens in english_tokens([found[0].text if found else "" for found in best])]
    for group in paraphrases.compatible_groups([banned for _, banned in searches], [said[i] for i, _ in searches], GROUP_SEARCHES):
        banned_here = sorted({word for member in group for word in searches[member][1]})
        suppressed = [pieces[form] for word in banned_here for form in forms[word] if pieces[form]]
        found = translator.search([texts[searches[m][0]] for m in group], [pivots[searches[m][0]] for m in group],
                                  Search(beam=options.constrained_beam), suppressed)
        for member, hypotheses in zip(group, found, strict=True):
            i, banned = searches[member]
            candidates[i] += [Variant(h, options.label("constrained", translator.options.beam_size), banned) for h in hypotheses or []]


def _chosen(best: Variant, candidates: list[Variant], options: DiversityOptions) -> Paraphrases:
    """Variant 0 and the distinct candidates that keep the meaning, at most K in all: in their
    order, or (parabank) one per cluster, best-scored first."""
    tokens = [text.split() for text in english_tokens([best.hypothesis.text, *(c.hypothesis.text for c in candidates)])]
    seen, dropped, fit = {tuple(tokens[0])}, [], []
    for candidate, words in zip(candidates, tokens[1:], strict=True):
        if tuple(words) in seen:
            continue
        seen.add(tuple(words))
        lost = best.hypothesis.score - candidate.hypothesis.score
        if said := paraphrases.used_banned(words, candidate.banned):
            dropped.append(Dropped(candidate, "banned_word_kept", f"says the banned {', '.join(said)}"))
        elif options.meaning_floor and lost > options.meaning_floor:
            dropped.append(Dropped(candidate, "below_meaning_floor", f"trans_score {candidate.hypothesis.score:.3f} is {lost:.3f} below the "
                                                                    f"beam's best ({best.hypothesis.score:.3f}; floor {options.meaning_floor:g})"))
        else:
            fit.append((candidate, words))
    wanted = options.paraphrases - 1
    if options.diversity == "parabank":
        order = paraphrases.cluster_representatives([w for _, w in fit], [c.hypothesis.score for c, _ in fit], [tokens[0]],
                                                    options.cluster_f1, wanted)
        fit = [fit[i] for i in order]
    kept = [(best, tokens[0]), *fit[:wanted]]
    return Paraphrases([variant for variant, _ in kept], paraphrases.sibling_f1([words for _, words in kept]), dropped)
