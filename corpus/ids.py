"""Stable ids and id hashes: shard assignment and deterministic tie-breaking."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np


def id_hash(pair_id: str) -> int:
    """64-bit hash of a pair id, identical on every machine and Python run."""
    return int.from_bytes(hashlib.blake2b(pair_id.encode("utf-8"), digest_size=8).digest(), "big")


def id_hashes(pair_ids: Iterable[str]) -> np.ndarray:
    """``id_hash`` of many ids as a uint64 array (the digests are joined and read as big-endian
    integers at once: half the time of converting each one)."""
    blake2b = hashlib.blake2b
    digests = b"".join([blake2b(pair_id.encode("utf-8"), digest_size=8).digest() for pair_id in pair_ids])
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64)


def shard_of(pair_id: str, num_shards: int) -> int:
    return id_hash(pair_id) % num_shards


def line_id(stem: str, line: int) -> str:
    """Id for inputs without their own: file stem and zero-padded line number (sorts in order)."""
    return f"{stem}-{line:09d}"


def line_of_id(pair_id: str) -> int:
    """The line number of an id made by ``line_id``."""
    return int(pair_id.rsplit("-", 1)[1])
