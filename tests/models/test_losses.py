"""Margin loss, negative selection (MAX / MIX / RAND, mega-batch pools) and regularization."""

import math

import numpy as np
import pytest
import torch

from models.configs import EncoderConfig
from models.encoders import build_encoder
from models.losses import (
    choose_negatives,
    hardest_negatives,
    initial_anchors,
    margin_loss,
    random_negatives,
    regularization,
)


def unit(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


def pool(side1_degrees, side2_degrees) -> torch.Tensor:
    """Pool layout used by the trainer: side 1 of every pair, then side 2."""
    return torch.tensor([unit(d) for d in [*side1_degrees, *side2_degrees]])


def test_margin_loss_on_a_hand_computed_example():
    g1 = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    g2 = torch.tensor([[0.6, 0.8], [0.0, 1.0]])  # cos(g1, g2) = 0.6 and 1.0
    t1 = torch.tensor([[0.0, 1.0], [0.0, -1.0]])  # cos(g1, t1) = 0 and -1
    t2 = torch.tensor([[3.0, 0.0], [0.0, 5.0]])  # cos(g2, t2) = 0.6 and 1.0
    # pair 1: max(0, .4 - .6 + 0) + max(0, .4 - .6 + .6) = 0 + .4
    # pair 2: max(0, .4 - 1 - 1) + max(0, .4 - 1 + 1) = 0 + .4
    rows = torch.arange(8)
    assert margin_loss(torch.cat([g1, g2, t1, t2]), rows, margin=0.4).item() == pytest.approx(0.4)
    assert margin_loss(torch.cat([g1, g2, t1, t2]), rows, margin=0.0).item() == pytest.approx(0.0)
    # Rows read by index, some twice: pair 2's t1 is row 3 (its own g2), its t2 row 0 (pair 1's g1).
    distinct = torch.cat([g1, g2, t1[:1], t2[:1]])
    shared = margin_loss(distinct, torch.tensor([0, 1, 2, 3, 4, 3, 5, 0]), margin=0.4)
    cosines = torch.nn.functional.cosine_similarity
    g1_, g2_, t1_, t2_ = distinct[[0, 1]], distinct[[2, 3]], distinct[[4, 3]], distinct[[5, 0]]
    expected = (torch.relu(0.4 - cosines(g1_, g2_) + cosines(g1_, t1_)) + torch.relu(0.4 - cosines(g1_, g2_) + cosines(g2_, t2_))).mean()
    torch.testing.assert_close(shared, expected)


def test_margin_loss_gradients_are_those_of_cosines():
    """One normalization per embedding, however many rows read it: the cosines' gradients."""
    rng = torch.Generator().manual_seed(0)
    embeddings = torch.randn(7, 5, generator=rng, dtype=torch.float64)
    where = torch.tensor([0, 1, 2, 3, 4, 5, 6, 0, 6, 2, 1, 0])  # negatives repeat batch rows
    mine = embeddings.clone().requires_grad_()
    margin_loss(mine, where, margin=0.9).backward()
    reference = embeddings.clone().requires_grad_()
    g1, g2, t1, t2 = reference[where].split(3)
    cosines = torch.nn.functional.cosine_similarity
    (torch.relu(0.9 - cosines(g1, g2) + cosines(g1, t1)) + torch.relu(0.9 - cosines(g1, g2) + cosines(g2, t2))).mean().backward()
    assert reference.grad.abs().sum() > 0
    torch.testing.assert_close(mine.grad, reference.grad)


def test_hardest_negative_skips_itself_and_its_partner_within_one_batch():
    # Pair 0 at 0°/1°, pair 1 at 90°/91°, pair 2 at 30°/31°: the partner is always nearest.
    negatives = hardest_negatives(pool([0, 90, 30], [1, 91, 31]))
    # Rows: 0:0° 1:90° 2:30° | 3:1° 4:91° 5:31°. 0° → 30° (row 2), 90° → 31° (row 5), ...
    assert negatives.tolist() == [2, 5, 3, 2, 5, 3]


def test_megabatch_pool_finds_the_negative_in_another_minibatch():
    # Mini-batch A holds pairs at 0° and 90°, mini-batch B pairs at 10° and 100°.
    side1, side2 = [0, 90, 10, 100], [2, 92, 12, 102]
    alone = hardest_negatives(pool(side1[:2], side2[:2]))  # M = 1: pool is batch A only
    assert alone.tolist() == [1, 2, 1, 2]  # rows 0:0° 1:90° 2:2° 3:92°: only pair 1 is available
    pooled = hardest_negatives(pool(side1, side2))  # M = 2: both batches
    # Rows 0:0° 1:90° 2:10° 3:100° | 4:2° 5:92° 6:12° 7:102°; batch A = rows 0, 1, 4, 5.
    assert pooled.tolist() == [2, 3, 4, 5, 2, 3, 4, 5]
    batch_a = {0, 1, 4, 5}
    assert all((row in batch_a) != (negative in batch_a) for row, negative in enumerate(pooled))


def test_negatives_are_the_brute_force_argmax_and_never_self_or_partner():
    rng = np.random.default_rng(3)
    pairs = 300
    side1 = rng.normal(size=(pairs, 16))
    side2 = side1 + 0.01 * rng.normal(size=(pairs, 16))  # partners nearly identical
    embeddings = torch.tensor(np.concatenate([side1, side2]), dtype=torch.float32)
    got = hardest_negatives(embeddings)
    unit_rows = embeddings / embeddings.norm(dim=1, keepdim=True)
    similarity = (unit_rows @ unit_rows.T).numpy()
    rows = np.arange(2 * pairs)
    similarity[rows, rows] = -np.inf
    similarity[rows, (rows + pairs) % (2 * pairs)] = -np.inf
    assert got.tolist() == similarity.argmax(axis=1).tolist()


@pytest.mark.parametrize("mode", ["rand", "mix"])
def test_random_and_mixed_negatives_are_valid_and_cover_the_pool(mode):
    pairs = 5
    embeddings = torch.randn(2 * pairs, 4, generator=torch.Generator().manual_seed(0))
    rng = np.random.default_rng(0)
    draws = np.stack([choose_negatives(embeddings, mode, rng) for _ in range(400)])
    rows = np.arange(2 * pairs)
    assert not (draws == rows).any() and not (draws == (rows + pairs) % (2 * pairs)).any()
    for row in rows:  # every other sentence is drawn at some point
        assert set(draws[:, row]) == set(rows) - {row, (row + pairs) % (2 * pairs)}
    hardest = hardest_negatives(embeddings)
    share = (draws == hardest).mean()
    assert (0.45 < share < 0.65) if mode == "mix" else share < 0.3  # MIX: MAX half the time


def test_random_negatives_are_uniform_over_valid_indices():
    counts = np.bincount(np.stack([random_negatives(3, np.random.default_rng(s)) for s in range(3000)])[:, 0], minlength=6)
    assert counts[0] == counts[3] == 0
    assert counts[[1, 2, 4, 5]].min() > 650  # 750 expected each


def test_pool_of_one_pair_is_rejected():
    with pytest.raises(ValueError, match="at least 2"):
        hardest_negatives(torch.randn(2, 3))
    with pytest.raises(ValueError, match="negative mode"):
        choose_negatives(torch.randn(4, 3), "hard", np.random.default_rng(0))


def test_regularization_pulls_words_to_their_initial_values_and_weights_to_zero():
    torch.manual_seed(0)
    encoder = build_encoder(EncoderConfig(model="proj", dim=3, embed_dim=2), {"tokens": 4})
    anchors = initial_anchors(encoder, lambda_c=0.5, lambda_w=2.0)
    weights = encoder.components[0].layers[0]
    expected_c = 0.5 * (weights.weight.pow(2).sum() + weights.bias.pow(2).sum())
    torch.testing.assert_close(regularization(encoder, anchors, 0.5, 2.0), expected_c)  # words at init
    with torch.no_grad():
        encoder.components[0].bag.weight[2] += 1.0
    torch.testing.assert_close(regularization(encoder, anchors, 0.5, 2.0), expected_c + 2.0 * 2)
    assert regularization(encoder, anchors, 0.0, 0.0) == 0.0


def test_identity_rnn_weights_are_regularized_to_identity():
    encoder = build_encoder(EncoderConfig(model="irnn", dim=3, embed_dim=3), {"tokens": 4})
    anchors = initial_anchors(encoder, lambda_c=1.0, lambda_w=0.0)
    assert regularization(encoder, anchors, 1.0, 0.0).item() == 0.0  # identity init is the anchor
    with torch.no_grad():
        encoder.components[0].hidden.weight.zero_()
    assert regularization(encoder, anchors, 1.0, 0.0).item() == pytest.approx(3.0)


def brute_force_negatives(embeddings: torch.Tensor, side: str, below_partner: bool, groups: list[int] | None = None) -> list[int]:
    """The definition of :func:`hardest_negatives`, one anchor at a time; with ``groups``, its
    rule among the candidates outside the anchor's group, among its group-mates only when there
    is no other candidate (the group rule comes before the semi-hard one)."""
    unit_rows = torch.nn.functional.normalize(embeddings.double(), dim=1)
    rows, pairs = len(unit_rows), len(unit_rows) // 2
    chosen = []
    for anchor in range(rows):
        partner = (anchor + pairs) % rows
        similarity = (unit_rows @ unit_rows[anchor]).tolist()
        candidates = [c for c in range(rows) if c not in (anchor, partner) and (side == "both" or (c < pairs) != (anchor < pairs))]
        if groups is not None:
            candidates = [c for c in candidates if groups[c % pairs] != groups[anchor % pairs]] or candidates
        semi_hard = [c for c in candidates if similarity[c] < similarity[partner]] if below_partner else []
        chosen.append(max(semi_hard or candidates, key=similarity.__getitem__))
    return chosen


@pytest.mark.parametrize("side", ["both", "partner"])
@pytest.mark.parametrize("below_partner", [False, True])
@pytest.mark.parametrize("chunk_rows", [3, 2048])
def test_every_negative_rule_is_its_brute_force_definition(side, below_partner, chunk_rows, monkeypatch):
    monkeypatch.setattr("models.losses._SIMILARITY_ROWS", chunk_rows)  # chunked search == whole search
    embeddings = torch.randn(2 * 11, 5, generator=torch.Generator().manual_seed(7))
    assert hardest_negatives(embeddings, side, below_partner).tolist() == brute_force_negatives(embeddings, side, below_partner)


def test_partner_side_negatives_come_from_the_other_side():
    pairs = 40
    embeddings = torch.randn(2 * pairs, 6, generator=torch.Generator().manual_seed(1))
    rng = np.random.default_rng(0)
    for mode in ("max", "mix", "rand"):
        negatives = choose_negatives(embeddings, mode, rng, side="partner")
        rows = np.arange(2 * pairs)
        assert ((negatives < pairs) != (rows < pairs)).all()  # always the partner's side
        assert not (negatives == (rows + pairs) % (2 * pairs)).any()  # never the partner itself


def test_near_duplicates_of_the_anchor_are_not_chosen_as_negatives():
    """Caption-like pool: 20 scenes, 10 pairs each. Side 1 of every pair of a scene is a
    near-duplicate of the others ("a man is about to hit a tennis ball" / "a shirtless man is
    about to hit a tennis ball"); side 2 is a looser rewording. Plain MAX picks a near-duplicate
    of the anchor (a paraphrase, so a false negative) for every side-1 anchor; the semi-hard
    rule must pick none, because each is closer to the anchor than its partner is."""
    generator = torch.Generator().manual_seed(0)
    scenes, per_scene, dim = 20, 10, 32
    scene = torch.arange(scenes).repeat_interleave(per_scene)
    centres = torch.randn(scenes, dim, generator=generator)[scene]
    side1 = centres + 0.05 * torch.randn(len(scene), dim, generator=generator)
    side2 = centres + 0.7 * torch.randn(len(scene), dim, generator=generator)
    negatives = {rule: hardest_negatives(torch.cat([side1, side2]), "both", rule)[: len(scene)] for rule in (False, True)}
    is_near_duplicate = lambda chosen: (chosen < len(scene)) & (scene.numpy()[chosen % len(scene)] == scene.numpy())  # noqa: E731
    assert is_near_duplicate(negatives[False]).all()  # the failure mode the rule fixes
    assert not is_near_duplicate(negatives[True]).any()


@pytest.mark.parametrize("side", ["both", "partner"])
@pytest.mark.parametrize("below_partner", [False, True])
@pytest.mark.parametrize("chunk_rows", [3, 2048])
def test_group_mates_are_negatives_only_when_nothing_else_is_left(side, below_partner, chunk_rows, monkeypatch):
    monkeypatch.setattr("models.losses._SIMILARITY_ROWS", chunk_rows)
    embeddings = torch.randn(2 * 11, 5, generator=torch.Generator().manual_seed(7))
    groups = [0, 0, 0, 1, 2, 2, 3, 4, 4, 4, 4]
    got = hardest_negatives(embeddings, side, below_partner, np.array(groups)).tolist()
    assert got == brute_force_negatives(embeddings, side, below_partner, groups)
    one_group = hardest_negatives(embeddings, side, below_partner, np.zeros(11, dtype=np.int64)).tolist()
    assert one_group == hardest_negatives(embeddings, side, below_partner).tolist()  # all mates: the rule without groups


def test_a_repeated_reference_is_no_negative_of_its_own_translations():
    """A corpus of translations by many systems: each of 30 references has 8 pairs in the pool
    (its translation by each system: the reference plus small noise). Side 1 is the reference,
    side 2 a translation, as in the corpus. Without groups, the default rule (partner side,
    semi-hard) picks for almost every anchor a sentence of its own reference's pairs (another
    system's translation of it, or the reference itself): a paraphrase taken as a negative.
    With the pairs' reference as their group it picks none."""
    generator = torch.Generator().manual_seed(0)
    references, systems, dim = 30, 8, 32
    reference = torch.arange(references).repeat_interleave(systems)
    centres = torch.randn(references, dim, generator=generator)[reference]
    side1 = centres.clone()  # the same reference in every system's pair
    side2 = centres + 0.3 * torch.randn(len(reference), dim, generator=generator)
    pool_rows = torch.cat([side1, side2])
    own = reference.numpy()
    for side in ("partner", "both"):
        for below_partner in (True, False):
            mates = {}
            for grouped, groups in (("without", None), ("with", own)):
                chosen = hardest_negatives(pool_rows, side, below_partner, groups)
                is_mate = own[chosen % len(own)] == np.tile(own, 2)
                mates[grouped] = (is_mate[: len(own)].mean(), is_mate.mean())  # reference anchors, all anchors
            assert mates["without"][0] > 0.8, (side, below_partner, mates)  # the failure the groups fix
            assert mates["with"] == (0.0, 0.0), (side, below_partner, mates)


def test_groups_need_one_id_per_pool_pair():
    with pytest.raises(ValueError, match="one id per pool pair"):
        hardest_negatives(torch.randn(8, 3), "partner", True, np.zeros(3, dtype=np.int64))


@pytest.mark.parametrize("side", ["both", "partner"])
def test_a_copy_of_the_partner_is_never_a_semi_hard_negative(side):
    """Pair 1's side 1 is the very vector of pair 0's side 1 (one reference in two pairs). For
    the side-2 anchor of pair 0 that copy is exactly as close as its partner, so it is not
    semi-hard. Computed in two products its float32 cosine differed from the partner's in the
    last bits, and the partner-side search took it as the negative in 77 of 200 pools."""
    generator = torch.Generator().manual_seed(0)
    copies = 0
    for _ in range(200):
        side1 = torch.randn(50, 300, generator=generator)
        side2 = side1 + 0.8 * torch.randn(50, 300, generator=generator)
        side1[1] = side1[0]
        chosen = hardest_negatives(torch.cat([side1, side2]), side, True)
        copies += int(chosen[50] == 1)
    assert copies == 0
