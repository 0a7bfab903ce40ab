"""The trained toy model: resumed training, both engines, the score definition, the source rules."""

import io
import json
import re

import numpy as np
import pytest
import torch
from nmt_fixtures import EPOCHS_FIRST, EPOCHS_TOTAL, tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture

from models.nmt import convert, export, fairseq_train
from models.nmt.model import NmtModel
from models.nmt.translate import (
    CPU_FORCED_TOKENS,
    GPU_BATCH_TOKENS,
    DecodeOptions,
    default_batch_tokens,
    forced_batch_tokens,
    load_translator,
    token_batches,
)

TIE = 2e-3  # score differences between the engines' float32 kernels stay well below this


@pytest.fixture(scope="module")
def test_sentences():
    return [cs for cs, _ in toy_pairs(120, seed=5)]


def test_second_training_call_resumed_from_the_last_checkpoint(tiny_nmt):
    first_epochs = [line for line in tiny_nmt.first_log if "| valid on" in line]
    assert len(first_epochs) == EPOCHS_FIRST
    loaded = [line for line in tiny_nmt.resumed_log if "Loaded checkpoint" in line]
    assert loaded and "checkpoint_last.pt" in loaded[0] and f"(epoch {EPOCHS_FIRST + 1} @" in loaded[0]
    resumed_epochs = [line for line in tiny_nmt.resumed_log if "| valid on" in line]
    assert f"epoch {EPOCHS_FIRST + 1:03d}" in resumed_epochs[0]


@pytest.mark.slow  # one more 8-epoch training (~30 s); needs no shared data
def test_a_resumed_training_ends_with_the_uninterrupted_weights(tiny_nmt):
    """The fixture trained EPOCHS_FIRST epochs, then resumed to EPOCHS_TOTAL; fairseq alone
    composed the resumed epochs' batches differently (models.nmt.resumable_train)."""
    config = fairseq_train.TrainConfig(preset="tiny", max_epoch=EPOCHS_TOTAL, lr=3e-3, warmup_updates=30, save_interval_updates=0)
    fairseq_train.train(tiny_nmt.root / "data-bin", tiny_nmt.root / "uninterrupted", config, True)
    load = lambda path: torch.load(path, weights_only=False)["model"]  # noqa: E731
    resumed, uninterrupted = load(tiny_nmt.root / "checkpoints" / "checkpoint_last.pt"), load(tiny_nmt.root / "uninterrupted" / "checkpoint_last.pt")
    assert resumed.keys() == uninterrupted.keys()
    assert all(torch.equal(resumed[name], uninterrupted[name]) for name in resumed)


def test_epochs_shorter_than_the_save_interval_validate_and_save_every_few_epochs_and_at_the_last(tiny_nmt, tmp_path):
    """Issue 52: a 200-pair corpus's epoch is a few updates, and a validation and two saves at
    each epoch's end took most of the training's time; now every few epochs, the last included."""
    data = tiny_nmt.root / "data-bin"
    per_epoch = fairseq_train.updates_per_epoch(data, fairseq_train.PRESETS["tiny"]["max_tokens"])
    config = fairseq_train.TrainConfig(preset="tiny", max_epoch=6, lr=3e-3, warmup_updates=30, save_interval_updates=3 * per_epoch + 1)
    assert config.epochs_per_save(per_epoch) == 3
    assert fairseq_train.TrainConfig(preset="tiny", max_epoch=7, save_interval_updates=3 * per_epoch).epochs_per_save(per_epoch) == 1  # 7 is prime
    log: list[str] = []
    fairseq_train.train(data, tmp_path / "checkpoints", config, True, log.append)
    validated = [int(re.search(r"epoch (\d+)", line).group(1)) for line in log if "| valid on" in line]
    assert validated == [3, 6], "\n".join(log[-30:])
    assert sum("Saved checkpoint" in line for line in log) == 2
    first_epoch = next(line for line in log if "epoch 001 |" in line and "num_updates" in line and "valid on" not in line)
    updates = int(first_epoch.split("num_updates ")[1].split()[0])
    assert 0.7 * updates <= per_epoch <= 1.3 * updates, (per_epoch, first_epoch)


