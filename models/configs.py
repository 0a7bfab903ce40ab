"""The settings of the encoders and of their training, without torch.

The Luigi layer declares its command-line parameters from these dataclasses when it is
imported, and every ``luigi --module workflows`` command imports all of it: keeping torch out
of here keeps it (250 MB of the process's own memory, 1.3 s) out of the stages that never
train or run an encoder. ``models.encoders`` builds the models these names choose.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from corpus.errors import InputError
from corpus.settings import setting
from corpus.sts import DEV_SETS

# Encoder architectures (models.encoders registers a builder under each name).
MODEL_NAMES = (
    "word_avg", "trigram_avg", "lstm_avg", "bilstm_avg", "trigram_word", "trigram_word_lstm", "cse", "proj", "dan", "rnn", "irnn",
    "lstm_gate", "lstm_nogate",
)
NEGATIVE_MODES = ("max", "mix", "rand")
NEGATIVE_SIDES = ("both", "partner")
LR_SCHEDULES = ("constant", "linear")


@dataclass
class EncoderConfig:
    """Architecture and featurization; saved as ``config.json`` beside the weights."""

    model: str = setting("word_avg", "Encoder architecture.", choices=sorted(MODEL_NAMES))
    dim: int = setting(300, "Output size of LSTM/BiLSTM (both directions)/projection/DAN/RNN models; averaging models output their embedding size.")
    embed_dim: int = setting(0, "Embedding size; 0: the word vectors' size, else 300.")
    tokens: str = setting("pieces", "Token features: sentencepiece pieces, or Moses words (needed with --word-vectors).", choices=("pieces", "words"))
    combine: str = setting("concat", "Mixed models: concatenate or add the outputs.", choices=("concat", "add"))
    dropout: float = setting(0.0, "Dropout on token embeddings (averaging models: on the mean).")
    dan_layers: int = 2
    activation: str = "tanh"  # DAN and RNN nonlinearity: "tanh" or "relu"
    cnn_widths: tuple[int, ...] = (1, 2, 3)
    cnn_maps: int = 100
    min_count: int = setting(1, "Words seen fewer times in training become UNK.")
    max_vocab: int = setting(0, "Most frequent training words kept (0: all).")
    trigram_min_count: int = 1
    max_trigrams: int = 0
    spm_vocab_size: int = setting(20_000, "Sentencepiece pieces (upper bound).")

    @classmethod
    def from_dict(cls, values: dict) -> EncoderConfig:
        known = {f.name for f in fields(cls)}
        config = cls(**{k: v for k, v in values.items() if k in known})
        config.cnn_widths = tuple(config.cnn_widths)
        return config

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainConfig:
    """Optimisation settings; defaults are the paper's (section 6.2) except the negatives, the
    learning rate and the development set, chosen on real pairs (README)."""

    batch_size: int = setting(100, "Pairs per update.")
    margin: float = setting(0.4, "Margin δ of the hinge loss.")
    # 0.008, not the paper's 0.001: with STS-B dev selecting, it gives +2.2 STS 2012–2016 points for
    # Word Avg and +1.6 for Trigram Avg on the reference pairs in 5 epochs (README, issue 9).
    lr: float = setting(0.008, "Adam learning rate (the paper: 0.001).")
    lr_schedule: str = setting("constant", "Learning rate over the run: constant, or falling linearly from --lr to 0 at the end of the last epoch.",
                               choices=LR_SCHEDULES)
    epochs: int = setting(5, "Passes over the training pairs.")
    megabatch: int = setting(40, "Mini-batches pooled to choose negatives (M; 1: in-batch).")
    megabatch_anneal: int = setting(0, "M grows by 1 every N updates, from 1 up to --megabatch (0: M from the start).")
    negatives: str = setting("max", "Negative selection.", choices=NEGATIVE_MODES)
    # Negatives (models.losses.hardest_negatives): semi-hard, from the partner's side; the paper
    # searched both sides without the semi-hard rule, which collapses on real pairs (README).
    negative_side: str = setting("partner", "Negative candidates: only the partner's side, or any pool sentence (the paper).", choices=NEGATIVE_SIDES)
    below_partner: bool = setting(True, "Semi-hard: only negatives less similar to the anchor than its partner (false: the paper's hardest).")
    # A reference translated by many systems is in many pairs, and a large pool holds several of
    # them: their sentences are paraphrases of the anchor (docs/2026-12-01-real-mt-corpus.md).
    group_negatives: bool = setting(False, "Never a negative from a pair that shares a sentence with the anchor's pair, directly or through others "
                                           "(one reference's translations, one image's captions), unless no other candidate is left.")
    scramble: float = setting(0.3, "Probability a pair's word order is shuffled (recurrent models).")
    lambda_c: float = setting(0.0, "L2 weight on compositional parameters.")
    lambda_w: float = setting(0.0, "L2 weight pulling word embeddings to their initial values.")
    seed: int = setting(1, "Random seed (data order, initialisation, negatives).")
    max_steps: int = setting(0, "Stop after this many updates (0: all epochs).")
    dev_set: str = setting("stsb-dev", "Development set that picks the kept weights: STS-B dev (1,500 pairs) or the paper's STS 2017 track 5 (250).",
                           choices=DEV_SETS)
    eval_every: int = setting(0, "Dev evaluation every N updates (0: each epoch end).")
    checkpoint_every: int = setting(1000, "Updates between resumable checkpoints (also at each evaluation).", significant=False)
    device: str = setting("auto", "auto (cuda when available), cpu, cuda, cuda:1 …", significant=False)

    def validate(self) -> None:
        """InputError (one line, before any work) for settings no run can have."""
        if self.negatives not in NEGATIVE_MODES:
            raise InputError(f"negatives must be one of {NEGATIVE_MODES}, got {self.negatives!r}")
        if self.dev_set not in DEV_SETS:
            raise InputError(f"dev_set must be one of {DEV_SETS}, got {self.dev_set!r}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise InputError(f"lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if self.negative_side not in NEGATIVE_SIDES:
            raise InputError(f"negative_side must be one of {NEGATIVE_SIDES}, got {self.negative_side!r}")
        if self.batch_size < 1 or self.megabatch < 1 or self.epochs < 1:
            raise InputError(f"batch size, megabatch and epochs must be at least 1, got {self.batch_size}, {self.megabatch}, {self.epochs}")
        if self.megabatch_anneal < 0:
            raise InputError(f"megabatch_anneal must be 0 or more, got {self.megabatch_anneal}")
        if not 0.0 <= self.scramble <= 1.0:
            raise InputError(f"scramble is a probability, got {self.scramble}")
