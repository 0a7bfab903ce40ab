"""Every registered encoder: output shape, gradient flow, padding independence, and the
architecture details that are easy to get wrong (BiLSTM averaging, CSE windows, identity-RNN)."""

import numpy as np
import pytest
import torch

from models.configs import MODEL_NAMES, EncoderConfig
from models.encoders import (
    MODELS,
    build_encoder,
    length_groups,
    on_device,
    resolve_embed_dim,
    token_initialization,
)
from models.ragged import Ragged
from models.vocabulary import PAD

EMBED, DIM = 6, 8
SIZES = {"tokens": 20, "trigrams": 30}
CONFIG = dict(dim=DIM, embed_dim=EMBED, cnn_maps=3, dan_layers=2)
EXPECTED_DIM = {
    "word_avg": EMBED, "trigram_avg": EMBED, "lstm_avg": DIM, "bilstm_avg": DIM, "trigram_word": 2 * EMBED,
    "trigram_word_lstm": 2 * EMBED + DIM, "cse": 9, "proj": DIM, "dan": DIM, "rnn": DIM, "irnn": EMBED,
    "lstm_gate": DIM, "lstm_nogate": DIM,
}


def make(model: str, **overrides) -> torch.nn.Module:
    values = {**CONFIG, **overrides}
    if model == "irnn":
        values["dim"] = values["embed_dim"]
    torch.manual_seed(0)
    return build_encoder(EncoderConfig(model=model, **values), SIZES)


def inputs(rows: list[list[int]]) -> dict[str, Ragged]:
    trigram_rows = [[(7 * i) % 28 + 2 for i in row] + [3] for row in rows]
    return {"tokens": Ragged.from_rows(rows), "trigrams": Ragged.from_rows(trigram_rows)}


BATCH = [[2, 3, 4, 5, 6], [7], [8, 9], [10, 11, 12, 13, 14, 15, 16]]


def test_registry_covers_the_paper_models_and_the_names_the_command_line_offers():
    assert set(EXPECTED_DIM) == set(MODELS) == set(MODEL_NAMES)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_forward_shape_and_every_parameter_gets_a_gradient(model):
    encoder = make(model)
    out = encoder(inputs(BATCH))
    assert out.shape == (len(BATCH), EXPECTED_DIM[model]) == (len(BATCH), encoder.out_dim)
    assert torch.isfinite(out).all()
    # A cosine loss between sentences, like training: every weight must receive a gradient.
    torch.nn.functional.cosine_similarity(out[:2], out[2:]).sum().backward()
    for name, parameter in encoder.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_sentence_embeds_the_same_alone_and_in_a_padded_batch(model):
    encoder = make(model).eval()
    with torch.no_grad():
        together = encoder(inputs(BATCH))
        alone = torch.cat([encoder(inputs([row])) for row in BATCH])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-6)


def test_bilstm_concatenates_the_mean_forward_and_mean_backward_states():
    encoder = make("bilstm_avg").eval()
    component = encoder.components[0]
    row = BATCH[0]
    with torch.no_grad():
        got = encoder(inputs([row]))[0]
        states, _ = component.lstm(component.embedding(torch.tensor([row])))
    half = DIM // 2
    forward, backward = states[0, :, :half], states[0, :, half:]
    torch.testing.assert_close(got, torch.cat([forward.mean(0), backward.mean(0)]))


def test_batches_moved_together_keep_their_rows_and_pad_on_the_device():
    batches = [inputs(BATCH), inputs([[4, 5], [6]]), inputs([[7, 8, 9]])]
    moved = on_device(batches, torch.device("cpu"))
    for batch, on in zip(batches, moved, strict=True):
        for feature, rows in batch.items():
            assert on[feature].values.tolist() == rows.values.tolist() and on[feature].offsets.tolist() == rows.offsets.tolist()
    assert moved[1]["tokens"].values.untyped_storage().data_ptr() == moved[2]["trigrams"].values.untyped_storage().data_ptr()  # one buffer
    assert moved[1]["tokens"].padded().tolist() == [[4, 5], [6, PAD]]
    encoder = make("trigram_word_lstm").eval()
    with torch.no_grad():
        torch.testing.assert_close(encoder(moved[0]), encoder(batches[0]), rtol=0, atol=0)


@pytest.mark.parametrize("slack", [1.0, 1.3, 4.0])
def test_length_groups_take_every_row_once_longest_first_within_the_slack(slack):
    lengths = np.random.default_rng(0).zipf(1.5, 200).clip(1, 300)
    groups = length_groups(lengths, slack)
    assert sorted(np.concatenate(groups).tolist()) == list(range(200))
    assert [lengths[g].max() for g in groups] == sorted((lengths[g].max() for g in groups), reverse=True)
    for group, following in zip(groups, groups[1:] + [None], strict=True):
        assert lengths[group[0]] * len(group) <= slack * lengths[group].sum()
        if following is not None:  # the group took every row that fitted
            assert lengths[group[0]] * (len(group) + 1) > slack * (lengths[group].sum() + lengths[following[0]])
    assert len(length_groups(lengths, 1.0)) == len(set(lengths.tolist()))  # no padding at all: one group per length