def test_training_progress_is_read_in_both_of_fairseqs_log_formats(tiny_nmt):
    """fairseq-train's own format, and logging's default, which it gets when a module logs first
    (TrainTranslator's progress showed no training line at all then)."""
    lines = {"INFO:train_inner:epoch 001:     50 / 2160 loss=9.1, nll_loss=8.9, ppl=478.6, wps=3858, ups=4.2, wpb=929.2, bsz=76.2, num_updates=50":
             "epoch 001:     50 / 2160 loss=9.1",
             "INFO:valid:epoch 001 | valid on 'valid' subset | loss 5.371 | nll_loss 5.105 | num_updates 25": "epoch 001 | valid on 'valid' subset",
             "2026-11-27 10:01:02 | INFO | train | epoch 002 | loss 6.502 | num_updates 50": "epoch 002 | loss 6.502",
             "2026-11-27 10:01:02 | INFO | train_inner | epoch 002:     50 / 60 loss=4.2": "epoch 002:     50 / 60 loss=4.2"}
    for line, start in lines.items():
        assert fairseq_train.progress_message(line).startswith(start), line
    for other in ("INFO:fairseq.trainer:begin training epoch 1", "2026-11-27 | INFO | fairseq_cli.train | task: translation",
                  "Saved checkpoint x.pt"):
        assert fairseq_train.progress_message(other) is None
    read = [fairseq_train.progress_message(line) for line in tiny_nmt.first_log]
    assert any(message and "valid on" not in message for message in read), "\n".join(tiny_nmt.first_log[-20:])  # a real run's training lines


def test_auto_picks_the_model_by_the_corpus_size_and_the_device():
    sizes = (400, 19_999, 20_000, 98_000, 999_999, 1_000_000, 51_400_000)
    assert [fairseq_train.preset_for(n, "cuda") for n in sizes] == ["tiny", "tiny", "small", "small", "small", "base", "base"]
    assert [fairseq_train.preset_for(n, "cpu") for n in sizes] == ["tiny", "tiny", "compact", "compact", "compact", "base", "base"]


def test_the_compact_preset_validates_and_stops_within_its_budget():
    """Validated (and the collapse watched) every 500 updates, stopped after 5,000 updates, not by a
    clock (the same weights on any machine); a user's --max-update wins; other presets have no budget."""
    args = fairseq_train.TrainConfig(preset="compact").arguments(True, updates_per_epoch=660)
    assert args[args.index("--save-interval-updates") + 1] == "500"
    assert args[args.index("--max-update") + 1] == "5000" and "--stop-time-hours" not in args
    own = fairseq_train.TrainConfig(preset="compact", max_update=300).arguments(True, updates_per_epoch=660)
    assert [own[i + 1] for i, arg in enumerate(own) if arg == "--max-update"] == ["300"]
    assert "--max-update" not in fairseq_train.TrainConfig(preset="small").arguments(True)
    assert fairseq_train.TrainConfig(preset="small").value("save_interval_updates") == 2000
    assert fairseq_train.TrainConfig(preset="compact", save_interval_updates=0).value("save_interval_updates") == 0


def test_auto_past_the_cpus_presets_says_what_it_trains_and_about_how_long():
    line = "epoch 001:     50 / 9000 loss=9.1, nll_loss=8.6, ppl=400, wps=900, ups=0.05, wpb=18000, bsz=600, num_updates=50, lr=1e-05"
    assert fairseq_train.updates_a_second(line) == 0.05 and fairseq_train.updates_a_second("epoch 001 | valid on 'valid' subset") is None
    said = fairseq_train.budget_line(fairseq_train.TrainConfig(preset="base"), 1_200_000, 9_000, 0.05)
    assert said.startswith("base on this CPU for 1,200,000 pairs: up to 180,000 updates (20 epochs of ~9,000)") and "about 42 days" in said
    assert "up to 5,000 updates" in fairseq_train.budget_line(fairseq_train.TrainConfig(preset="compact"), 98_000, 700, 0.7)


def test_model_learned_the_toy_language(tiny_nmt):
    pairs = toy_pairs(100, seed=6)
    hypotheses = load_translator(tiny_nmt.model).translate([cs for cs, _ in pairs])
    heads = [h.text.split()[:3] == en.split()[:3] for h, (_, en) in zip(hypotheses, pairs, strict=True)]
    assert np.mean(heads) >= 0.8


def test_ctranslate2_and_fairseq_pick_the_same_hypothesis_with_the_same_score(tiny_nmt, test_sentences):
    ct2 = load_translator(tiny_nmt.model, "ctranslate2").translate(test_sentences)
    fairseq = load_translator(tiny_nmt.model, "fairseq").translate(test_sentences)
    same = [a.text == b.text for a, b in zip(ct2, fairseq, strict=True)]
    assert np.mean(same) >= 0.95
    for a, b in zip(ct2, fairseq, strict=True):
        # Where the engines disagree, the two hypotheses must be tied within float noise.
        assert abs(a.score - b.score) < TIE
        if a.text == b.text:
            assert a.n_tokens == b.n_tokens


