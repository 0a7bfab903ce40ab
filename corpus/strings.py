"""Any column of strings (an Arrow array or chunked array, or a Python sequence) as one Arrow
string array, without the per-value conversion that ``pa.array`` makes of a chunked array."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

Texts = pa.Array | pa.ChunkedArray | Sequence[str]


def string_array(texts: Texts) -> pa.Array:
    """``texts`` as a ``pa.string()`` array: Arrow input keeps its buffers (chunks are joined
    once, a large_string is cast), a Python sequence is converted."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    return texts.cast(pa.string()) if isinstance(texts, pa.Array) else pa.array(texts, pa.string())
