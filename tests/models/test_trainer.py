"""Trainer on a synthetic paraphrase task made here: learning, reproducibility, resume,
best-checkpoint selection, pretrained vectors, and the saved model's round trip."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from scipy.stats import pearsonr

from models.configs import EncoderConfig, TrainConfig
from models.encode import load_encoder
from models.trainer import CHECKPOINT, Trainer, plan_epoch, plan_pools, train_encoder

CONTENT = [f"c{i}" for i in range(150)]
FILLER = [f"f{i}" for i in range(12)]


def sentence(content, rng) -> str:
    """Content words plus 4 random filler words, in random order."""
    return " ".join(rng.permutation(list(content) + list(rng.choice(FILLER, 4, replace=False))))


def paraphrases(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Pairs that share their 3 content words and differ in filler and order."""
    rng = np.random.default_rng(seed)
    first, second = [], []
    for _ in range(n):
        content = rng.choice(CONTENT, 3, replace=False)
        first.append(sentence(content, rng))
        second.append(sentence(content, rng))
    return first, second


def dev_set(n: int = 300, seed: int = 1):
    """Pairs sharing k = 0..3 content words; gold similarity k."""
    rng = np.random.default_rng(seed)
    first, second, gold = [], [], []
    for _ in range(n):
        content, k = rng.choice(CONTENT, 6, replace=False), int(rng.integers(0, 4))
        first.append(sentence(content[:3], rng))
        second.append(sentence([*content[:k], *content[3 : 6 - k]], rng))
        gold.append(k)
    return first, second, np.array(gold, dtype=float)


DEV = dev_set()


def dev_pearson(embed) -> float:
    a, b = embed(DEV[0]), embed(DEV[1])
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return 100 * float(pearsonr(cosine, DEV[2]).statistic)


def small(model="word_avg", **extra) -> EncoderConfig:
    return EncoderConfig(model=model, dim=8, embed_dim=8, **extra)


def weights(directory, name=CHECKPOINT) -> dict:
    state = torch.load(directory / name, weights_only=False)
    return state["encoder"] if name == CHECKPOINT else state


def test_training_lowers_the_loss_and_raises_dev_correlation(tmp_path):
    config = TrainConfig(epochs=3, batch_size=25, megabatch=4, lr=0.01)
    trainer = Trainer(paraphrases(500), tmp_path, EncoderConfig(model="word_avg", dim=16, embed_dim=16, tokens="words"), config)
    before = dev_pearson(trainer.sentence_encoder().encode)
    result = trainer.run(dev=dev_pearson)
    assert result.steps == 3 * 20 and len(result.losses) == 60
    assert np.mean(result.losses[-10:]) < 0.85 * np.mean(result.losses[:10])
    assert [step for step, _ in result.dev_scores] == [20, 40, 60]  # once per epoch by default
    assert result.best_score > before + 10  # random init gives ~57 on this task, training ~76
    assert dev_pearson(load_encoder(tmp_path, "cpu").encode) == pytest.approx(result.best_score, abs=1e-6)


def run_tiny_lstm(directory, **overrides):
    """A recurrent run that exercises every random draw: order, scrambling, MIX, dropout."""
    config = TrainConfig(epochs=2, batch_size=10, megabatch=3, negatives="mix", scramble=0.5, checkpoint_every=1, **overrides)
    return Trainer(paraphrases(80), directory, small("lstm_avg", dropout=0.2), config).run()


def test_same_seed_same_losses_and_weights(tmp_path):
    first, second = run_tiny_lstm(tmp_path / "a"), run_tiny_lstm(tmp_path / "b")
    assert first.losses == second.losses and len(first.losses) == 16
    for key, value in weights(tmp_path / "a").items():
        assert torch.equal(value, weights(tmp_path / "b")[key]), key
    other = run_tiny_lstm(tmp_path / "c", seed=2)
    assert other.losses != first.losses


def test_two_threads_give_the_same_weights_every_run(tmp_path):
    """Negatives repeat batch sentences; gathering them by advanced indexing made the backward
    accumulate in a thread-dependent order (each 2-thread run gave another model)."""
    torch.set_num_threads(2)

    def train(directory):
        config = TrainConfig(epochs=1, megabatch=4, checkpoint_every=10**9, device="cpu")
        return Trainer(paraphrases(1200), directory, EncoderConfig(model="word_avg", tokens="words"), config).run().losses

    runs = [train(tmp_path / str(run)) for run in range(3)]
    assert runs[0] == runs[1] == runs[2]
    for key, value in weights(tmp_path / "0").items():
        assert torch.equal(value, weights(tmp_path / "1")[key]) and torch.equal(value, weights(tmp_path / "2")[key]), key


class Crash(RuntimeError):
    pass


