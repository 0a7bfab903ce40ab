"""BuildParaNMT: the top-level task that builds the paraphrase corpus."""


import luigi

from corpus.outputs import read_json
from workflows.central_scheduler import WorkDirectoryTask
from workflows.corpus import AssignDeciles
from workflows.ingest import IngestBitext
from workflows.nmt import BACKTRANSLATE_ENGINE, TrainTranslator, TranslatorChoice, without_empty


class BuildParaNMT(WorkDirectoryTask, luigi.WrapperTask):
    """Ingest the bitext, train the cs→en model (or take a given or published translator), back-translate
    the foreign side, score the pairs and rank them into deciles: the Parquet corpus and its summary
    (summary.md, printed)."""

    inputs = IngestBitext.inputs
    source_language = IngestBitext.source_language
    translator = TranslatorChoice.translator
    preset = luigi.Parameter(default="", description="TrainTranslator preset (tiny, small, base, big); empty: its configured one.")
    # older spellings of --translator FOLDER, hidden from --help and warned of (workflows.nmt.GIVEN_MODEL_PARAMETERS)
    checkpoint = TrainTranslator.checkpoint
    dict_dir = TrainTranslator.dict_dir
    spm_model = TrainTranslator.spm_model
    spm_target_model = TrainTranslator.spm_target_model
    model_dir = TrainTranslator.model_dir
    engine = BACKTRANSLATE_ENGINE
    pairs = AssignDeciles.pairs
    translations = AssignDeciles.translations
    pp_vectors = AssignDeciles.pp_vectors
    pp_encoder = AssignDeciles.pp_encoder
    paraphrases = AssignDeciles.paraphrases
    diversity = AssignDeciles.diversity

    def requires(self):
        translator_params = without_empty(preset=self.preset, checkpoint=self.checkpoint, dict_dir=self.dict_dir,
                                          spm_model=self.spm_model, spm_target_model=self.spm_target_model, model_dir=self.model_dir)
        return AssignDeciles(inputs=self.inputs, source_language=self.source_language, translator=self.translator, nmt=translator_params,
                             paraphrases=self.paraphrases, diversity=self.diversity,
                             **without_empty(engine=self.engine, pairs=self.pairs, translations=self.translations, pp_vectors=self.pp_vectors,
                                             pp_encoder=self.pp_encoder))

    def result_summary(self) -> str:
        """What the command prints at its end, from AssignDeciles' summary.json: where the
        corpus is (in the work directory where it is now), its pairs, rejects per stage and
        pairs per decile."""
        summary_dir = self.requires().output_dir
        summary = read_json(summary_dir / "summary.json")
        lines = [f"ParaNMT corpus: {summary['rows']} pairs in {self.requires().corpus_dir()}",
                 f"  translations: {summary['translated_by']}",
                 f"  summary with score ranges and example pairs: {summary_dir / 'summary.md'}"]
        if len(made := summary.get("made", {})) > 1:
            lines.append("  made by: " + ", ".join(f"{way or '(elsewhere)'} {entry['pairs']}" for way, entry in made.items()))
        for stage, rejects in summary["rejects"].items():
            reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(rejects["by_reason"].items())) or "none"
            lines.append(f"  rejected at {stage}: {rejects['total']} ({reasons})")
        for scorer, deciles in summary["deciles"].items():
            sizes = " ".join(str(deciles[str(d)]["rows"]) if str(d) in deciles else "0" for d in range(10))
            lines.append(f"  pairs per decile of {summary['scorers'][scorer]} (0 … 9): {sizes}")
        for column in summary.get("not_ranked", {}).values():
            lines.append(f"  {column}: empty, not ranked (no model scored the translations; name --translator to score them)")
        return "\n".join(lines)
