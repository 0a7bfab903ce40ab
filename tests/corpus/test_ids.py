import hashlib

import numpy as np

from corpus.ids import id_hash, id_hashes


def test_id_hash_is_blake2b_with_an_eight_byte_digest_big_endian():
    digest = hashlib.blake2b(b"news-b0-00train-f00001-s7", digest_size=8).digest()
    assert id_hash("news-b0-00train-f00001-s7") == int.from_bytes(digest, "big")


def test_id_hashes_of_many_ids_equal_each_id_hash():
    ids = ["", "a", "é-1", "news-b0-00train-f00001-s7", *(f"x{i}" for i in range(1000))]
    hashes = id_hashes(ids)
    assert hashes.dtype == np.uint64
    assert hashes.tolist() == [id_hash(pair_id) for pair_id in ids]
    assert id_hashes(iter(ids[:3])).tolist() == [id_hash(pair_id) for pair_id in ids[:3]]
    assert id_hashes([]).shape == (0,)
