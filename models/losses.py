"""The margin loss of Wieting et al. (2016, eq. 1; ParaNMT 2018, section 4.2) and the choice
of its negative examples, including mega-batching (ParaNMT section 4.2.1).

Loss for a pair (g1, g2) with negatives t1, t2, averaged over the pairs:
``max(0, δ − cos(g1, g2) + cos(g1, t1)) + max(0, δ − cos(g1, g2) + cos(g2, t2))``,
plus ``λc‖Wc‖²`` and ``λw‖Ww − Ww_initial‖²``.

Negatives come from a pool of P pairs (one mini-batch, or M mini-batches for mega-batching):
every one of the 2P sentences is a candidate for every other, except a sentence itself and
its partner in the pair.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from models.encoders import Encoder

NEGATIVE_MODES = ("max", "mix", "rand")
# Rows of the pool similarity matrix computed at once: bounds memory for large pools
# (M = 40, batch 100 → 8,000 candidates) at 8,000 × 2,048 floats.
_SIMILARITY_ROWS = 2048


def margin_loss(g1: Tensor, g2: Tensor, t1: Tensor, t2: Tensor, margin: float) -> Tensor:
    """Mean over pairs of the two hinge terms (cosine similarities)."""
    positive = F.cosine_similarity(g1, g2)
    return (
        torch.relu(margin - positive + F.cosine_similarity(g1, t1))
        + torch.relu(margin - positive + F.cosine_similarity(g2, t2))
    ).mean()


def _excluded(pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Pool layout: sentence i < P is side 1 of pair i, P + i is its side 2. For each of the
    2P sentences, (itself, its partner)."""
    own = np.arange(2 * pairs)
    return own, (own + pairs) % (2 * pairs)


def hardest_negatives(embeddings: Tensor) -> np.ndarray:
    """For each of the 2P pool sentences (side 1 rows, then side 2 rows), the index of the
    most cosine-similar other pool sentence that is neither itself nor its partner."""
    rows = embeddings.shape[0]
    if rows < 4 or rows % 2:
        raise ValueError(f"a negative pool needs at least 2 whole pairs, got {rows} sentences")
    unit = F.normalize(embeddings.float(), dim=1)
    own, partner = _excluded(rows // 2)
    own_t = torch.as_tensor(own, device=unit.device)
    partner_t = torch.as_tensor(partner, device=unit.device)
    best = []
    for start in range(0, rows, _SIMILARITY_ROWS):
        stop = min(start + _SIMILARITY_ROWS, rows)
        similarity = unit[start:stop] @ unit.T
        index = torch.arange(stop - start, device=unit.device)
        similarity[index, own_t[start:stop]] = -torch.inf
        similarity[index, partner_t[start:stop]] = -torch.inf
        best.append(similarity.argmax(dim=1))
    return torch.cat(best).cpu().numpy()


def random_negatives(pairs: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random valid negative for each of the 2P pool sentences."""
    own, partner = _excluded(pairs)
    low, high = np.minimum(own, partner), np.maximum(own, partner)
    pick = rng.integers(0, 2 * pairs - 2, size=2 * pairs)
    pick += pick >= low  # skip the two excluded slots, in increasing order
    pick += pick >= high
    return pick


def choose_negatives(embeddings: Tensor, mode: str, rng: np.random.Generator) -> np.ndarray:
    """Negatives for the pool: MAX (hardest), MIX (hardest with probability 0.5, else random)
    or RAND. ``embeddings`` are the 2P pool sentences (side 1 rows, then side 2 rows)."""
    if mode not in NEGATIVE_MODES:
        raise ValueError(f"negative mode must be one of {NEGATIVE_MODES}, got {mode!r}")
    pairs = embeddings.shape[0] // 2
    if mode == "rand":
        return random_negatives(pairs, rng)
    hardest = hardest_negatives(embeddings)
    if mode == "max":
        return hardest
    return np.where(rng.random(2 * pairs) < 0.5, hardest, random_negatives(pairs, rng))


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
