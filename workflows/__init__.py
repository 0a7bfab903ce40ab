"""Luigi tasks; ``luigi --module workflows BuildParaNMT --local-scheduler`` runs the pipeline."""

from workflows.build import BuildParaNMT
from workflows.ingest import IngestBitext

__all__ = ["BuildParaNMT", "IngestBitext"]

from workflows.encoders import EvaluateSTS, TrainEncoder  # noqa: E402

__all__ += ["EvaluateSTS", "TrainEncoder"]

from workflows.backtranslate import BackTranslate  # noqa: E402
from workflows.nmt import ConvertTranslator, EvaluateTranslator, TrainSentencePiece, TrainTranslator  # noqa: E402

__all__ += ["BackTranslate", "ConvertTranslator", "EvaluateTranslator", "TrainSentencePiece", "TrainTranslator"]

from workflows.corpus import (  # noqa: E402
    AssignDeciles,
    CorpusStats,
    ImportParaphrases,
    ScorePairs,
    SelectTopHalf,
    SelectTrainingSet,
    TrainOnFiltered,
    TrainPPModel,
)

__all__ += ["AssignDeciles", "CorpusStats", "ImportParaphrases", "ScorePairs", "SelectTopHalf", "SelectTrainingSet", "TrainOnFiltered", "TrainPPModel"]

from workflows.experiments import (  # noqa: E402
    DataSourceComparison,
    DecileSweep,
    EvaluateBaselines,
    MegabatchAblation,
    ModelTable,
)

__all__ += ["DataSourceComparison", "DecileSweep", "EvaluateBaselines", "MegabatchAblation", "ModelTable"]
