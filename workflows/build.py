"""BuildParaNMT: the top-level task that builds the paraphrase corpus."""

import luigi

from models.nmt.translate import ENGINES
from workflows.backtranslate import BackTranslate
from workflows.ingest import IngestBitext
from workflows.nmt import TrainTranslator, without_empty


class BuildParaNMT(luigi.WrapperTask):
    """Ingest the bitext, train (or take) the cs→en model and back-translate the Czech side."""

    inputs = IngestBitext.inputs
    preset = luigi.Parameter(default="", description="TrainTranslator preset (tiny, small, base, big); empty: its configured one.")
    checkpoint = TrainTranslator.checkpoint
    dict_dir = TrainTranslator.dict_dir
    spm_model = TrainTranslator.spm_model
    spm_target_model = TrainTranslator.spm_target_model
    engine = luigi.Parameter(default="", description=f"Translation engine {ENGINES}; empty: BackTranslate's configured one.")

    def requires(self):
        translator = without_empty(preset=self.preset, checkpoint=self.checkpoint, dict_dir=self.dict_dir,
                                   spm_model=self.spm_model, spm_target_model=self.spm_target_model)
        return BackTranslate(inputs=self.inputs, translator=translator, **without_empty(engine=self.engine))