def test_annealed_pools_grow_by_one_every_n_updates_across_epochs():
    batches = [np.array([i]) for i in range(10)]
    assert [len(p) for p in plan_pools(batches, 40, 0, 0)] == [10]  # no annealing: M from the start
    assert [len(p) for p in plan_pools(batches, 3, 2, 0)] == [1, 1, 2, 3, 3]  # pools start at updates 0, 1, 2, 4, 7
    assert [len(p) for p in plan_pools(batches, 40, 2, 10)] == [6, 4]  # epoch 2 goes on from update 10
    assert np.concatenate(plan_pools(batches, 3, 2, 0)[2]).tolist() == [2, 3]  # consecutive, nothing lost


@pytest.mark.parametrize(("anneal", "last_checkpoint", "schedule"),
                         [(0, 6, "constant"), (2, 4, "constant"), (0, 6, "linear")])  # pools end at 3, 6, 9 … / 1, 2, 4, 7 …
def test_resume_after_interruption_gives_the_uninterrupted_weights(tmp_path, anneal, last_checkpoint, schedule):
    reference = run_tiny_lstm(tmp_path / "whole", megabatch_anneal=anneal, lr_schedule=schedule)

    def crash_at_step_7(step, loss):  # mid-pool: the last checkpoint is the last pool boundary before it
        if step == 7:
            raise Crash

    config = TrainConfig(epochs=2, batch_size=10, megabatch=3, negatives="mix", scramble=0.5, checkpoint_every=1, megabatch_anneal=anneal,
                         lr_schedule=schedule)
    with pytest.raises(Crash):
        Trainer(paraphrases(80), tmp_path / "cut", small("lstm_avg", dropout=0.2), config).run(on_step=crash_at_step_7)
    resumed = run_tiny_lstm(tmp_path / "cut", megabatch_anneal=anneal, lr_schedule=schedule)
    assert resumed.resumed_from == last_checkpoint and resumed.steps == reference.steps == 16
    assert resumed.losses == reference.losses[last_checkpoint:]
    for key, value in weights(tmp_path / "whole").items():
        assert torch.equal(value, weights(tmp_path / "cut")[key]), key


def test_linear_schedule_falls_from_lr_to_zero_over_every_epoch_even_when_stopped_early(tmp_path):
    config = TrainConfig(epochs=2, batch_size=10, megabatch=3, lr=0.01, lr_schedule="linear", max_steps=5)
    trainer = Trainer(paraphrases(80), tmp_path, small(), config)
    seen = []
    original = trainer.optimizer.step

    def record_lr(*args, **kwargs):
        seen.append(trainer.optimizer.param_groups[0]["lr"])
        return original(*args, **kwargs)

    trainer.optimizer.step = record_lr
    trainer.run()
    assert seen == pytest.approx([0.01 * (1 - step / 16) for step in range(5)])  # 2 epochs of 8 updates, not max_steps


def test_max_steps_stops_and_a_rerun_continues(tmp_path):
    stopped = run_tiny_lstm(tmp_path, max_steps=5)
    assert stopped.steps == 5 and len(stopped.losses) == 5
    finished = run_tiny_lstm(tmp_path)
    assert finished.resumed_from == 5 and finished.steps == 16 and len(finished.losses) == 11


def test_the_best_dev_checkpoint_is_kept(tmp_path):
    probes = []
    scores = iter([5.0, 9.0, 1.0])

    def dev(embed):
        probes.append(embed(["c1 c2 f3"]))
        return next(scores)

    result = train_encoder(paraphrases(60), tmp_path, small(), TrainConfig(epochs=3, batch_size=10, megabatch=2), dev=dev)
    assert result.best_score == 9.0 and [s for _, s in result.dev_scores] == [5.0, 9.0, 1.0]
    saved = load_encoder(tmp_path, "cpu").encode(["c1 c2 f3"])
    np.testing.assert_array_equal(saved, probes[1])
    assert not np.array_equal(saved, probes[2])


def test_saved_model_embeds_exactly_like_the_trained_one(tmp_path):
    for model, tokens in (("trigram_word", "words"), ("bilstm_avg", "pieces")):
        directory = tmp_path / model
        trainer = Trainer(paraphrases(60), directory, small(model, tokens=tokens, spm_vocab_size=120), TrainConfig(epochs=1, batch_size=20))
        trainer.run()
        probe = DEV[0][:20] + ["", "unseen words everywhere"]
        loaded = load_encoder(directory, "cpu")
        np.testing.assert_array_equal(loaded.encode(probe, batch_size=7), trainer.sentence_encoder().encode(probe, batch_size=7))
        # Batch composition only changes float rounding.
        np.testing.assert_allclose(loaded.encode(probe, batch_size=3), loaded.encode(probe), rtol=1e-5, atol=1e-6)
        assert loaded.score(["c1 c2"], ["c1 c2"])[0] == pytest.approx(1.0)


