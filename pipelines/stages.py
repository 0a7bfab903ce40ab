"""The names of the stages whose Beam pipelines write rejects or shards under them: each the Luigi
task's ``stage`` (its folder in the work directory) and the ``stage`` of its rejects, declared once."""

INGEST = "ingest"
IMPORT = "import"
TRANSLATIONS = "translations"
BACKTRANSLATE = "backtranslate"
