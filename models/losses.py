"""The margin loss of Wieting et al. (2016, eq. 1; ParaNMT 2018, section 4.2) and the choice
of its negative examples, including mega-batching (ParaNMT section 4.2.1).

Loss for a pair (g1, g2) with negatives t1, t2, averaged over the pairs:
``max(0, δ − cos(g1, g2) + cos(g1, t1)) + max(0, δ − cos(g1, g2) + cos(g2, t2))``,
plus ``λc‖Wc‖²`` and ``λw‖Ww − Ww_initial‖²``.

Negatives come from a pool of P pairs (one mini-batch, or M mini-batches for mega-batching):
every one of the 2P sentences is a candidate for every other, except a sentence itself and
its partner in the pair. With ``groups`` (one id per pool pair), the sentences of pairs of the
anchor's own group are candidates only when no other is left: a corpus where one reference
has a translation by each of many systems puts the reference's other pairs in the same pool,
and their sentences are paraphrases of the anchor, not negatives (docs/2026-12-01-real-mt-corpus.md).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from models.configs import NEGATIVE_MODES, NEGATIVE_SIDES
from models.encoders import Encoder

# Rows of the pool similarity matrix computed at once: bounds memory for large pools
# (M = 40, batch 100 → 8,000 candidates) at 8,000 × 512 floats, a block that stays in cache
# and is reused by the allocator (larger blocks are fresh pages on every call).
_SIMILARITY_ROWS = 512
# Draws again of a random negative that is a sentence of the anchor's group (a sibling): after
# these, the anchor's group is all that is left, or nearly.
RANDOM_REDRAWS = 8


def margin_loss(embeddings: Tensor, where: Tensor, margin: float) -> Tensor:
    """Mean over pairs of the two hinge terms (cosine similarities) of the rows ``where`` of
    ``embeddings``: g1, g2, t1 and t2, B rows each. Every embedding is normalized once, however
    many rows read it: three cosines of row pairs normalize six times, and were half the
    operations of a Word Avg update (175 of them; now 87), each a kernel a GPU waits on the
    host to launch."""
    # eps: cosine_similarity's, so the values are its values.
    unit = F.normalize(embeddings, dim=1, eps=1e-8)
    # index_select, not unit[where]: the backward of advanced indexing accumulates repeated rows
    # in a thread-dependent order on CPU (runs with 2+ threads differed); index_select's doesn't.
    g1, g2, t1, t2 = torch.index_select(unit, 0, where).split(len(where) // 4)
    positive = (g1 * g2).sum(dim=1)
    return (torch.relu(margin - positive + (g1 * t1).sum(dim=1)) + torch.relu(margin - positive + (g2 * t2).sum(dim=1))).mean()


def _partners(pairs: int) -> np.ndarray:
    """Pool layout: sentence i < P is side 1 of pair i, P + i is its side 2. Each sentence's partner."""
    return (np.arange(2 * pairs) + pairs) % (2 * pairs)


# A candidate within this of the partner's cosine is as close as the partner (not semi-hard): the
# same sentence as the partner (a repeated reference) has the partner's cosine, but computed in
# another product its float32 value differs in the last bits, below it as often as not, and it was
# then the hardest semi-hard negative of every anchor whose partner it copies.
_SAME_COSINE = 1e-5


def _semi_hard_keys(similarity: Tensor, partner_similarity: Tensor) -> Tensor:
    """Keys whose argmax is the semi-hard negative: ``(similarity − partner) mod 4``. Cosines
    lie in [-1, 1], so a candidate less similar than the partner keys to 4 + difference in
    [2, 4) and one at least as close to the difference itself in [0, 2]: every semi-hard
    candidate outranks every other one, order is kept within each group, and an anchor with
    no semi-hard candidate falls back to its hardest one. A difference above −``_SAME_COSINE``
    counts as a tie (at least as close). The modulo is spelled with ``floor``
    because torch vectorizes that on CPU and not ``remainder`` or ``where`` (3× faster than
    either). Masked-out candidates get key -1, below every key."""
    difference = torch.sub(similarity, partner_similarity).add_(_SAME_COSINE).clamp_(max=2.0)
    return difference.sub_(torch.mul(difference, 0.25).floor_().mul_(4))


