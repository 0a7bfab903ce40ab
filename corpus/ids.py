"""Stable ids and id hashes: shard assignment and deterministic tie-breaking."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np


def id_hash(pair_id: str) -> int:
    """64-bit hash of a pair id, identical on every machine and Python run."""
    return int.from_bytes(hashlib.blake2b(pair_id.encode("utf-8"), digest_size=8).digest(), "big")


def _blake2b_words(texts: Iterable[str], words: int) -> np.ndarray:
    """blake2b digests of ``words`` × 8 bytes of many strings, as a (strings, words) uint64 array
    of big-endian words (the digests are joined and read at once: half the time of converting
    each one)."""
    blake2b = hashlib.blake2b
    digests = b"".join([blake2b(text.encode("utf-8"), digest_size=8 * words).digest() for text in texts])
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64).reshape(-1, words)


def id_hashes(pair_ids: Iterable[str]) -> np.ndarray:
    """``id_hash`` of many ids as a uint64 array."""
    return _blake2b_words(pair_ids, 1)[:, 0]


def text_keys(texts: Iterable[str]) -> np.ndarray:
    """128-bit blake2b of many strings as a (strings, 2) uint64 array: a key that two different
    strings share with probability 2⁻¹²⁸, so keys can be compared instead of the strings."""
    return _blake2b_words(texts, 2)


def shard_of(pair_id: str, num_shards: int) -> int:
    return id_hash(pair_id) % num_shards


def line_id(stem: str, line: int) -> str:
    """Id for inputs without their own: file stem and zero-padded line number (sorts in order)."""
    return f"{stem}-{line:09d}"


def line_of_id(pair_id: str) -> int:
    """The line number of an id made by ``line_id``."""
    return int(pair_id.rsplit("-", 1)[1])