def test_pretrained_vectors_initialise_words_and_join_the_vocabulary(tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("3 8\n" + "".join(f"{w} " + " ".join(str(i + j) for j in range(8)) + "\n" for i, w in enumerate(["c1", "f2", "zebra"])))
    trainer = Trainer(paraphrases(40), tmp_path / "model", EncoderConfig(model="word_avg", dim=300, tokens="words"), TrainConfig(lambda_w=0.1),
                      word_vectors=vectors)
    assert trainer.encoder_config.embed_dim == 8
    symbols = trainer.featurizers["tokens"].vocabulary.symbols
    table = trainer.encoder.components[0].bag.weight.detach().numpy()
    assert symbols[-1] == "zebra"  # only in the vectors, appended after the training words
    assert table[symbols.index("f2")].tolist() == list(range(1, 9))
    assert table[-1].tolist() == list(range(2, 10))


def test_epoch_plan_covers_every_pair_once_and_never_leaves_a_lone_pair():
    batches = plan_epoch(201, 100, seed=1, epoch=0)
    assert [len(b) for b in batches] == [100, 101]
    assert sorted(np.concatenate(batches).tolist()) == list(range(201))
    assert not np.array_equal(np.concatenate(batches), np.concatenate(plan_epoch(201, 100, seed=1, epoch=1)))


def test_a_different_model_in_the_same_directory_is_refused(tmp_path):
    train_encoder(paraphrases(20), tmp_path, small(), TrainConfig(epochs=1, batch_size=10))
    with pytest.raises(ValueError, match="different model"):
        Trainer(paraphrases(20), tmp_path, small("trigram_avg"), TrainConfig(epochs=1))


def test_negative_groups_join_pairs_that_share_a_sentence():
    from models.training_pairs import TrainingPairs, negative_groups

    first = ["a", "a", "d", "e", "x  y", "x y", " ", "k"]
    second = ["b", "c", "c", "f", "g", "h", "z", "k2"]  # the blank pair (" ", "z") is left out of training
    groups = negative_groups(TrainingPairs.from_sentences((first, second)), True).tolist()
    assert len(groups) == 7
    # a-b, a-c, d-c: one group through "a" and "c"; e-f alone; "x  y" and "x y" are one text; k-k2 alone
    assert groups[0] == groups[1] == groups[2] and groups[4] == groups[5]
    assert len({groups[0], groups[3], groups[4], groups[6]}) == 4


def test_group_negatives_give_the_negative_choice_each_pool_pairs_group(tmp_path, monkeypatch):
    import models.trainer as trainer

    seen = []
    choose = trainer.choose_negatives

    def recording(embeddings, mode, rng, side, below_partner, groups=None):
        seen.append(groups)
        return choose(embeddings, mode, rng, side, below_partner, groups)

    monkeypatch.setattr(trainer, "choose_negatives", recording)
    first, second = paraphrases(40)
    references = [first[i // 4] for i in range(40)]  # each reference in 4 pairs, as with 4 systems
    config = TrainConfig(epochs=1, batch_size=5, megabatch=4, group_negatives=True)
    Trainer((references, second), tmp_path / "grouped", small(), config).run()
    pools = plan_pools(plan_epoch(40, 5, config.seed, 0), 4, 0, 0)
    assert len(seen) == len(pools) == 2
    for groups, pool in zip(seen, pools, strict=True):
        members = np.concatenate(pool)
        same = groups[:, None] == groups[None, :]
        assert (same == ((members[:, None] // 4) == (members[None, :] // 4))).all()
    seen.clear()
    Trainer((references, second), tmp_path / "plain", small(), TrainConfig(epochs=1, batch_size=5, megabatch=4)).run()
    assert seen == [None, None]


@pytest.mark.parametrize("mode", ["max", "mix", "rand"])
def test_siblings_are_never_each_others_negatives(tmp_path, monkeypatch, mode):
    """A corpus of several paraphrases a source (one bitext_id): without --group-negatives too,
    no anchor's negative is a sentence of its source's other pairs."""
    import models.trainer as trainer
    from models.training_pairs import TrainingPairs

    seen = []
    choose = trainer.choose_negatives

    def recording(embeddings, negatives, rng, side, below_partner, groups=None):
        chosen = choose(embeddings, negatives, rng, side, below_partner, groups)
        seen.append((groups, chosen))
        return chosen

    monkeypatch.setattr(trainer, "choose_negatives", recording)
    first, second = paraphrases(40, seed=3)
    sources = [f"src-{i // 4}" for i in range(40)]  # four paraphrases a source, the same reference
    references = [first[i // 4] for i in range(40)]
    pq.write_table(pa.table({"reference": references, "translation": second, "bitext_id": sources}), tmp_path / "pairs.parquet")
    config = TrainConfig(epochs=1, batch_size=5, megabatch=4, negatives=mode)
    Trainer(TrainingPairs.from_path(tmp_path / "pairs.parquet"), tmp_path / "model", small(), config).run()
    pools = plan_pools(plan_epoch(40, 5, config.seed, 0), 4, 0, 0)
    assert len(seen) == len(pools) == 2
    for (groups, chosen), pool in zip(seen, pools, strict=True):
        members = np.concatenate(pool)
        size = len(members)
        source_of = members // 4
        anchors = np.arange(2 * size)
        assert (groups[:, None] == groups[None, :]).tolist() == (source_of[:, None] == source_of[None, :]).tolist()
        assert (source_of[chosen % size] != source_of[anchors % size]).all()
