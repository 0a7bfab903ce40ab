"""The bitext as fairseq's binary dataset: the same bytes as the text route through fairseq-preprocess."""

import filecmp
from pathlib import Path

import pytest
from fairseq.data import indexed_dataset
from nmt_fixtures import bitext_table, toy_pairs

import schemas
from models.nmt import binarize, spm

# Beside the toy sentences: a side too long, a side with no piece, characters the vocabulary
# lacks (<unk>), and U+0085, which sentencepiece keeps as an unknown piece while fairseq reads it
# as whitespace: the sentence loses that token in fairseq-preprocess.
ODD_PAIRS = [("Pes " * 80, "The dog."), ("\u200b", "Nothing."), ("Pes ☃ vidí rybu.", "The dog ☃ sees fish."),
             ("Pes\x85vidí kočka.", "The dog\x85sees cat."), ("\x85", "Next line.")]


@pytest.fixture(scope="module")
def bitext(tmp_path_factory) -> list[str]:
    """Four shards, the odd pairs in the second, none in the third."""
    root = tmp_path_factory.mktemp("bitext")
    shards = [toy_pairs(150, seed=2), [*toy_pairs(100, seed=3), *ODD_PAIRS], [], toy_pairs(50, seed=4)]
    paths = []
    for number, pairs in enumerate(shards):
        paths.append(str(root / f"part-{number:05d}.parquet"))
        schemas.write_table(bitext_table(pairs, source=f"shard{number}"), schemas.BITEXT, paths[-1])
    return paths


@pytest.fixture(scope="module")
def models(bitext, tmp_path_factory) -> dict[str, dict[str, Path]]:
    """A joint sentencepiece model and per-language ones (the toy vocabulary has no ☃)."""
    clean = [path for path in bitext if "00001" not in path]
    return {joint: spm.train_from_bitext(clean, tmp_path_factory.mktemp(f"spm-{joint}"), spm.SpmConfig(vocab_size=100), joint)
            for joint in (True, False)}


def reference(bitext, models, root: Path, valid_size: int, max_pieces: int) -> dict:
    """The text route: piece text, then fairseq-preprocess."""
    codecs = {lang: spm.Codec(path) for lang, path in models.items()}
    counts = binarize.export_pieces(bitext, codecs["cs"], codecs["en"], root / "text", valid_size, max_pieces)
    dicts = {lang: root / f"dict.{lang}.txt" for lang in models}
    for lang, path in dicts.items():
        path.write_text("".join(line + "\n" for line in spm.fairseq_dictionary(models[lang])))
    binarize.preprocess_pieces(root / "text", dicts["cs"], dicts["en"], root / "data-bin")
    (root / "data-bin" / "preprocess.log").unlink()
    return counts


@pytest.mark.parametrize(("joint", "valid_size", "workers"), [(True, 20, 2), (False, 0, 1)])
def test_same_bytes_as_fairseq_preprocess(bitext, models, tmp_path, joint, valid_size, workers):
    expected = reference(bitext, models[joint], tmp_path / "reference", valid_size, max_pieces=40)
    counts = binarize.binarize_bitext(bitext, models[joint], tmp_path / "data-bin", valid_size, max_pieces=40, workers=workers)
    assert counts == expected
    assert counts["too_long"] == 1 and counts["empty"] == 1 and (counts["valid"] > 0) == (valid_size > 0)
    names = sorted(path.name for path in (tmp_path / "data-bin").iterdir())
    assert names == sorted(path.name for path in (tmp_path / "reference" / "data-bin").iterdir())
    assert len(names) == (10 if valid_size else 6)
    _, mismatched, errors = filecmp.cmpfiles(tmp_path / "data-bin", tmp_path / "reference" / "data-bin", names, shallow=False)
    assert mismatched == errors == []


