"""Sentence encoders of the ParaNMT paper (section 4.1), the 2016 paragram paper and CSE.

Every encoder maps featurized sentences (a dict of :class:`Ragged` id rows keyed by feature:
``"tokens"`` for words or sentencepiece pieces, ``"trigrams"`` for character trigrams) to one
vector per sentence; similarity is cosine. Models are chosen by name from :data:`MODELS`,
each built from an :class:`EncoderConfig` and the vocabulary sizes.

Components read :class:`DeviceRows`, a feature's rows already on the model's device;
:func:`on_device` moves many batches there in one copy (the trainer moves a whole pool's
updates at once), and :class:`Encoder` moves plain :class:`Ragged` inputs itself.
Averaging models use ``nn.EmbeddingBag(mode="mean")`` over the CSR rows directly; LSTMs run
on packed sequences on a GPU (cuDNN) and on the CPU on groups of similar length, padded (the
CPU's packed backward rewrites the whole input once per time step); the plain RNN runs
packed; the cells ``nn`` lacks (identity-RNN, Gers' peephole LSTM with or without output
gate) run on a time loop over the padded batch with the input projections of all steps
computed in one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

from corpus.errors import InputError
from models.configs import MODEL_NAMES, EncoderConfig
from models.ragged import Ragged
from models.vocabulary import PAD

Inputs = dict[str, Ragged]
# On the CPU, LSTM rows run together while their padded area is within this factor of their
# tokens: fewer groups cost more padding, more groups more calls (1.3: 6 groups for a
# training batch of the reference pairs, a 7x faster update than packed sequences).
PADDING_SLACK = 1.3


def _activation(name: str) -> Callable[[Tensor], Tensor]:
    return {"tanh": torch.tanh, "relu": torch.relu}[name]


@dataclass(frozen=True)
class DeviceRows:
    """A :class:`Ragged` on the model's device, its lengths also kept on the host: shapes and
    packing read those, so nothing waits for the device."""

    values: Tensor  # int64, all rows concatenated
    offsets: Tensor  # int64, rows + 1, starts at 0
    lengths: np.ndarray  # int64, on the host

    def padded(self) -> Tensor:
        """(rows, longest) ids right-padded with PAD, built on the device."""
        rows, tokens = len(self.lengths), len(self.values)
        owner = torch.repeat_interleave(torch.arange(rows, device=self.values.device), self.offsets.diff(), output_size=tokens)
        position = torch.arange(tokens, device=self.values.device) - self.offsets[owner]
        ids = self.values.new_full((rows, int(self.lengths.max(initial=0))), PAD)
        ids[owner, position] = self.values
        return ids


DeviceInputs = dict[str, DeviceRows]


def moved_together(arrays: Sequence[np.ndarray], device: torch.device) -> list[Tensor]:
    """int64 arrays on ``device`` as views of one buffer, copied in one transfer."""
    if not arrays:
        return []
    return list(torch.from_numpy(np.concatenate(arrays)).to(device).split([len(a) for a in arrays]))


def on_device(batches: Sequence[Inputs], device: torch.device) -> list[DeviceInputs]:
    """Featurized batches on ``device`` in one copy: a copy per batch costs a conversion and a
    transfer, which a GPU waits for, at every update."""
    moved = iter(moved_together([a for inputs in batches for rows in inputs.values() for a in (rows.values, rows.offsets)], device))
    return [{feature: DeviceRows(next(moved), next(moved), rows.lengths) for feature, rows in inputs.items()} for inputs in batches]


def length_groups(lengths: np.ndarray, slack: float) -> list[np.ndarray]:
    """Row indices in groups, longest rows first: each group takes the longest rows left while
    its padded area (rows × its longest) stays within ``slack`` × its tokens."""
    order = np.argsort(-lengths, kind="stable")
    ordered = lengths[order]
    ends = np.cumsum(ordered)
    groups, start = [], 0
    while start < len(order):
        # Padded area within slack for rows start..stop-1; the slack left shrinks with every
        # shorter row, so the rows that fit are the ones up to the last that does.
        stop = np.arange(start + 1, len(order) + 1)
        fits = ordered[start] * (stop - start) <= slack * (ends[stop - 1] - ends[start] + ordered[start])
        stop = int(stop[np.flatnonzero(fits)[-1]])
        groups.append(order[start:stop])
        start = stop
    return groups


class Component(nn.Module):
    """One encoder reading one feature; ``table`` is its embedding matrix (``Ww``)."""

    feature = "tokens"
    scrambles = False  # word-order sensitive: the trainer scrambles its inputs
    anchored = False  # compositional weights regularized back to their initial values (λc)
    length_bound = True  # its cost follows a batch's longest row: batches of similar lengths save work
    out_dim: int

    def __init__(self, feature: str):
        super().__init__()
        self.feature = feature

    def embedding_tables(self) -> list[nn.Parameter]:
        return [m.weight for m in self.modules() if isinstance(m, nn.Embedding | nn.EmbeddingBag)]


class BagAverage(Component):
    """Mean of embeddings (Word Avg, Trigram Avg); optional layers on top (projection, DAN)."""

    length_bound = False  # reads the CSR rows as they are, each row on its own

    def __init__(self, feature: str, vocab: int, dim: int, dropout: float, layers: list[nn.Module] | None = None, activation: str | None = None):
        super().__init__(feature)
        # No padding_idx: bags never contain PAD, and padding_idx selects a ~10x slower CPU kernel.
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(layers or [])
        self.activation = _activation(activation) if activation else None
        self.out_dim = self.layers[-1].out_features if self.layers else dim

    def forward(self, rows: DeviceRows) -> Tensor:
        out = self.dropout(self.bag(rows.values, rows.offsets[:-1]))
        for layer in self.layers:
            out = layer(out)
            if self.activation:
                out = self.activation(out)
        return out


class _Sequence(Component):
    """Base of models that read the padded id matrix through a dropout-regularized embedding."""

    def __init__(self, feature: str, vocab: int, embed_dim: int, dropout: float):
        super().__init__(feature)
        self.embedding = nn.Embedding(vocab, embed_dim, padding_idx=PAD)
        self.dropout = nn.Dropout(dropout)

    def embed(self, rows: DeviceRows) -> tuple[Tensor, Tensor]:
        """(embedded inputs (batch, time, embed_dim), lengths), both on the device."""
        return self.dropout(self.embedding(rows.padded())), rows.offsets.diff()


def _mask(lengths: Tensor, steps: int) -> Tensor:
    """(batch, steps, 1) float mask of real positions (``lengths`` where the mask is made)."""
    return (torch.arange(steps, device=lengths.device)[None, :] < lengths[:, None]).unsqueeze(-1).float()


class LSTMAverage(_Sequence):
    """Mean of the LSTM hidden states over real positions (LSTM Avg, BiLSTM Avg).

    BiLSTM: the forward and backward states are each averaged over the sentence and the two
    means concatenated (``dim`` = 2 × hidden size), as in the authors' code.
    """

    scrambles = True

    def __init__(self, feature: str, vocab: int, embed_dim: int, dim: int, dropout: float, bidirectional: bool):
        super().__init__(feature, vocab, embed_dim, dropout)
        if bidirectional and dim % 2:
            raise InputError(f"BiLSTM output size must be even (two directions), got {dim}")
        hidden = dim // 2 if bidirectional else dim
        self.lstm = nn.LSTM(embed_dim, hidden, batch_first=True, bidirectional=bidirectional)
        self.out_dim = dim

    def forward(self, rows: DeviceRows) -> Tensor:
        tokens = self.dropout(self.embedding(rows.values))
        state_sums = self._grouped_state_sums if tokens.device.type == "cpu" else self._packed_state_sums
        sums = state_sums(tokens, rows)
        return sums / rows.offsets.diff().to(sums.dtype)[:, None]

    def _packed_state_sums(self, tokens: Tensor, rows: DeviceRows) -> Tensor:
        """Each row's states summed over its tokens, the rows run as one packed batch (cuDNN).
        The tokens are put in packed order on the device, from lengths sorted there:
        ``pack_padded_sequence`` copies once per length and time step, and waits for its sort
        order to reach the device, at every call."""
        lengths, device = rows.offsets.diff(), tokens.device
        rank = torch.argsort(torch.sort(lengths, descending=True, stable=True).indices)  # of each row, longest first
        steps = int(rows.lengths.max())
        batch_sizes = len(rows.lengths) - np.cumsum(np.bincount(rows.lengths, minlength=steps))[:steps]  # rows longer than t
        per_step = (lengths[None, :] > torch.arange(steps, device=device)[:, None]).sum(dim=1)  # batch_sizes, on the device
        before = torch.cumsum(per_step, 0) - per_step
        owner = torch.repeat_interleave(torch.arange(len(rows.lengths), device=device), lengths, output_size=len(tokens))
        position = torch.arange(len(tokens), device=device) - rows.offsets[owner]
        packed_at = before[position] + rank[owner]  # step t of a row: after the tokens of steps < t, in rank order
        states = self.lstm(PackedSequence(tokens.index_select(0, torch.argsort(packed_at)), torch.from_numpy(batch_sizes)))[0].data
        return nn.functional.embedding_bag(packed_at, states, rows.offsets[:-1], mode="sum")

    def _grouped_state_sums(self, tokens: Tensor, rows: DeviceRows) -> Tensor:
        """Each row's states summed over its tokens, the rows run padded in groups of similar
        length (:func:`length_groups`); the backward direction reads each row reversed, so it
        starts at the row's last token. The sums of packed sequences, float rounding aside."""
        starts = np.cumsum(rows.lengths) - rows.lengths
        sums, order = [], []
        for group in length_groups(rows.lengths, PADDING_SLACK):
            lengths, position = rows.lengths[group, None], np.arange(rows.lengths[group[0]])
            mask = torch.from_numpy(position < lengths).to(tokens.dtype)[:, :, None]
            # The token each direction reads at each step (pads repeat a real one; their states are masked).
            read = [np.minimum(position, lengths - 1), np.maximum(lengths - 1 - position, 0)]
            directions = []
            for at, weights in zip(read[: len(self.lstm.all_weights)], self.lstm.all_weights, strict=True):
                x = tokens.index_select(0, torch.from_numpy((starts[group, None] + at).ravel())).view(*at.shape, -1)
                directions.append((self._direction(x, weights) * mask).sum(dim=1))
            sums.append(torch.cat(directions, dim=1))
            order.append(group)
        return torch.cat(sums).index_select(0, torch.from_numpy(np.argsort(np.concatenate(order))))

    def _direction(self, x: Tensor, weights: list[Tensor]) -> Tensor:
        """States of one direction's weights read left to right over ``x`` (batch, time, embed)."""
        zeros = x.new_zeros(1, x.shape[0], self.lstm.hidden_size)
        return torch.lstm(x, (zeros, zeros), weights, True, 1, 0.0, self.training, False, True)[0]


