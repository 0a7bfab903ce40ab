"""BuildParaNMT: the top-level task that builds the paraphrase corpus."""

import luigi

from workflows.ingest import IngestBitext


class BuildParaNMT(luigi.WrapperTask):
    """Ingest the bitext (then, as later stages land, back-translate, score and rank it)."""

    inputs = IngestBitext.inputs

    def requires(self):
        return IngestBitext(inputs=self.inputs)
