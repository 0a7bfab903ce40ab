"""Published translators (Marian/OPUS-MT, M2M-100) and other source languages, end to end.

Tiny random models with real tokenizers (hf_fixtures) are converted by ImportTranslator as a
user's downloaded model is; CTranslate2's score of each hypothesis is checked against the Hugging
Face model's own forced-decoding log-probability of it; BuildParaNMT runs on German and Czech lines.
"""

import filecmp
import subprocess
import sys
from pathlib import Path

import luigi
import pandas as pd
import pyarrow as pa
import pytest
import torch
from hf_fixtures import GERMAN, demo_lines, m2m_100, marian
from nmt_fixtures import ACCEPT_ALL

import schemas
from corpus.errors import InputError
from corpus.files import snapshot
from corpus.inputs import resolve_inputs
from corpus.outputs import read_manifest
from models.nmt import folders, published
from models.nmt.model import NmtModel
from models.nmt.translate import Ct2Translator, DecodeOptions
from workflows import BackTranslate, CorpusStats
from workflows.nmt import ImportTranslator

MAKERS = {"marian": marian, "m2m_100": m2m_100}


@pytest.fixture
def accepting_random_translations():
    """BackTranslate accepts every figure of the translation check while the test runs."""
    config = luigi.configuration.get_config()
    config.set("BackTranslate", "accept_translations", ACCEPT_ALL)
    yield
    config.remove_option("BackTranslate", "accept_translations")


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {family: make(root / family) for family, make in MAKERS.items()}


def imported(folder, language="de") -> NmtModel:
    task = ImportTranslator(translator=str(folder), source_language=language)
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    return NmtModel.load(task.output_dir)


