"""Corpus statistics (the paper's Table 2) and the corpus summary (its record and Markdown).

Table 2 describes English sentences (here: the references, i.e. the original English side) of
a sample per source domain:
  * average length: tokens per sentence (lowercased Moses tokens), with its standard deviation;
  * average IDF: per sentence, the mean IDF of its tokens, then mean and standard deviation over
    sentences. The paper took IDF from Wikipedia; here it comes from a word-count file (e.g.
    enwiki_vocab_min200.txt), which holds corpus frequencies, not document frequencies, so
    IDF(w) = ln(total count / count(w)); a word missing from the file is at least as rare as
    its rarest word and gets that word's IDF;
  * vocabulary entropy: −Σ p(w) ln p(w) over the token distribution of the sample, in nats;
  * PP score: mean and standard deviation of the pairs' PP similarity.
Standard deviations are population ones (ddof 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from corpus.deciles import SCORERS, Key
from corpus.tables import markdown_table
from corpus.tokenbatch import encode_joined


class Idf:
    """IDF from word counts: ln(total / count), the rarest word's value for unknown words."""

    def __init__(self, counts: Mapping[str, int]):
        if not counts:
            raise ValueError("no word counts")
        total = sum(counts.values())
        self.values = {word: math.log(total / count) for word, count in counts.items() if count > 0}
        self.unknown = math.log(total / min(c for c in counts.values() if c > 0))

    def of(self, words: Sequence[str]) -> np.ndarray:
        get = self.values.get
        return np.fromiter((get(word, self.unknown) for word in words), dtype=np.float64, count=len(words))


def _mean_std(values: np.ndarray) -> dict[str, float | None]:
    if len(values) == 0:
        return {"mean": None, "std": None}
    return {"mean": float(values.mean()), "std": float(values.std())}


def sentence_stats(tokens: pa.Array | Sequence[str], pp_sim: np.ndarray, idf: Idf | None) -> dict:
    """Table 2's statistics of one sample (space-joined token strings and their pairs' PP scores)."""
    side, vocabulary = encode_joined(tokens)
    lengths = side.lengths
    counts = np.bincount(side.ids, minlength=len(vocabulary))
    p = counts[counts > 0] / max(counts.sum(), 1)
    result = {
        "sentences": int(len(lengths)),
        "length": _mean_std(lengths.astype(np.float64)),
        "vocabulary_entropy": float(-(p * np.log(p)).sum()) if len(p) else None,
        "pp_sim": _mean_std(np.asarray(pp_sim, dtype=np.float64)),
    }
    if idf is not None:
        token_idf = idf.of(vocabulary)[side.ids]
        sums = np.bincount(side.rows, weights=token_idf, minlength=len(lengths))
        has_tokens = lengths > 0
        result["idf"] = _mean_std(sums[has_tokens] / lengths[has_tokens])
    return result


def domain_table2(sample: pa.Table, idf: Idf | None) -> dict[str, dict]:
    """Table 2 for each group of a sample (column ``sample``: a domain name, or ``(all)``, kept last)."""
    groups = sample.column("sample").to_numpy(zero_copy_only=False)
    names = sorted(set(groups.tolist()), key=lambda name: (name.startswith("("), name))
    stats = {}
    for name in names:
        rows = sample.filter(pa.array(groups == name))
        stats[name] = sentence_stats(rows.column("reference_tok"), rows.column("pp_sim").to_numpy(), idf)
    return stats


def _cell(stat: dict | float | None) -> str:
    if stat is None:
        return "–"
    if isinstance(stat, dict):
        return "–" if stat["mean"] is None else f"{stat['mean']:.2f} ({stat['std']:.2f})"
    return f"{stat:.2f}"


