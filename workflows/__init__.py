"""Luigi tasks; ``luigi --module workflows BuildParaNMT --local-scheduler`` runs the pipeline."""


from workflows import console, console_errors
from workflows.backtranslate import BackTranslate
from workflows.build import BuildParaNMT
from workflows.corpus import (
    AssignDeciles,
    CorpusStats,
    ImportParaphrases,
    ScorePairs,
    SelectTopHalf,
    SelectTrainingSet,
    TrainPPModel,
)
from workflows.defaults import apply_package_defaults
from workflows.encoders import EvaluateSTS, TrainEncoder
from workflows.experiments import (
    ChooseDeciles,
    DataSourceComparison,
    DecileSweep,
    EvaluateBaselines,
    EvaluateBaselinesOnTrainData,
    MegabatchAblation,
    ModelTable,
    TrainOnFiltered,
    TransferBaselinesOnTrainData,
)
from workflows.ingest import IngestBitext
from workflows.judgments import ScoresAgainstJudgments
from workflows.nmt import (
    ConvertTranslator,
    EvaluateTranslator,
    ImportTranslator,
    TrainSentencePiece,
    TrainTranslator,
)
from workflows.transfer import EvaluateTransfer
from workflows.translations import ImportTranslations

apply_package_defaults()  # read when a task is made, after this import: luigi.cfg overrides them
console.install()
console_errors.install()

__all__ = [
    "AssignDeciles",
    "BackTranslate",
    "BuildParaNMT",
    "ChooseDeciles",
    "ConvertTranslator",
    "CorpusStats",
    "DataSourceComparison",
    "DecileSweep",
    "EvaluateBaselines",
    "EvaluateBaselinesOnTrainData",
    "EvaluateSTS",
    "EvaluateTransfer",
    "EvaluateTranslator",
    "ImportParaphrases",
    "ImportTranslations",
    "ImportTranslator",
    "IngestBitext",
    "MegabatchAblation",
    "ModelTable",
    "ScorePairs",
    "ScoresAgainstJudgments",
    "SelectTopHalf",
    "SelectTrainingSet",
    "TrainEncoder",
    "TrainOnFiltered",
    "TrainPPModel",
    "TrainSentencePiece",
    "TransferBaselinesOnTrainData",
    "TrainTranslator",
]