def test_a_pre_norm_model_like_the_fast_preset_converts_and_both_engines_agree(tiny_nmt, test_sentences, tmp_path):
    """The `fast` preset puts layer norm before each sublayer; CTranslate2's converter must carry
    that over (a post-norm conversion of it would translate differently)."""
    assert "--encoder-normalize-before" in fairseq_train.PRESETS["fast"]["arch"]
    config = fairseq_train.TrainConfig(preset="tiny", max_epoch=3, lr=3e-3, warmup_updates=30, save_interval_updates=0,
                                       extra_args="--encoder-normalize-before --decoder-normalize-before")
    checkpoint = fairseq_train.train(tiny_nmt.root / "data-bin", tmp_path / "checkpoints", config, True)
    assert torch.load(checkpoint, weights_only=False)["cfg"]["model"].encoder_normalize_before
    convert.convert(str(checkpoint), str(tiny_nmt.root / "data-bin"), tmp_path / "ct2")
    model = NmtModel(str(checkpoint), tiny_nmt.model.data_dir, tiny_nmt.model.spm_source, tiny_nmt.model.spm_target,
                     *fairseq_train.model_positions(str(checkpoint)), str(tmp_path / "ct2"))
    ct2 = load_translator(model, "ctranslate2").translate(test_sentences[:40])
    fairseq = load_translator(model, "fairseq").translate(test_sentences[:40])
    assert np.mean([a.text == b.text for a, b in zip(ct2, fairseq, strict=True)]) >= 0.95
    assert all(abs(a.score - b.score) < TIE for a, b in zip(ct2, fairseq, strict=True))


@pytest.mark.parametrize("engine", ["ctranslate2", "fairseq"])
def test_forced_decoding_gives_a_models_own_translation_its_beam_score(tiny_nmt, test_sentences, engine):
    """A translation made elsewhere is scored as the model's own would be: scoring the model's
    own best hypotheses by forced decoding gives their beam scores back; another sentence scores
    lower; sources or translations without a piece get None."""
    translator = load_translator(tiny_nmt.model, engine)
    own = translator.translate(test_sentences)
    forced = translator.score(test_sentences, [h.text for h in own])
    assert all(abs(f.score - h.score) < TIE and f.n_tokens == h.n_tokens for f, h in zip(forced, own, strict=True))
    shifted = translator.score(test_sentences, [h.text for h in own[1:] + own[:1]])
    assert np.mean([s.score < h.score for s, h in zip(shifted, own, strict=True)]) >= 0.95
    assert translator.score(["", test_sentences[0]], [own[0].text, ""]) == [None, None]


def test_both_engines_score_a_translation_alike(tiny_nmt, test_sentences):
    translations = [en for _, en in toy_pairs(len(test_sentences), seed=9)]
    ct2, fairseq = (load_translator(tiny_nmt.model, engine).score(test_sentences, translations) for engine in ("ctranslate2", "fairseq"))
    assert all(abs(a.score - b.score) < TIE for a, b in zip(ct2, fairseq, strict=True))


def test_score_is_the_mean_log_probability_per_token_with_end_of_sentence(tiny_nmt, test_sentences):
    translator = load_translator(tiny_nmt.model, "ctranslate2")
    hypotheses = translator.translate(test_sentences[:20])
    sources = translator.codec.encode(test_sentences[:20])
    targets = [translator.codec.target.encode(h.text, out_type=str) for h in hypotheses]
    for hypothesis, scored in zip(hypotheses, translator.translator.score_batch(sources, targets), strict=True):
        assert len(scored.log_probs) == hypothesis.n_tokens
        assert hypothesis.score == pytest.approx(np.mean(scored.log_probs), abs=1e-3)
        assert hypothesis.score < 0


@pytest.mark.parametrize("engine", ["ctranslate2", "fairseq"])
def test_length_limit_holds_in_both_engines(tiny_nmt, test_sentences, engine):
    translator = load_translator(tiny_nmt.model, engine, DecodeOptions(max_len_a=0, max_len_b=3))
    hypotheses = translator.translate(test_sentences[:10])
    assert max(h.n_tokens for h in hypotheses) == 4  # three pieces and the end of sentence
    assert all(np.isfinite(h.score) for h in hypotheses)


def test_long_sources_are_truncated_and_empty_ones_refused(tiny_nmt):
    translator = load_translator(tiny_nmt.model, "ctranslate2", DecodeOptions(max_source_tokens=6))
    short, long_, empty, blank = translator.translate(["Pes.", "Pes vidí kočka ryba strom řeka.", "", "  \t "])
    assert short.truncated is False and long_.truncated is True
    assert empty is None and blank is None
    model_limit = load_translator(tiny_nmt.model, "ctranslate2")
    assert model_limit.max_source_tokens == tiny_nmt.model.max_source_positions - 1
    (huge,) = model_limit.translate([" ".join(["pes"] * 400)])
    assert huge.truncated and huge.n_tokens >= 1