def table2_rows(stats: Mapping[str, dict]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of Table 2: domains as columns, statistics as rows, standard deviations in
    parentheses."""
    domains = list(stats)
    rows = [[label, *(_cell(stats[d].get(key)) for d in domains)] for label, key in
            (("Avg. Length", "length"), ("Avg. IDF", "idf"), ("Vocab. Ent.", "vocabulary_entropy"), ("PP Score", "pp_sim"))]
    rows.append(["Num Ex. (sampled)", *(f"{stats[d]['sentences']:,}" for d in domains)])
    return ["Statistic", *domains], rows


def table2_markdown(stats: Mapping[str, dict]) -> str:
    return markdown_table(*table2_rows(stats))


# Why a ranked score leaves some pairs unranked (null).
UNRANKED = {"tau": "fewer than two shared words, no order to compare", "trans": "no model scored the translation"}


def summary_record(
    counts: Mapping[str, int],
    cuts: Mapping[str, Sequence[Key]],
    deciles: Mapping[str, dict],
    corpus_dir: str,
    pp_model: Mapping,
    rejects: Mapping[str, dict],
    translated_by: str = "",
    ranked: Sequence[str] = tuple(SCORERS),
    made: Mapping[str, dict] | None = None,
) -> dict:
    """The corpus summary (summary.json): its rows (the largest count of any ranking), where it
    is (relative to the work directory, which can move), the model that made its translations,
    the PP model that scored it, the rejects of each stage before it, the scorers ranked with
    their exact cut keys (and those not ranked: ``trans`` where no model scored the
    translations), per scorer and decile the rows, score range and example pairs, and ``made``:
    per way its pairs were made (the ``diversity`` column), their count and mean figures."""
    rows = max(counts.values(), default=0)
    return {
        "rows": rows,
        "corpus_dir": corpus_dir,
        "translated_by": translated_by,
        "pp_model": pp_model,
        "rejects": rejects,
        "scorers": {name: SCORERS[name] for name in ranked},
        "not_ranked": {name: column for name, column in SCORERS.items() if name not in ranked},
        # the pairs a ranked score leaves out (null: UNRANKED), and its deciles that ties decide
        "unranked_rows": {name: rows - counts.get(name, 0) for name in ranked if counts.get(name, 0) < rows},
        "tied_deciles": {name: found for name in ranked if (found := tied_deciles(deciles.get(name, {})))},
        "cuts": {name: [cut.as_tuple() for cut in keys] for name, keys in cuts.items()},
        "deciles": deciles if rows else {},
        "made": dict(made or {}),
    }


def tied_deciles(deciles: Mapping[str, Mapping]) -> list[int]:
    """The deciles of a score decided by ties: every pair in it has one score, which a neighbouring
    decile has too, so the id hash alone put the boundary there and the decile selects nothing
    that its neighbour does not (Kendall τ's 1.0 for pairs of fewer than two shared words made
    deciles 5-9 one tie before corpus/7). ``deciles``: the summary's {decile: {min, max, …}}."""
    entries = {int(d): entry for d, entry in deciles.items()}
    return [d for d, entry in sorted(entries.items()) if entry["min"] == entry["max"]
            and any(entries.get(other, {}).get(side) == entry["min"] for other, side in ((d - 1, "max"), (d + 1, "min")))]


# The columns of the summary's "how the pairs were made" table and their headings.
DIVERSITY_FIGURES = {"unigram_f1": "unigram F1", "kendall_tau": "Kendall τ", "sibling_f1": "sibling F1", "pp_sim": "pp_sim",
                     "trans_score": "trans_score"}


def _figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _model_line(model: Mapping) -> str:
    return f"PP model: {model['kind']}: `{model['path']}` (sha256 {model['sha256'][:16]}…)"


def summary_markdown(summary: Mapping) -> str:
    """The corpus summary (rows, rejects, per-decile score ranges, example pairs) as Markdown."""
    translations = f"Translations: {summary['translated_by']}  \n" if summary.get("translated_by") else ""
    parts = [f"# ParaNMT corpus: {summary['rows']:,} pairs\n\nCorpus: `{summary['corpus_dir']}` (in the work directory)  \n"
             f"{translations}{_model_line(summary['pp_model'])}\n"]
    rejects = [[stage, f"{e['total']:,}", ", ".join(f"{reason} {count:,}" for reason, count in e["by_reason"].items()) or "–"]
               for stage, e in summary["rejects"].items()]
    parts.append("## Rejected input\n\n" + markdown_table(["stage", "rejects", "by reason"], rejects, align_right=(1,)))
    if not_ranked := summary.get("not_ranked"):
        parts.append(f"Not ranked: {', '.join(f'`{column}`' for column in not_ranked.values())} (no model scored the translations: "
                     f"{', '.join(f'`decile_{name}`' for name in not_ranked)} empty; name `--translator` to score them)\n")
    for scorer, count in summary.get("unranked_rows", {}).items():
        parts.append(f"`{summary['scorers'][scorer]}`: {count:,} pairs not ranked (`decile_{scorer}` null: {UNRANKED[scorer]})\n")
    for scorer, tied in summary.get("tied_deciles", {}).items():
        parts.append(f"Decided by ties: deciles {', '.join(map(str, tied))} of `{summary['scorers'][scorer]}` hold one score each, "
                     "shared with a neighbour: the id hash alone split them\n")
    if made := summary.get("made"):
        rows = [[way or "(made elsewhere)", f"{e['pairs']:,}", *(_figure(e[name]) for name in DIVERSITY_FIGURES)] for way, e in made.items()]
        parts.append("## How the pairs were made\n\nMeans over the pairs of each way (`diversity`): against the reference (unigram F1, "
                     "Kendall τ), among the siblings (each one's highest unigram F1 with another paraphrase of its source), meaning "
                     "(PP similarity, translation score).\n\n"
                     + markdown_table(["made by", "pairs", *DIVERSITY_FIGURES.values()], rows, align_right=(1, 2, 3, 4, 5, 6)))
    for scorer, column in summary["scorers"].items():
        deciles = summary["deciles"].get(scorer, {})
        rows = [[d, f"{e['rows']:,}", f"{e['min']:.4f}", f"{e['max']:.4f}"] for d, e in deciles.items()]
        parts.append(f"## Deciles of {column} (`decile_{scorer}`)\n\n"
                     + markdown_table(["decile", "pairs", "lowest", "highest"], rows, align_right=(1, 2, 3)))
    for scorer, column in summary["scorers"].items():
        rows = [[d, f"{row[column]:.3f}", row["reference"], row["translation"]]
                for d, e in summary["deciles"].get(scorer, {}).items() for row in e["examples"]]
        parts.append(f"## Example pairs per decile of {column}\n\n" + markdown_table(["decile", column, "reference", "translation"], rows))
    return "\n".join(parts)
