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

Each validation is followed by the collapse watch (models.nmt.collapse_watch): a fixed sample of
validation sources translated by the model as it is, so that a model whose translations stop
depending on the source is seen in the log while it trains.
"""

import argparse
import sys
from pathlib import Path

import fairseq_cli.train
from fairseq import distributed_utils
from fairseq.data import LanguagePairDataset, data_utils
from fairseq_cli.train import cli_main

from models.nmt import collapse_watch


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
    validate = fairseq_cli.train.validate

    def validate_and_watch(cfg, trainer, task, epoch_itr, subsets):
        losses = validate(cfg, trainer, task, epoch_itr, subsets)
        if distributed_utils.is_master(cfg.distributed_training):
            collapse_watch.observe(trainer, task, epoch_itr.epoch, Path(cfg.checkpoint.save_dir))
        return losses

    fairseq_cli.train.validate = validate_and_watch
    cli_main()


if __name__ == "__main__":
    main()