def test_int8_compute_type_translates_too(tiny_nmt, test_sentences):
    int8 = load_translator(tiny_nmt.model, "ctranslate2", compute_type="int8").translate(test_sentences[:20])
    float32 = load_translator(tiny_nmt.model, "ctranslate2").translate(test_sentences[:20])
    assert all(h.text and np.isfinite(h.score) for h in int8)
    # The tiny fixture model is barely trained, so int8 rounding flips near-tied beams: on AVX2
    # machines 12 of 20 outputs match exactly (0.7 held only where the int8 kernels differ).
    assert np.mean([a.text == b.text for a, b in zip(int8, float32, strict=True)]) >= 0.5


def test_ctranslate2_scores_do_not_depend_on_the_thread_count(tiny_nmt, test_sentences):
    """A Dask worker translates on one core, the DirectRunner on its cores per worker: the same
    bytes need the same scores. In chunks of 10 sentences, one thread and two on one replica gave 12
    of 120 scores a unit in the last place apart with oneDNN (CTranslate2's default on AMD CPUs), 20
    with MKL's default mode; a replica a core, each on one thread (models.nmt.translate.ct2_threads), none
    (the compact model on csen-more, float32: 310 of 400 apart on one replica of two threads, none on
    two replicas; docs/2026-12-07-cpu-decoding.md)."""
    one, two = (load_translator(tiny_nmt.model, "ctranslate2", device="cpu", threads=n) for n in (1, 2))
    assert (one.translator.num_translators, two.translator.num_translators) == (1, 2)
    assert ([(h.text, h.score) for h in one.translate_many(test_sentences, 10, False)]
            == [(h.text, h.score) for h in two.translate_many(test_sentences, 10, False)])


def test_token_batches_respect_the_budget():
    lengths = [1, 2, 2, 3, 5, 9, 30]
    batches = list(token_batches(lengths, budget=10))
    assert [lengths[b] for b in batches] == [[1, 2, 2], [3, 5], [9], [30]]
    assert sum(b.stop - b.start for b in batches) == len(lengths)
    assert list(token_batches([], budget=10)) == []


def test_forced_decoding_batches_are_small_on_the_cpu_unless_the_user_sets_a_budget():
    assert forced_batch_tokens("cpu", 0, 12) == CPU_FORCED_TOKENS < default_batch_tokens("cpu", 12) * 12
    assert forced_batch_tokens("cpu", 40, 12) == 40 * 12
    assert forced_batch_tokens("cuda", 0, 12) == GPU_BATCH_TOKENS * 12


def test_nmt_json_names_files_in_the_work_directory_relative_to_itself(tmp_path):
    work, given = tmp_path / "work", tmp_path / "mine" / "model.pt"
    model = NmtModel(str(given), "data-bin", str(work / "nmt-spm" / "a" / "spm.model"), str(work / "nmt-spm" / "a" / "spm.model"), 256, 256,
                     str(work / "nmt-ct2" / "b" / "ct2"))
    (work / "nmt-ct2" / ".b.partial").mkdir(parents=True)
    saved = json.loads(model.save(work / "nmt-ct2" / ".b.partial", relative_within=work).read_text())
    assert (saved["checkpoint"], saved["data_dir"], saved["spm_source"], saved["ct2_dir"]) == (
        str(given), "data-bin", "../../nmt-spm/a/spm.model", "../b/ct2")
    (work / "nmt-ct2" / ".b.partial").rename(work / "nmt-ct2" / "b")
    moved = tmp_path / "elsewhere"
    work.rename(moved)
    loaded = NmtModel.load(moved / "nmt-ct2" / "b")  # read where the work directory is now
    assert (loaded.checkpoint, loaded.spm_target, loaded.ct2_dir) == (str(given), str(moved.resolve() / "nmt-spm/a/spm.model"),
                                                                      str(moved.resolve() / "nmt-ct2/b/ct2"))


def test_export_saves_tied_embeddings_once_even_when_the_checkpoint_holds_copies(tiny_nmt, tmp_path):
    """A checkpoint saved from a GPU holds each tied embedding as its own copy (fairseq moves the
    weights to the CPU one by one); the float16 export ties them again, with the same values."""
    state = torch.load(tiny_nmt.model.checkpoint, weights_only=False)
    tied = ["encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight"]
    assert len({state["model"][name].untyped_storage().data_ptr() for name in tied}) == 1
    state["model"] = {name: value.clone() for name, value in state["model"].items()}
    torch.save(state, tmp_path / "copies.pt")
    shared, copies = export.slim_checkpoint(tiny_nmt.model.checkpoint), export.slim_checkpoint(tmp_path / "copies.pt")
    assert len(copies) == len(shared)
    weights = torch.load(io.BytesIO(copies), weights_only=False)["model"]
    assert len({weights[name].untyped_storage().data_ptr() for name in tied}) == 1
    original = torch.load(tiny_nmt.model.checkpoint, weights_only=False)["model"]
    assert weights.keys() == original.keys()
    assert all(torch.equal(weights[name], original[name].half()) for name in original)