class LastStateRNN(_Sequence):
    """Plain RNN (2016 paper): the hidden state after the last token."""

    scrambles = True

    def __init__(self, feature: str, vocab: int, embed_dim: int, dim: int, dropout: float, activation: str):
        super().__init__(feature, vocab, embed_dim, dropout)
        self.rnn = nn.RNN(embed_dim, dim, nonlinearity=activation, batch_first=True)
        self.out_dim = dim

    def forward(self, rows: DeviceRows) -> Tensor:
        embedded, _ = self.embed(rows)
        _, last = self.rnn(pack_padded_sequence(embedded, torch.from_numpy(rows.lengths), batch_first=True, enforce_sorted=False))
        return last[-1]


class _Loop(_Sequence):
    """Recurrences ``nn`` has no cell for, run step by step; finished rows keep their state."""

    scrambles = True
    state_size: int

    def __init__(self, feature: str, vocab: int, embed_dim: int, dim: int, dropout: float, gates: int):
        super().__init__(feature, vocab, embed_dim, dropout)
        self.input = nn.Linear(embed_dim, gates * dim)
        self.hidden = nn.Linear(dim, gates * dim, bias=False)
        self.out_dim = dim

    def step(self, projected: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def run(self, rows: DeviceRows) -> tuple[tuple[Tensor, ...], Tensor]:
        embedded, lengths = self.embed(rows)
        projected = self.input(embedded)  # all steps' input terms in one product
        mask = _mask(lengths, embedded.shape[1])
        state = tuple(embedded.new_zeros(len(lengths), self.out_dim) for _ in range(self.state_size))
        for t in range(embedded.shape[1]):
            new = self.step(projected[:, t], state)
            keep = mask[:, t]
            state = tuple(keep * n + (1 - keep) * s for n, s in zip(new, state, strict=True))
        return state, lengths


class IdentityRNN(_Loop):
    """Identity-RNN (2016 paper): linear recurrence initialised to identity, zero bias; the
    last state divided by the length, so before training it is exactly the word average.
    Its weights are regularized back to that initialisation by λc."""

    anchored = True
    state_size = 1

    def __init__(self, feature: str, vocab: int, embed_dim: int, dim: int, dropout: float):
        if dim != embed_dim:
            raise InputError(f"identity-RNN needs dim == embed_dim (identity init), got {dim} and {embed_dim}")
        super().__init__(feature, vocab, embed_dim, dim, dropout, gates=1)
        with torch.no_grad():
            self.input.weight.copy_(torch.eye(dim))
            self.input.bias.zero_()
            self.hidden.weight.copy_(torch.eye(dim))

    def step(self, projected: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return (projected + self.hidden(state[0]),)

    def forward(self, rows: DeviceRows) -> Tensor:
        (last,), lengths = self.run(rows)
        return last / lengths.to(last.dtype)[:, None]


class PeepholeLSTM(_Loop):
    """Gers et al. (2003) LSTM with peepholes, last hidden state (2016 paper); without the
    output gate ``h = tanh(c)``."""

    state_size = 2

    def __init__(self, feature: str, vocab: int, embed_dim: int, dim: int, dropout: float, output_gate: bool):
        super().__init__(feature, vocab, embed_dim, dim, dropout, gates=4 if output_gate else 3)
        self.output_gate = output_gate
        self.peep = nn.Parameter(torch.zeros(3 if output_gate else 2, dim))

    def step(self, projected: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        h, c = state
        gates = projected + self.hidden(h)
        i, f, g = gates[:, : 3 * self.out_dim].chunk(3, dim=1)
        c = torch.sigmoid(f + self.peep[1] * c) * c + torch.sigmoid(i + self.peep[0] * c) * torch.tanh(g)
        if self.output_gate:
            o = torch.sigmoid(gates[:, 3 * self.out_dim :] + self.peep[2] * c)
            return o * torch.tanh(c), c
        return torch.tanh(c), c

    def forward(self, rows: DeviceRows) -> Tensor:
        (h, _), _ = self.run(rows)
        return h


class CSE(_Sequence):
    """Convolutional sentence encoder: filters of widths 1, 2, 3 × 100 maps, linear activation,
    sum over the valid windows of each sentence, concatenated (300d)."""

    def __init__(self, feature: str, vocab: int, embed_dim: int, dropout: float, widths: tuple[int, ...], maps: int):
        super().__init__(feature, vocab, embed_dim, dropout)
        self.convs = nn.ModuleList(nn.Conv1d(embed_dim, maps, width) for width in widths)
        self.out_dim = maps * len(widths)

    def forward(self, rows: DeviceRows) -> Tensor:
        embedded, lengths = self.embed(rows)
        steps = embedded.shape[1]
        widest = max(conv.kernel_size[0] for conv in self.convs)
        x = nn.functional.pad(embedded.transpose(1, 2), (0, max(0, widest - steps)))
        pooled = []
        for conv in self.convs:
            maps = conv(x)  # (batch, maps, windows); window j covers positions j .. j + width - 1
            valid = _mask(lengths - conv.kernel_size[0] + 1, maps.shape[2]).transpose(1, 2)
            pooled.append((maps * valid).sum(dim=2))
        return torch.cat(pooled, dim=1)


class Encoder(nn.Module):
    """One or more components trained jointly; outputs added or concatenated (mixed models)."""

    def __init__(self, components: list[Component], combine: str = "concat"):
        super().__init__()
        if combine not in ("add", "concat"):
            raise ValueError(f"combine must be 'add' or 'concat', got {combine!r}")
        dims = {c.out_dim for c in components}
        if combine == "add" and len(dims) > 1:
            raise InputError(f"adding components needs equal output sizes, got {sorted(dims)}")
        self.components = nn.ModuleList(components)
        self.combine = combine
        self.out_dim = dims.pop() if combine == "add" else sum(c.out_dim for c in components)

    @property
    def features(self) -> set[str]:
        return {c.feature for c in self.components}

    @property
    def scrambles(self) -> bool:
        return any(c.scrambles for c in self.components)

    @property
    def length_bound(self) -> bool:
        return any(c.length_bound for c in self.components)

    def forward(self, inputs: Inputs | DeviceInputs) -> Tensor:
        """One vector per sentence of ``inputs``: featurized rows, or rows already on the
        device (:func:`on_device`)."""
        if any(isinstance(rows, Ragged) for rows in inputs.values()):
            inputs = on_device([inputs], next(self.parameters()).device)[0]
        outputs = [c(inputs[c.feature]) for c in self.components]
        return torch.stack(outputs).sum(0) if self.combine == "add" else torch.cat(outputs, dim=1)

    def embedding_tables(self) -> list[nn.Parameter]:
        return [w for c in self.components for w in c.embedding_tables()]

    def compositional_parameters(self) -> list[tuple[nn.Parameter, bool]]:
        """(parameter, anchored to its initial value) for every non-embedding weight (``Wc``)."""
        tables = {id(w) for w in self.embedding_tables()}
        return [(p, c.anchored) for c in self.components for p in c.parameters() if id(p) not in tables]


# Registry -------------------------------------------------------------------------------

Builder = Callable[[EncoderConfig, dict[str, int]], list[Component]]
MODELS: dict[str, Builder] = {}


def register(name: str) -> Callable[[Builder], Builder]:
    if name not in MODEL_NAMES:
        raise ValueError(f"model {name!r} is not in models.configs.MODEL_NAMES, the names the command line offers")

    def add(builder: Builder) -> Builder:
        MODELS[name] = builder
        return builder

    return add


def _word_avg(c: EncoderConfig, sizes: dict[str, int]) -> Component:
    return BagAverage("tokens", sizes["tokens"], c.embed_dim, c.dropout)


def _trigram_avg(c: EncoderConfig, sizes: dict[str, int]) -> Component:
    return BagAverage("trigrams", sizes["trigrams"], c.embed_dim, c.dropout)


def _lstm_avg(c: EncoderConfig, sizes: dict[str, int], bidirectional: bool = False) -> Component:
    return LSTMAverage("tokens", sizes["tokens"], c.embed_dim, c.dim, c.dropout, bidirectional)


register("word_avg")(lambda c, s: [_word_avg(c, s)])
register("trigram_avg")(lambda c, s: [_trigram_avg(c, s)])
register("lstm_avg")(lambda c, s: [_lstm_avg(c, s)])
register("bilstm_avg")(lambda c, s: [_lstm_avg(c, s, bidirectional=True)])
register("trigram_word")(lambda c, s: [_trigram_avg(c, s), _word_avg(c, s)])
register("trigram_word_lstm")(lambda c, s: [_trigram_avg(c, s), _word_avg(c, s), _lstm_avg(c, s)])
register("cse")(lambda c, s: [CSE("tokens", s["tokens"], c.embed_dim, c.dropout, c.cnn_widths, c.cnn_maps)])
register("proj")(lambda c, s: [BagAverage("tokens", s["tokens"], c.embed_dim, c.dropout, [nn.Linear(c.embed_dim, c.dim)])])
register("dan")(
    lambda c, s: [
        BagAverage(
            "tokens", s["tokens"], c.embed_dim, c.dropout,
            [nn.Linear(c.embed_dim if i == 0 else c.dim, c.dim) for i in range(c.dan_layers)], c.activation,
        )
    ]
)
register("rnn")(lambda c, s: [LastStateRNN("tokens", s["tokens"], c.embed_dim, c.dim, c.dropout, c.activation)])
register("irnn")(lambda c, s: [IdentityRNN("tokens", s["tokens"], c.embed_dim, c.dim, c.dropout)])
register("lstm_gate")(lambda c, s: [PeepholeLSTM("tokens", s["tokens"], c.embed_dim, c.dim, c.dropout, output_gate=True)])
register("lstm_nogate")(lambda c, s: [PeepholeLSTM("tokens", s["tokens"], c.embed_dim, c.dim, c.dropout, output_gate=False)])

# Which featurizers each feature needs is decided by the config: "tokens" is words or pieces.
FEATURE_KINDS = {"trigrams": "trigrams"}


def feature_kind(config: EncoderConfig, feature: str) -> str:
    return config.tokens if feature == "tokens" else FEATURE_KINDS[feature]


def build_encoder(config: EncoderConfig, sizes: dict[str, int], token_init: np.ndarray | None = None) -> Encoder:
    """The named model with fresh weights; ``token_init`` (vocab, embed_dim) initialises
    every token embedding table (pretrained vectors), else they stay randomly initialised."""
    if config.model not in MODELS:
        raise ValueError(f"unknown model {config.model!r}; choose one of {sorted(MODELS)}")
    if config.embed_dim <= 0:
        raise ValueError("embed_dim is unresolved; call resolve_embed_dim first")
    encoder = Encoder(MODELS[config.model](config, sizes), config.combine)
    if token_init is not None:
        with torch.no_grad():
            for component in encoder.components:
                if component.feature == "tokens":
                    for table in component.embedding_tables():
                        table.copy_(torch.from_numpy(token_init))
    return encoder


def resolve_embed_dim(config: EncoderConfig, vector_dim: int | None) -> EncoderConfig:
    """The config with its embedding size fixed: the vectors' size, else 300 when unset."""
    if vector_dim is not None and config.embed_dim not in (0, vector_dim):
        raise ValueError(f"embed_dim {config.embed_dim} differs from the word vectors' size {vector_dim}")
    return replace(config, embed_dim=vector_dim or config.embed_dim or 300)


def token_initialization(symbols: list[str], words: list[str], vectors: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """Initial token embeddings: the pretrained vector where the symbol has one, else random
    normal with the vectors' own scale; PAD is zero. Returns (matrix, rows found)."""
    rng = np.random.default_rng(seed)
    matrix = rng.normal(0.0, float(vectors.std()), size=(len(symbols), vectors.shape[1])).astype(np.float32)
    index = {w: i for i, w in enumerate(words)}
    found = [(row, index[s]) for row, s in enumerate(symbols) if s in index]
    if found:
        rows, sources = map(np.asarray, zip(*found, strict=True))
        matrix[rows] = vectors[sources]
    matrix[PAD] = 0.0
    return matrix, len(found)
