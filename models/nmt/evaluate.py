"""Translation quality: sacrebleu BLEU and chrF of the model and of a baseline system, same references."""

from __future__ import annotations

from pathlib import Path

import sacrebleu


def read_lines(path: str | Path) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict[str, float | str]:
    """Corpus BLEU and chrF (sacrebleu defaults: 13a tokenization, chrF β=2) with their signatures."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    bleu, chrf = sacrebleu.BLEU(), sacrebleu.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": round(bleu_score.score, 2),
        "chrf": round(chrf_score.score, 2),
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def report_markdown(title: str, rows: dict[str, dict]) -> str:
    """A Markdown table of systems and their scores."""
    lines = [f"# {title}", "", "| system | BLEU | chrF |", "|---|---|---|"]
    lines += [f"| {name} | {scores['bleu']:.2f} | {scores['chrf']:.2f} |" for name, scores in rows.items()]
    signature = next(iter(rows.values()))
    lines += ["", f"BLEU: `{signature['bleu_signature']}`  ", f"chrF: `{signature['chrf_signature']}`", ""]
    return "\n".join(lines)
