"""Property-based: real-looking CzEng lines mutated at random (byte flips, truncation, control
characters, extra tabs, huge lines) are each read exactly once, as the unchanged record when
untouched, or as a record or a reject with a reason, and nothing crashes."""

import gzip
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from raw_reading import read_unit

from corpus.inputs import resolve_inputs
from corpus.readers import BitextRecord, Reject
from pipelines.ingest import BITEXT_FORMAT

MAX_LINE_BYTES = 300
CZECH = ["Pes štěká na kočku.", "Příliš žluťoučký kůň úpěl ďábelské ódy.", "Dobrý den, pane Nováku!", "Byla tma."]
ENGLISH = ["The dog barks at the cat.", "Too yellow a horse moaned devilish odes.", "Good morning, Mr Novák!", "It was dark."]


def good_line(number: int) -> bytes:
    return f"news-b1-00train-f00001-s{number}\t0.{number % 10}\t{CZECH[number % 4]}\t{ENGLISH[number % 4]}".encode()


@st.composite
def mutation(draw, line: bytes) -> bytes:
    kind = draw(st.sampled_from(["flip", "truncate", "control", "tab", "huge"]))
    at = draw(st.integers(0, len(line) - 1))
    if kind == "flip":
        byte = draw(st.integers(0, 255).filter(lambda b: b != 0x0A))  # a new LF would make two lines
        return line[:at] + bytes([byte]) + line[at + 1 :]
    if kind == "truncate":
        return line[:at]
    if kind == "control":
        return line[:at] + draw(st.sampled_from(["\x00", "\x01", "\x1b", "\x7f", "\x85", "\r"])).encode() + line[at:]
    if kind == "tab":
        return line[:at] + b"\t" + line[at:]
    return line + b"x" * MAX_LINE_BYTES


@st.composite
def corpus(draw):
    lines = [good_line(number) for number in range(1, draw(st.integers(1, 25)) + 1)]
    mutated = draw(st.sets(st.integers(0, len(lines) - 1)))
    for index in mutated:
        lines[index] = draw(mutation(lines[index]))
    return lines, mutated, draw(st.sampled_from([b"\n", b"\r\n"])), draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(corpus())
def test_every_line_arrives_once_as_itself_or_as_a_reject_with_a_reason(generated):
    lines, mutated, end, compress = generated
    data = end.join(lines) + end
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("train.gz" if compress else "train.txt")
        path.write_bytes(gzip.compress(data) if compress else data)
        items = list(read_unit(BITEXT_FORMAT, resolve_inputs(str(path))[0], MAX_LINE_BYTES, 7))
    assert sorted(item.line for item in items) == list(range(1, len(lines) + 1))
    for item in items:
        index = item.line - 1
        if index not in mutated:
            number = index + 1
            assert item == BitextRecord(f"news-b1-00train-f00001-s{number}", path.name, number, "news",
                                        float(f"0.{number % 10}"), "cs", CZECH[number % 4], ENGLISH[number % 4])
        elif isinstance(item, Reject):
            assert item.reason and item.detail
        else:
            assert isinstance(item, BitextRecord) and item.foreign and item.en and item.id