def _demote_group_mates(keys: Tensor, same_group: Tensor, below_partner: bool) -> Tensor:
    """Group-mates' keys moved below every other candidate's and above the excluded ones (the
    anchor and its partner), their order kept: semi-hard keys in [0, 4) go to [-0.75, -0.25),
    above the -1 of the excluded; cosines in [-1, 1] go to [-4, -2], above -inf. An anchor whose
    every candidate is a group-mate still gets one (a tiny pool), never itself or its partner."""
    if below_partner:
        return torch.where(same_group, keys * 0.125 - 0.75, keys)
    return torch.where(same_group, keys - 3.0, keys)


def _hardest_both_sides(unit: Tensor, below_partner: bool, groups: Tensor | None = None) -> Tensor:
    """Paper's candidates: every pool sentence but the anchor itself and its partner."""
    rows = unit.shape[0]
    partner = (torch.arange(rows, device=unit.device) + rows // 2) % rows
    row_groups = None if groups is None else torch.cat([groups, groups])
    best = []
    for start in range(0, rows, _SIMILARITY_ROWS):
        stop = min(start + _SIMILARITY_ROWS, rows)
        index = torch.arange(stop - start, device=unit.device)
        similarity = unit[start:stop] @ unit.T
        if below_partner:
            similarity = _semi_hard_keys(similarity, similarity[index, partner[start:stop], None])
        if row_groups is not None:
            similarity = _demote_group_mates(similarity, row_groups[start:stop, None] == row_groups[None, :], below_partner)
        excluded = -1.0 if below_partner else -torch.inf
        similarity[index, partner[start:stop]] = excluded
        similarity[index, index + start] = excluded
        best.append(similarity.argmax(dim=1))
    return torch.cat(best)


def _hardest_partner_side(unit: Tensor, below_partner: bool, groups: Tensor | None = None) -> Tensor:
    """Authors' candidates: the other pairs' sentences on the partner's side. Side-1 anchors
    take row maxima of S = side1 · side2ᵀ and side-2 anchors column maxima of the same S, so
    the pool costs one P × P product."""
    pairs = unit.shape[0] // 2
    first, second = unit[:pairs], unit[pairs:]
    partner_similarity = (first * second).sum(dim=1)
    row_best, column_value, column_best = [], None, None
    for start in range(0, pairs, _SIMILARITY_ROWS):
        stop = min(start + _SIMILARITY_ROWS, pairs)
        index = torch.arange(stop - start, device=unit.device)
        similarity = first[start:stop] @ second.T
        same_group = None if groups is None else groups[start:stop, None] == groups[None, :]
        if below_partner:
            rows = _semi_hard_keys(similarity, partner_similarity[start:stop, None])
            columns = _semi_hard_keys(similarity, partner_similarity[None, :])
            if same_group is not None:
                rows, columns = _demote_group_mates(rows, same_group, True), _demote_group_mates(columns, same_group, True)
            rows[index, index + start] = columns[index, index + start] = -1.0  # a sentence's own partner
        else:
            if same_group is not None:
                similarity = _demote_group_mates(similarity, same_group, False)
            similarity[index, index + start] = -torch.inf
            rows = columns = similarity
        row_best.append(rows.argmax(dim=1))
        value, best = columns.max(dim=0)
        if column_value is None:
            column_value, column_best = value, best
        else:
            better = value > column_value
            column_value, column_best = torch.where(better, value, column_value), torch.where(better, best + start, column_best)
    return torch.cat([torch.cat(row_best) + pairs, column_best])


def hardest_negatives(embeddings: Tensor, side: str = "both", below_partner: bool = False, groups: np.ndarray | None = None) -> np.ndarray:
    """For each of the 2P pool sentences (side 1 rows, then side 2 rows), the index of the
    most cosine-similar candidate negative.

    Candidates (``side``): "both": every other pool sentence but the anchor's partner (the
    paper); "partner": only the other pairs' sentences on the partner's side, so a side-1
    anchor competes with side-2 sentences (the authors' 2021 code; half the search).
    ``below_partner`` (semi-hard, as in FaceNet): only candidates strictly less similar to the
    anchor than its partner is, because in a large pool a candidate at least as close as the
    partner is most often a paraphrase of the anchor, not a negative; an anchor with no such
    candidate falls back to its hardest candidate. ``groups`` (an id per pool pair, P of them):
    the sentences of pairs of the anchor's group are taken only when no other candidate is left
    (the anchor's partner and itself never)."""
    if side not in NEGATIVE_SIDES:
        raise ValueError(f"negative side must be one of {NEGATIVE_SIDES}, got {side!r}")
    rows = embeddings.shape[0]
    if rows < 4 or rows % 2:
        raise ValueError(f"a negative pool needs at least 2 whole pairs, got {rows} sentences")
    if groups is not None and len(groups) != rows // 2:
        raise ValueError(f"groups: one id per pool pair ({rows // 2}), got {len(groups)}")
    unit = F.normalize(embeddings.float(), dim=1)
    search = _hardest_both_sides if side == "both" else _hardest_partner_side
    group_ids = None if groups is None else torch.as_tensor(np.asarray(groups, dtype=np.int64), device=unit.device)
    return search(unit, below_partner, group_ids).cpu().numpy()


def random_negatives(pairs: int, rng: np.random.Generator, side: str = "both", groups: np.ndarray | None = None) -> np.ndarray:
    """A uniformly random candidate negative (see :func:`hardest_negatives`) for each of the
    2P pool sentences; with ``groups``, drawn again (up to RANDOM_REDRAWS times) while it is a
    sentence of the anchor's group."""
    own = np.arange(2 * pairs)
    partner = _partners(pairs)

    def draw(rows: np.ndarray) -> np.ndarray:
        if side == "partner":  # any other pair's sentence on the partner's side
            pick = rng.integers(0, pairs - 1, size=len(rows))
            pick += pick >= rows % pairs
            return pick + np.where(rows < pairs, pairs, 0)
        low, high = np.minimum(rows, partner[rows]), np.maximum(rows, partner[rows])
        pick = rng.integers(0, 2 * pairs - 2, size=len(rows))
        pick += pick >= low  # skip the two excluded slots, in increasing order
        pick += pick >= high
        return pick

    picks = draw(own)
    if groups is not None:
        groups = np.asarray(groups)
        for _ in range(RANDOM_REDRAWS):
            mates = np.flatnonzero(groups[picks % pairs] == groups[own % pairs])
            if not len(mates):
                break
            picks[mates] = draw(mates)
    return picks


def choose_negatives(
    embeddings: Tensor, mode: str, rng: np.random.Generator, side: str = "both", below_partner: bool = False,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Negatives for the pool: MAX (hardest), MIX (hardest with probability 0.5, else random)
    or RAND, among the candidates ``side`` and ``below_partner`` allow (:func:`hardest_negatives`).
    ``embeddings`` are the 2P pool sentences (side 1 rows, then side 2 rows). A negative is of
    the anchor's ``groups`` only when no other candidate is left (hardest) or drawing again did
    not find another (random)."""
    if mode not in NEGATIVE_MODES:
        raise ValueError(f"negative mode must be one of {NEGATIVE_MODES}, got {mode!r}")
    pairs = embeddings.shape[0] // 2
    if mode == "rand":
        return random_negatives(pairs, rng, side, groups)
    hardest = hardest_negatives(embeddings, side, below_partner, groups)
    if mode == "max":
        return hardest
    return np.where(rng.random(2 * pairs) < 0.5, hardest, random_negatives(pairs, rng, side, groups))


def regularization(encoder: Encoder, anchors: dict[int, Tensor], lambda_c: float, lambda_w: float) -> Tensor | float:
    """``λc‖Wc‖² + λw‖Ww − Ww_initial‖²``; anchored compositional weights (identity-RNN) are
    pulled back to their initial values instead of to zero. ``anchors`` maps ``id(param)``
    to its initial value (see :func:`initial_anchors`)."""
    total: Tensor | float = 0.0
    if lambda_w:
        total = total + lambda_w * sum((w - anchors[id(w)]).pow(2).sum() for w in encoder.embedding_tables())
    if lambda_c:
        total = total + lambda_c * sum(
            (p - anchors[id(p)] if anchored else p).pow(2).sum() for p, anchored in encoder.compositional_parameters()
        )
    return total


def initial_anchors(encoder: Encoder, lambda_c: float, lambda_w: float) -> dict[int, Tensor]:
    """Copies of the initial weights the regularizer pulls back to (only those it needs)."""
    keep = list(encoder.embedding_tables()) if lambda_w else []
    if lambda_c:
        keep += [p for p, anchored in encoder.compositional_parameters() if anchored]
    return {id(p): p.detach().clone() for p in keep}