def forced_log_probability(folder, model: NmtModel, source: list[str], hypothesis: list[str]) -> float:
    """The Hugging Face model's mean log-probability of ``hypothesis`` and end-of-sentence, given
    ``source`` (with its special tokens) and the target prefix (a language token, forced)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    network = AutoModelForSeq2SeqLM.from_pretrained(str(folder)).eval()
    labels = torch.tensor([tokenizer.convert_tokens_to_ids([*model.target_prefix, *hypothesis, "</s>"])])
    with torch.no_grad():
        logits = network(input_ids=torch.tensor([tokenizer.convert_tokens_to_ids(source)]), labels=labels).logits[0]
    log_probs = torch.log_softmax(logits.float(), -1).gather(1, labels[0][:, None])[:, 0]
    return float(log_probs[len(model.target_prefix):].mean())


@pytest.mark.parametrize("family", sorted(MAKERS))
def test_the_score_of_a_hypothesis_is_the_models_own_forced_decoding_log_probability(luigi_workdir, hf_models, family):
    model = imported(hf_models[family])
    assert model.family == family and model.tokenizer_dir and model.ct2_dir
    texts = [de for de, _ in GERMAN[:6]]
    finished = set()
    for limit in (1, 40):  # cut at the length limit (rescored), and ended by the model
        translator = Ct2Translator(model, DecodeOptions(beam_size=4, max_len_a=0, max_len_b=limit), device="cpu")
        sources = [[*model.source_prefix("de"), *pieces, *model.source_suffix] for pieces in translator.codec.encode(texts)]
        for source, [(hypothesis, score)] in zip(sources, translator.submit(sources, limit)(), strict=True):
            assert score == pytest.approx(forced_log_probability(hf_models[family], model, source, hypothesis), abs=1e-3)
            finished.add(len(hypothesis) < limit)
    assert finished == {True, False}, "both kinds of hypothesis are checked"
    if family == "m2m_100":
        assert model.source_prefixes == {"de": ("__de__",)} and model.target_prefix == ("__en__",)


def test_a_ctranslate2_folder_with_its_tokenizer_translates_as_the_model_it_was_converted_from(luigi_workdir, tmp_path, hf_models):
    folder = tmp_path / "opus-mt-ct2"
    published.convert(hf_models["marian"], folder)
    published.load_tokenizer(hf_models["marian"]).save_pretrained(folder)  # ct2-transformers-converter --copy_files
    assert folders.translator_kind(folder) == "ctranslate2"
    texts = [de for de, _ in GERMAN]
    translations = []
    for model in (imported(folder), imported(hf_models["marian"])):
        translations.append([(h.text, h.score) for h in Ct2Translator(model, DecodeOptions(beam_size=4), device="cpu").translate(texts)])
    assert translations[0] == translations[1]
    # copied into the stage's output (known by its contents, it serves wherever they are); a
    # CTranslate2 folder does not say its positions: the tokenizer's limit (Marian's 512) stands for them
    model = imported(folder)
    assert Path(model.ct2_dir).parent == ImportTranslator(translator=str(folder), source_language="de").output_dir
    assert filecmp.cmp(Path(model.ct2_dir) / "model.bin", folder / "model.bin", shallow=False) and model.max_source_positions == 512


def line_aligned(folder, name, language, pairs):
    (folder / f"{name}.{language}").write_text("".join(f"{foreign}\n" for foreign, _ in pairs), encoding="utf-8")
    english = folder / f"{name}.{'eng' if len(language) == 3 else 'en'}"
    english.write_text("".join(f"{en}\n" for _, en in pairs), encoding="utf-8")
    return folder / f"{name}.{language}"


def test_build_paranmt_from_german_with_a_marian_folder_from_an_empty_folder(tmp_path, hf_models):
    news = line_aligned(tmp_path, "news", "de", GERMAN)
    empty = tmp_path / "empty"
    empty.mkdir()
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "BuildParaNMT", "--local-scheduler",
               "--inputs", f"{news}::{tmp_path / 'news.en'}", "--source-language", "de", "--translator", str(hf_models["marian"]),
               "--BackTranslate-accept-translations", ACCEPT_ALL]
    result = subprocess.run(command, cwd=empty, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "translations: marian, ctranslate2 on cpu" in result.stdout + result.stderr
    work = empty / "work"
    corpus = pd.read_parquet(snapshot(str(work / "corpus" / "latest" / "corpus")))
    assert len(corpus) == len(GERMAN) and set(corpus["pivot"]) == {"de"}
    assert sorted(corpus.foreign) == sorted(de for de, _ in GERMAN) and corpus.id.str.startswith("news.de-").all()
    assert sorted(corpus.reference) == sorted(en for _, en in GERMAN)
    manifest = read_manifest(work / "backtranslate" / "latest")
    assert manifest["model"] == "marian" and manifest["rows"]["pairs"] == len(GERMAN)
    assert read_manifest(work / "ingest" / "latest")["languages"] == {"source": ["de"], "target": "en"}
    assert not (work / "nmt-train").exists() and (work / "nmt-import" / "latest" / "ct2" / "model.bin").is_file()


def test_one_english_file_with_several_pivots_gives_a_pair_per_pivot(luigi_workdir, tmp_path, hf_models, accepting_random_translations):
    czech, english = demo_lines()
    pairs = list(zip(czech[:12], english[:12], strict=True))
    german = line_aligned(tmp_path, "multi", "deu", [(de, en) for (de, _), (_, en) in zip(GERMAN, pairs, strict=True)])
    czech_file = tmp_path / "multi.ces"
    czech_file.write_text("".join(f"{cs}\n" for cs, _ in pairs), encoding="utf-8")
    inputs = f"{german},{czech_file}"
    units = resolve_inputs(inputs, "de,cs")
    assert {(unit.language, unit.partner) for unit in units} == {("de", str(tmp_path / "multi.eng")), ("cs", str(tmp_path / "multi.eng"))}
    stats = CorpusStats(inputs=inputs, source_language="de,cs", translator=str(hf_models["m2m_100"]), word_counts="")
    assert luigi.build([stats], local_scheduler=True, log_level="WARNING")
    back = BackTranslate(inputs=inputs, source_language="de,cs", translator=str(hf_models["m2m_100"]))
    pairs_read = pd.read_parquet(back.output_dir / "pairs")
    assert pairs_read.groupby("pivot").size().to_dict() == {"cs": 12, "de": 12}
    assert pairs_read.id.is_unique and set(pairs_read.reference) == {en for _, en in pairs}
    assert list(pairs_read.columns) == schemas.PAIRS.names
    assert read_manifest(stats.output_dir)["pairs_per_pivot"] == {"cs": 12, "de": 12}


def test_language_mistakes_are_one_line(tmp_path, hf_models):
    news = line_aligned(tmp_path, "x", "de", GERMAN[:2])
    with pytest.raises(InputError, match="'xx' is not a language code"):
        resolve_inputs(str(news), "xx")
    with pytest.raises(InputError, match="English"):
        resolve_inputs(str(news), "en")
    assert resolve_inputs(str(news), "deu")[0].partner == str(tmp_path / "x.en")
    with pytest.raises(InputError, match="the fairseq engine takes fairseq models only"):
        BackTranslate(inputs=str(news), source_language="de", translator=str(hf_models["marian"]), engine="fairseq").requires()
    with pytest.raises(InputError, match="the translator has no language code for 'tlh'"):
        published.tokenization(published.load_tokenizer(hf_models["m2m_100"]), "m2m_100", "tlh")
    with pytest.raises(InputError, match="holds no translator"):
        ImportTranslator(translator=str(tmp_path), source_language="de").check_inputs()


def test_the_columns_a_0_3_table_lacks_are_renamed_and_added():
    old = pd.DataFrame({"id": ["a"], "cs": ["Ahoj."], "reference": ["Hello."]})
    upgraded = schemas.upgraded(pa.Table.from_pandas(old, preserve_index=False))
    assert upgraded.column_names == ["id", "pivot", "foreign", "reference"]
    assert upgraded.column("pivot").to_pylist() == ["cs"] and upgraded.column("foreign").to_pylist() == ["Ahoj."]
    assert schemas.upgraded_names(["id", "cs"]) == ["id", "pivot", "foreign"]


def test_a_published_translator_that_says_one_sentence_stops_back_translation_in_one_line(tmp_path, hf_models):
    """A random-weight Marian model says one sentence for the 12 German lines (issue 52: the
    first GPU run's model did for 2,218): BackTranslate stops before the corpus is built."""
    news = line_aligned(tmp_path, "news", "de", GERMAN)
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "BuildParaNMT", "--local-scheduler",
               "--inputs", f"{news}::{tmp_path / 'news.en'}", "--source-language", "de", "--translator", str(hf_models["marian"])]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 30 and "Traceback" not in output, output
    assert any("the translations of marian look broken: distinct translations per distinct source is" in line
               and "--BackTranslate-accept-translations distinct goes on anyway" in line for line in output.splitlines()), output
    assert not (tmp_path / "work" / "backtranslate" / "latest").exists() and not (tmp_path / "work" / "corpus").exists()


def test_a_translator_that_says_one_sentence_stops_before_the_bitext_is_translated(tmp_path, hf_models):
    """With ten times --first-check sentences to translate, BackTranslate checks the first ones
    before the run (issue 52: a broken translator found after the whole bitext costs its GPU
    hours): it stops in one line, and no shard is translated."""
    numbered = [(f"{de} ({n})", f"{en} ({n})") for n in range(10) for de, en in GERMAN]
    news = line_aligned(tmp_path, "news", "de", numbered)
    command = [sys.executable, "-m", "luigi", "--module", "workflows", "BackTranslate", "--local-scheduler", "--first-check", "10",
               "--inputs", f"{news}::{tmp_path / 'news.en'}", "--source-language", "de", "--translator", str(hf_models["marian"])]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 30 and "Traceback" not in output, output
    assert any("translation check of the first 10 sentences: distinct 0.1" in line for line in output.splitlines()), output
    assert any("the translations of marian look broken: distinct translations per distinct source is" in line
               and "--BackTranslate-accept-translations distinct goes on anyway" in line for line in output.splitlines()), output
    assert not list((tmp_path / "work" / "backtranslate").rglob("*.parquet"))