@pytest.mark.parametrize("model", ["lstm_avg", "bilstm_avg"])
def test_lstm_length_groups_on_the_cpu_give_the_packed_sums_and_gradients(model):
    """The CPU runs LSTMs padded in length groups, a GPU packed: the same model either way."""
    rng = np.random.default_rng(1)
    rows = [list(rng.integers(2, 20, n)) for n in [3, 1, 8, 3, 40, 5, 2, 13, 21, 34, 9, 3]]  # not sorted, ties
    moved = on_device([{"tokens": Ragged.from_rows(rows)}], torch.device("cpu"))[0]["tokens"]
    assert len(length_groups(moved.lengths, 1.3)) > 3  # several groups, and rows reordered by them
    component = make(model).components[0]
    tokens = component.embedding(moved.values).detach()
    results = []
    for state_sums in (component._grouped_state_sums, component._packed_state_sums):
        component.zero_grad()
        x = tokens.clone().requires_grad_()
        sums = state_sums(x, moved)
        (sums * torch.linspace(-1, 1, sums.numel()).view_as(sums)).sum().backward()
        results.append((sums, x.grad, [p.grad for p in component.lstm.parameters()]))
    (grouped, grouped_input, grouped_weights), (packed, packed_input, packed_weights) = results
    with torch.no_grad():  # each row alone, unpadded
        alone = torch.stack([component.lstm(tokens[moved.offsets[i] : moved.offsets[i + 1]][None])[0][0].sum(0) for i in range(len(rows))])
    torch.testing.assert_close(packed, alone)
    torch.testing.assert_close(grouped, packed)
    torch.testing.assert_close(grouped_input, packed_input)
    for mine, theirs in zip(grouped_weights, packed_weights, strict=True):
        torch.testing.assert_close(mine, theirs)


def test_cse_sums_linear_filters_over_valid_windows_only():
    encoder = make("cse").eval()
    component = encoder.components[0]
    row = [2, 3]  # shorter than the width-3 filter: that filter sees no window
    with torch.no_grad():
        got = encoder(inputs([row]))[0]
        x = component.embedding(torch.tensor(row))
        expected = []
        for conv in component.convs:
            width = conv.kernel_size[0]
            windows = [x[j : j + width].T.reshape(-1) for j in range(len(row) - width + 1)]
            weight = conv.weight.reshape(conv.out_channels, -1)
            expected.append(sum((weight @ w + conv.bias for w in windows), torch.zeros(conv.out_channels)))
    torch.testing.assert_close(got, torch.cat(expected))
    assert got[6:].abs().sum() == 0


def test_identity_rnn_starts_as_the_word_average():
    irnn, avg = make("irnn").eval(), make("word_avg").eval()
    avg.components[0].bag.weight.data.copy_(irnn.components[0].embedding.weight.data)
    with torch.no_grad():
        torch.testing.assert_close(irnn(inputs(BATCH)), avg(inputs(BATCH)))


def test_lstm_without_output_gate_has_fewer_weights():
    gate, nogate = make("lstm_gate"), make("lstm_nogate")
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(gate) - count(nogate) == EMBED * DIM + DIM + DIM * DIM + DIM  # input, bias, recurrent, peephole


def test_mixed_addition_needs_equal_sizes_and_sums_outputs():
    added = make("trigram_word", combine="add")
    assert added.out_dim == EMBED
    with torch.no_grad():
        moved = on_device([inputs(BATCH)], torch.device("cpu"))[0]
        parts = [c(moved[c.feature]) for c in added.components]
        torch.testing.assert_close(added(inputs(BATCH)), parts[0] + parts[1])
    with pytest.raises(ValueError, match="equal output sizes"):
        make("trigram_word_lstm", combine="add")  # LSTM dim 8 vs embeddings 6


def test_pretrained_rows_initialise_token_tables_and_unknown_model_is_rejected():
    symbols = ["<pad>", "<unk>", "cat", "dog", "emu"]
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    matrix, found = token_initialization(symbols, ["dog", "cat"], vectors, seed=0)
    assert found == 2 and matrix[PAD].tolist() == [0, 0, 0]
    assert matrix[2].tolist() == [3, 4, 5] and matrix[3].tolist() == [0, 1, 2]
    config = resolve_embed_dim(EncoderConfig(model="word_avg"), vector_dim=3)
    assert config.embed_dim == 3
    encoder = build_encoder(config, {"tokens": 5}, matrix)
    assert encoder.components[0].bag.weight.detach().numpy().tolist() == matrix.tolist()
    with pytest.raises(ValueError, match="differs"):
        resolve_embed_dim(EncoderConfig(embed_dim=4), vector_dim=3)
    with pytest.raises(ValueError, match="unknown model"):
        build_encoder(EncoderConfig(model="gru_max", embed_dim=3), {"tokens": 5})


def test_saved_weights_are_the_same_bytes_every_time(tmp_path):
    """Model files are written under a random temporary name; the bytes must not depend on it
    (byte-identical reruns, the PP model's sha256 in the corpus summary)."""
    from models.encoder_io import save_weights

    encoder = build_encoder(EncoderConfig(model="word_avg", embed_dim=8), {"tokens": 20})
    save_weights(tmp_path, encoder, "first.pt")
    save_weights(tmp_path, encoder, "second.pt")
    assert (tmp_path / "first.pt").read_bytes() == (tmp_path / "second.pt").read_bytes()
