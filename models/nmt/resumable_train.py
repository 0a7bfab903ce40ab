"""``fairseq-train`` whose resumed runs train on the same batches as uninterrupted ones.

fairseq breaks ties between training sentences of equal length with a permutation drawn from
numpy seeded by ``--seed`` plus the epoch in which the batch iterator is created: epoch 1 in a
run from scratch (the iterator is then reused), the resume epoch in a resumed run. A resumed
run therefore trained on differently composed batches, and its model and translations differed
(34 of 400 demo translations matched). Here the permutation is always drawn as in epoch 1, so a
run killed and resumed, at an epoch boundary or inside an epoch, ends with the uninterrupted
run's weights; everything else (dropout seeded per update, the per-epoch batch shuffle, optimizer
and scheduler state) fairseq already restores.
"""

import sys

from fairseq.data import LanguagePairDataset, data_utils
from fairseq_cli.train import cli_main


def _seed(argv: list[str]) -> int:
    return int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1


def main() -> None:
    first_epoch_seed = _seed(sys.argv) + 1
    ordered_indices = LanguagePairDataset.ordered_indices

    def ordered_as_in_the_first_epoch(dataset):
        with data_utils.numpy_seed(first_epoch_seed):
            return ordered_indices(dataset)

    LanguagePairDataset.ordered_indices = ordered_as_in_the_first_epoch
    cli_main()


if __name__ == "__main__":
    main()