def test_tokens_are_those_fairseq_reads_from_the_joined_pieces(models):
    vocabulary = binarize.Vocabulary.of(models[True]["cs"])
    texts = ["Pes vidí kočka.", "☃", "Pes\x85vidí ☃ rybu.", "\x85", ""]
    tokens, sizes, pieces = vocabulary.encode(texts, threads=1)
    read = [vocabulary.dictionary.encode_line(" ".join(vocabulary.processor.encode(text, out_type=str)),
                                              add_if_not_exist=False).tolist() for text in texts]
    assert tokens.tolist() == [token for sentence in read for token in sentence]
    assert sizes.tolist() == [len(sentence) for sentence in read]
    assert pieces.tolist() == [len(vocabulary.processor.encode(text)) for text in texts]
    assert vocabulary.dictionary.unk() in read[1]
    # U+0085 is a piece of its own that fairseq does not read: one token fewer than pieces + </s>.
    assert (sizes < pieces + 1).tolist() == [False, False, True, True, False]


def test_split_by_id_hash_and_counted_leftovers(bitext, models, tmp_path):
    counts = binarize.binarize_bitext(bitext, models[True], tmp_path / "a", valid_size=30, max_pieces=40, workers=2)
    assert counts["train"] + counts["valid"] == 300 + 3 and 10 <= counts["valid"] <= 45
    for split in binarize.SPLITS:
        for lang in binarize.LANGS:
            dataset = indexed_dataset.MMapIndexedDataset(str(tmp_path / "a" / f"{split}.cs-en.{lang}"))
            assert len(dataset) == counts[split]
            assert all(1 <= size <= 41 for size in dataset.sizes)
    again = binarize.binarize_bitext(bitext, models[True], tmp_path / "b", valid_size=30, max_pieces=40, workers=1)
    assert again == counts
    names = sorted(path.name for path in (tmp_path / "a").iterdir())
    assert sorted(filecmp.cmpfiles(tmp_path / "a", tmp_path / "b", names, shallow=False)[0]) == names
    with pytest.raises(ValueError, match="no training pairs"):
        binarize.binarize_bitext(bitext, models[True], tmp_path / "c", valid_size=30, max_pieces=2)


@pytest.mark.parametrize("joint", [True, False])
def test_every_pair_the_trainer_reads_decodes_to_its_bitext_pair(models, tmp_path, joint):
    """The data the model sees, as fairseq's translation task loads it: each training and
    validation pair, decoded back to text, is a pair of the bitext (a shifted or empty side would
    teach a language model that says one sentence whatever the source). Pairs left out (too long,
    empty) sit between the others in the shards, where a shift would start."""
    from fairseq.data import Dictionary
    from fairseq.tasks.translation import load_langpair_dataset

    shards = [toy_pairs(150, seed=2), [*toy_pairs(60, seed=3), ("Pes " * 80, "The dog."), ("\u200b", "The cat."), *toy_pairs(60, seed=4)]]
    bitext = []
    for number, pairs in enumerate(shards):
        bitext.append(str(tmp_path / f"part-{number:05d}.parquet"))
        schemas.write_table(bitext_table(pairs, source=f"shard{number}"), schemas.BITEXT, bitext[-1])
    counts = binarize.binarize_bitext(bitext, models[joint], tmp_path / "data-bin", valid_size=30, max_pieces=40, workers=2)
    codecs = {lang: spm.Codec(path) for lang, path in models[joint].items()}
    dicts = {lang: Dictionary.load(str(tmp_path / "data-bin" / f"dict.{lang}.txt")) for lang in ("cs", "en")}
    pairs = {pair for shard in shards for pair in shard}
    for split in binarize.SPLITS:
        dataset = load_langpair_dataset(str(tmp_path / "data-bin"), split, "cs", dicts["cs"], "en", dicts["en"], combine=False,
                                        dataset_impl="mmap", upsample_primary=1, left_pad_source=True, left_pad_target=False,
                                        max_source_positions=64, max_target_positions=64)
        decoded = [tuple(codecs[lang].decode([dicts[lang].string(dataset[i][side]).split()])[0]
                         for lang, side in (("cs", "source"), ("en", "target"))) for i in range(len(dataset))]
        assert len(decoded) == counts[split] > 0
        assert [pair for pair in decoded if pair not in pairs] == []
    assert counts["too_long"] == counts["empty"] == 1
