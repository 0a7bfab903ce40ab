"""Every ``luigi --module workflows`` command imports the whole Luigi layer; torch (and Beam's
RunInference, which imports it) belong only to the stages that train, load or run a model, which
import them when they run: loaded otherwise they cost a stage 250 MB of its own memory and 1.3 s,
the tree that holds sentencepiece's trainer among them."""

import subprocess
import sys
import textwrap

HEAVY = ("torch", "apache_beam.ml", "fairseq", "ctranslate2", "sentence_transformers", "transformers")
LOADED = f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})))"


def heavy_modules_after(script: str, folder) -> str:
    run = subprocess.run([sys.executable, "-c", f"import sys\n{script}\n{LOADED}"], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.splitlines()[-1]  # the stages print their tables before it


def test_the_luigi_layer_loads_without_torch(tmp_path):
    assert heavy_modules_after("import workflows", tmp_path) == "[]"


def test_the_stages_that_run_no_model_run_without_torch(tmp_path):
    """Ingest, the sentencepiece vocabulary, import, scores (given word vectors), deciles,
    statistics and the selection of a training set."""
    script = textwrap.dedent("""
        import gzip
        import luigi
        from workflows import AssignDeciles, CorpusStats, IngestBitext, SelectTrainingSet, TrainSentencePiece
        words = "the a man woman dog cat plays runs eats guitar piano ball food in park field".split()
        with gzip.open("bitext.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(f"toy-b1-00train-f00001-s{n}\\t0.9\\tpes {w} {n}\\tthe {w} {n}\\n" for n, w in enumerate(words * 3))
        with open("release.txt", "w", encoding="utf-8") as handle:
            handle.writelines(f"the man plays {w} .\\ta man plays {w} .\\t0.{n + 10}\\n" for n, w in enumerate(words))
        with open("vectors.txt", "w", encoding="utf-8") as handle:
            handle.writelines(f"{w} {n % 3}.0 {n % 5}.0 1.0\\n" for n, w in enumerate(words))
        with open("counts.txt", "w", encoding="utf-8") as handle:
            handle.writelines(f"{w} {10 * (n + 1)}\\n" for n, w in enumerate(words))
        config = luigi.configuration.get_config()
        config.set("paranmt", "workdir", "work")
        config.set("paranmt", "direct_num_workers", "1")
        tasks = [TrainSentencePiece(inputs="bitext.gz", input_sentence_size=50), IngestBitext(inputs="bitext.gz"),
                 AssignDeciles(pairs="release.txt", pp_vectors="vectors.txt"), \
CorpusStats(pairs="release.txt", pp_vectors="vectors.txt", word_counts="counts.txt"),
                 SelectTrainingSet(pairs="release.txt", pp_vectors="vectors.txt", decile="9")]
        assert luigi.build(tasks, local_scheduler=True, log_level="WARNING")
    """)
    assert heavy_modules_after(script, tmp_path) == "[]"
