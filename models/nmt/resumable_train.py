"""``fairseq-train`` whose resumed runs train on the same batches as uninterrupted ones.

fairseq breaks ties between training sentences of equal length with a permutation drawn from
numpy seeded by ``--seed`` plus the epoch in which the batch iterator is created: epoch 1 in a
run from scratch (the iterator is then reused), the resume epoch in a resumed run. A resumed
run therefore trained on differently composed batches, and its model and translations differed
(34 of 400 demo translations matched). Here the permutation is always drawn as in epoch 1, so a
resumed run ends with the uninterrupted run's weights (tested for a resume at an epoch boundary;
inside an epoch fairseq also restores its position in the same batches). Everything else
(dropout seeded per update, the per-epoch batch shuffle, optimizer and scheduler state) fairseq
already restores.
"""

import argparse
import sys

from fairseq.data import LanguagePairDataset, data_utils
from fairseq_cli.train import cli_main


def _seed(argv: list[str]) -> int:
    """fairseq's ``--seed`` (``--seed N`` or ``--seed=N``; its default is 1)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_known_args(argv)[0].seed


def main() -> None:
    first_epoch_seed = _seed(sys.argv[1:]) + 1
    ordered_indices = LanguagePairDataset.ordered_indices

    def ordered_as_in_the_first_epoch(dataset):
        with data_utils.numpy_seed(first_epoch_seed):
            return ordered_indices(dataset)

    LanguagePairDataset.ordered_indices = ordered_as_in_the_first_epoch
    cli_main()


if __name__ == "__main__":
    main()
