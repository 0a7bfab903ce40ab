"""Every ``luigi --module workflows`` command imports the whole Luigi layer; torch (and Beam's
RunInference, which imports it) belong only to the stages that train, load or run a model, which
import them when they run: loaded at import they cost every stage 250 MB of its own memory and
1.3 s, a tree that already holds sentencepiece's trainer among them."""

import subprocess
import sys

HEAVY = ("torch", "apache_beam.ml", "fairseq", "ctranslate2", "sentence_transformers", "transformers")


def test_the_luigi_layer_loads_without_torch(tmp_path):
    script = f"import sys, workflows; print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))"
    loaded = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded
