"""Which file is read, in which format, and its lines (corpus.inputs): each file once by its real
path, a name before a glob, English files only as partners, regular files only, gzip or plain
text by the bytes; lines cut at LF alone; no line of a gzip member that fails its check kept."""

import bz2
import contextlib
import gzip
import lzma
import os
import random
import re
import threading
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_reading import read_unit

from corpus.errors import InputError
from corpus.inputs import content_identity, resolve_inputs
from corpus.lines import read_lines
from corpus.outputs import digest_of
from corpus.readers import BitextRecord, Reject
from pipelines.ingest import BITEXT_FORMAT


def czeng_lines(count: int, tag: str = "a") -> list[bytes]:
    return [f"news-{tag}-{n}\t0.5\tVěta {tag} {n}.\tSentence {tag} {n}.\n".encode() for n in range(1, count + 1)]


def read_all(path: Path, max_line_bytes: int = 10_000) -> list:
    [unit] = resolve_inputs(str(path))
    return list(read_unit(BITEXT_FORMAT, unit, max_line_bytes, 7))


def resolve_within(seconds: float, spec: str) -> list:
    """resolve_inputs(spec), failing the test (not hanging it) if it blocks, as on a pipe."""
    outcome: list = []

    def run():
        try:
            outcome.append(resolve_inputs(spec))
        except InputError as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"resolve_inputs({spec!r}) blocked"
    return outcome[0]


@pytest.fixture
def folder(tmp_path):
    """A real folder ``data`` with an aligned pair w.cs/w.en, and symlinks to it: ``link`` ->
    data and ``loop`` -> the folder itself."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "w.cs").write_text("".join(f"Věta {n}.\n" for n in range(30)))
    (data / "w.en").write_text("".join(f"Sentence {n}.\n" for n in range(30)))
    (tmp_path / "link").symlink_to("data")
    (tmp_path / "loop").symlink_to(".")
    return tmp_path


FOLDER_SPELLINGS = ["data", "./data", "link", "loop/data", "loop/link", "data/../data", "link/../data", ".//data", "d*", "l?nk"]


@st.composite
def spelling(draw) -> tuple[bool, str]:
    """(relative to the folder?, one spelling of data/w.cs)."""
    relative = draw(st.booleans())
    inner = draw(st.sampled_from(FOLDER_SPELLINGS))
    name = draw(st.sampled_from(["w.cs", "./w.cs", "w.c?", "*.cs"]))
    separator = draw(st.sampled_from(["/", "//"]))
    return relative, f"{inner}{separator}{name}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spellings=st.lists(spelling(), min_size=1, max_size=4))
def test_one_file_in_any_spellings_is_one_input(folder, spellings):
    spec = ",".join(path if relative else f"{folder}/{path}" for relative, path in spellings)
    with contextlib.chdir(folder):
        units = resolve_inputs(spec)
    real = folder.resolve() / "data"
    assert [(unit.path, unit.partner, unit.source) for unit in units] == [(str(real / "w.cs"), str(real / "w.en"), "w.cs")]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spellings=st.lists(spelling(), min_size=1, max_size=4))
def test_any_spellings_of_one_file_have_one_content_identity(folder, spellings):
    """The fingerprint's identity of the inputs: one text for every spelling of the same file,
    its name and its bytes' digest."""
    spec = ",".join(path if relative else f"{folder}/{path}" for relative, path in spellings)
    with contextlib.chdir(folder):
        assert content_identity(spec) == f"w.cs={digest_of(folder / 'data' / 'w.cs')}"


def test_the_same_bytes_elsewhere_are_the_same_input_and_one_byte_is_another(tmp_path):
    for place in ("mount-a/czeng", "mount-b/elsewhere/czeng"):
        (tmp_path / place).mkdir(parents=True)
        (tmp_path / place / "x.cs").write_text("Věta.\n")
        (tmp_path / place / "x.en").write_text("A sentence.\n")
    a, b = (content_identity(f"{tmp_path / place / 'x.cs'}::{tmp_path / place / 'x.en'}") for place in ("mount-a/czeng", "mount-b/elsewhere/czeng"))
    assert a == b and str(tmp_path) not in a
    assert content_identity(str(tmp_path / "mount-a")) == content_identity(str(tmp_path / "mount-b/elsewhere"))  # a folder: its files
    (tmp_path / "mount-b/elsewhere/czeng/x.en").write_text("A sentence!\n")
    assert content_identity(f"{tmp_path / 'mount-b/elsewhere/czeng/x.cs'}::{tmp_path / 'mount-b/elsewhere/czeng/x.en'}") != a


def test_names_that_match_nothing_stay_as_given(tmp_path):
    with contextlib.chdir(tmp_path):
        assert content_identity("absent-*.gz") == "absent-*.gz=missing"
        assert content_identity("a.cs::") == "a.cs::"  # not a specification: refused when read


def test_the_english_side_matched_by_a_glob_is_read_as_the_partner_only(tmp_path):
    (tmp_path / "x.cs").write_text("Věta.\n")
    (tmp_path / "x.en").write_text("Sentence.\n")
    for spec in (f"{tmp_path}/x.*", f"{tmp_path}/*", f"{tmp_path}/x.en,{tmp_path}/x.cs", f"{tmp_path}/x.cs::{tmp_path}/x.en,{tmp_path}/*.en"):
        assert [(unit.path, unit.partner) for unit in resolve_inputs(spec)] == [(str(tmp_path / "x.cs"), str(tmp_path / "x.en"))], spec


@pytest.mark.parametrize("spec", ["alone.en", "*.en", "alone.eng.gz"])
def test_an_english_file_without_its_czech_file_is_refused(tmp_path, spec):
    (tmp_path / "alone.en").write_text("Sentence.\n")
    (tmp_path / "alone.eng.gz").write_bytes(gzip.compress(b"Sentence.\n"))
    with contextlib.chdir(tmp_path), pytest.raises(InputError, match="is the English side of a line-aligned pair"):
        resolve_inputs(spec)


def test_a_file_read_as_two_different_inputs_is_refused(tmp_path):
    for name in ("src.cs", "ref.A.en", "ref.B.en"):
        (tmp_path / name).write_text("Věta.\n")
    with pytest.raises(InputError, match="ref.A.en is given twice"):
        resolve_inputs(f"{tmp_path}/ref.A.en::{tmp_path}/ref.A.en")
    with pytest.raises(InputError, match="src.cs is given twice"):
        resolve_inputs(f"{tmp_path}/src.cs::{tmp_path}/ref.A.en,{tmp_path}/src.cs::{tmp_path}/src.cs")
    with pytest.raises(InputError, match="src.cs is given twice"):  # a foreign file, and another's partner
        resolve_inputs(f"{tmp_path}/src.cs::{tmp_path}/ref.B.en,{tmp_path}/ref.A.en::{tmp_path}/src.cs")


def test_a_foreign_file_with_two_references_gives_a_pair_for_each(tmp_path):
    """WMT's two references of one source: each (source, reference) is an input of its own,
    with ids of its own; the lines are read once per reference."""
    (tmp_path / "src.cs").write_text("Věta jedna.\nVěta dvě.\n")
    (tmp_path / "ref.A.en").write_text("Sentence one.\nSentence two.\n")
    (tmp_path / "ref.B.en").write_text("First sentence.\nSecond sentence.\n")
    units = resolve_inputs(f"{tmp_path}/src.cs::{tmp_path}/ref.A.en,{tmp_path}/src.cs::{tmp_path}/ref.B.en")
    assert [unit.source for unit in units] == ["src.cs~ref.A.en", "src.cs~ref.B.en"]
    records = [item for unit in units for item in read_unit(BITEXT_FORMAT, unit, 10_000)]
    assert [(r.id, r.foreign, r.en) for r in records] == [
        ("src.cs~ref.A.cs-000000001", "Věta jedna.", "Sentence one."), ("src.cs~ref.A.cs-000000002", "Věta dvě.", "Sentence two."),
        ("src.cs~ref.B.cs-000000001", "Věta jedna.", "First sentence."), ("src.cs~ref.B.cs-000000002", "Věta dvě.", "Second sentence.")]
    assert {r.domain for r in records} == {"src"}


def test_an_existing_name_is_that_file_and_only_an_absent_one_is_a_glob(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "part[1].tsv").write_bytes(b"".join(czeng_lines(3, "bracket")))
    (tmp_path / "dir" / "part1.tsv").write_bytes(b"".join(czeng_lines(3, "plain")))
    (tmp_path / "star*.tsv").write_bytes(b"".join(czeng_lines(2, "star")))
    (tmp_path / "starry.tsv").write_bytes(b"".join(czeng_lines(2, "starry")))

    def paths(spec):
        return [Path(unit.path).relative_to(tmp_path.resolve()).as_posix() for unit in resolve_inputs(spec)]

    assert paths(f"{tmp_path}/dir/part[1].tsv") == ["dir/part[1].tsv"]
    assert paths(f"{tmp_path}/star*.tsv") == ["star*.tsv"]
    (tmp_path / "dir" / "part[1].tsv").unlink()
    assert paths(f"{tmp_path}/dir/part[1].tsv") == ["dir/part1.tsv"], "absent: a glob, as in the shell"
    assert paths(f"{tmp_path}/**/part*.tsv") == ["dir/part1.tsv"], "** is any depth of folders"
    with contextlib.chdir(tmp_path / "dir"):
        assert paths("*.tsv") == ["dir/part1.tsv"], "a glob without a folder is relative to the current folder"
        assert paths("part1.tsv") == ["dir/part1.tsv"]
        with pytest.raises(InputError, match="no input file matches 'absent.tsv'"):
            resolve_inputs("absent.tsv")
        with pytest.raises(InputError, match="no input file matches 'absent\\*.tsv'"):
            resolve_inputs("absent*.tsv")


def test_a_fifo_is_refused_without_being_opened(tmp_path):
    os.mkfifo(tmp_path / "f.tsv")
    error = resolve_within(10, str(tmp_path / "f.tsv"))
    assert isinstance(error, InputError) and "f.tsv is a pipe, not a regular file" in str(error)


def test_a_process_substitution_is_refused_and_its_bytes_are_left_unread():
    reader, writer = os.pipe()
    data = b"".join(czeng_lines(50))
    os.write(writer, data)
    os.close(writer)
    try:
        error = resolve_within(10, f"/dev/fd/{reader}")
        assert isinstance(error, InputError) and f"/dev/fd/{reader} is a pipe, not a regular file" in str(error)
        assert os.read(reader, len(data) + 1) == data, "nothing was read from the pipe"
    finally:
        os.close(reader)


def test_a_character_device_is_refused():
    error = resolve_within(10, "/dev/zero")
    assert isinstance(error, InputError) and "/dev/zero is a character device" in str(error)


TEXT = b"".join(czeng_lines(20))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("b.tsv.bz2", bz2.compress(TEXT), "b.tsv.bz2 is bzip2-compressed; only gzip is read"),
        ("b.tsv", bz2.compress(TEXT), "b.tsv is bzip2-compressed; only gzip is read"),
        ("x.tsv.xz", lzma.compress(TEXT), "x.tsv.xz is xz-compressed"),
        ("z.tsv.zst", bytes.fromhex("28b52ffd") + b"\x00" * 8, "z.tsv.zst is zstd-compressed"),
        ("plain.gz", TEXT, "plain.gz is named .gz but is not gzip"),
        ("plain.bz2", TEXT, "plain.bz2 is named .bz2 but is not bzip2"),
        ("empty.tsv", b"", "empty.tsv is empty"),
    ],
)
def test_a_compression_other_than_gzip_or_a_misleading_name_is_refused(tmp_path, name, content, message):
    (tmp_path / "ok.tsv").write_bytes(TEXT)
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError, match=re.escape(message)):
        resolve_inputs(f"{tmp_path}/ok.tsv,{tmp_path}/{name}")


def test_a_zip_archive_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as archive:
        archive.writestr("a.tsv", TEXT)
    with pytest.raises(InputError, match="a.zip is zip-compressed"):
        resolve_inputs(str(tmp_path / "a.zip"))


def test_gzip_is_known_by_its_bytes_not_its_name(tmp_path):
    (tmp_path / "train.tsv").write_bytes(gzip.compress(TEXT))
    items = read_all(tmp_path / "train.tsv")
    assert len(items) == 20 and all(isinstance(item, BitextRecord) for item in items)


# Line ends: LF alone cuts lines; a CR is part of the line (and rejects it) unless it ends one.


def test_a_stray_cr_in_a_long_first_line_rejects_that_line_only(tmp_path):
    """The issue's case: no LF in the first block read, one CR in it; 40 good lines after."""
    first = b"news-long-1\t0.5\t" + b"x" * 40_000 + b"\r" + b"y" * 40_000 + b"\tE.\n"
    (tmp_path / "cr.tsv").write_bytes(first + b"".join(czeng_lines(40)))
    items = read_all(tmp_path / "cr.tsv")
    assert [(item.line, item.reason) for item in items if isinstance(item, Reject)] == [(1, "too_long")]
    assert "carriage return" in items[0].detail
    assert [item.line for item in items if isinstance(item, BitextRecord)] == list(range(2, 42))


@st.composite
def lines_with_crs(draw):
    """Good CzEng lines, some with a CR inside (or a CR before their CRLF), some very long, with
    LF or CRLF ends; returns the file's bytes and the numbers of the lines holding a stray CR."""
    count = draw(st.integers(1, 30))
    stray = draw(st.sets(st.integers(1, count)))
    lines = []
    for number in range(1, count + 1):
        line = czeng_lines(number)[-1].rstrip(b"\n")
        if draw(st.booleans()):
            line = line.replace(b"\t0.5\t", b"\t0.5\t" + b"w" * draw(st.integers(0, 70_000)) + b" ")
        if number in stray:  # before the last byte (a CR there would be a CRLF), not inside a UTF-8 character
            at = draw(st.sampled_from([at for at in range(len(line) - 1) if line[at] & 0xC0 != 0x80]))
            line = line[:at] + b"\r" + line[at:]
        lines.append(line + draw(st.sampled_from([b"\n", b"\r\n"])))
    return b"".join(lines), stray


@settings(max_examples=40, deadline=None)
@given(lines_with_crs(), st.booleans())
def test_a_cr_inside_a_line_rejects_that_line_and_no_other(tmp_path_factory, generated, compress):
    data, stray = generated
    path = tmp_path_factory.mktemp("cr") / ("t.gz" if compress else "t.tsv")
    path.write_bytes(gzip.compress(data, compresslevel=1) if compress else data)
    items = read_all(path, max_line_bytes=200_000)
    assert sorted(item.line for item in items) == list(range(1, data.count(b"\n") + 1))
    assert {item.line for item in items if isinstance(item, Reject)} == stray
    assert all("carriage return" in item.detail for item in items if isinstance(item, Reject))


def test_cr_only_line_ends_are_one_line_whose_reject_says_so(tmp_path):
    (tmp_path / "mac.tsv").write_bytes(b"".join(czeng_lines(5)).replace(b"\n", b"\r"))
    [reject] = read_all(tmp_path / "mac.tsv")
    assert reject.reason == "control_character" and "lines end with LF or CRLF" in reject.detail


def test_a_cr_that_ends_the_file_is_a_line_end(tmp_path):
    (tmp_path / "t.tsv").write_bytes(b"news-1\t0.5\tA.\tB.\r")
    [record] = read_all(tmp_path / "t.tsv")
    assert record.en == "B."


# Damaged gzip: no line of a member that fails its check is kept.


def members_of(text: bytes, cuts: list[int], level: int = 6) -> list[bytes]:
    """``text`` gzipped as one member per piece between the ``cuts`` (a line may span two)."""
    bounds = [0, *sorted(cuts), len(text)]
    return [gzip.compress(text[start:end], compresslevel=level) for start, end in zip(bounds, bounds[1:], strict=False)]


def check_damage(path: Path, lines: list[bytes], members: list[bytes], damaged: int) -> None:
    """Every record is its line, unchanged; when the damage is found, the records are exactly the
    lines that end inside the members before the damaged one, then damaged_gzip rejects, then one
    truncated_file; when it is not (a header byte gzip does not check), every line is a record."""
    items = read_all(path)
    records = [item for item in items if isinstance(item, BitextRecord)]
    for record in records:
        assert f"{record.id}\t0.5\t{record.foreign}\t{record.en}\n".encode() == lines[record.line - 1]
    rejects = [item for item in items if isinstance(item, Reject)]
    if not rejects:
        assert len(records) == len(lines)
        return
    verified = sum(len(gzip.decompress(member)) for member in members[:damaged])
    kept = sum(1 for end in _line_ends(lines) if end <= verified)
    assert [record.line for record in records] == list(range(1, kept + 1))
    *per_line, stop = rejects
    assert {reject.reason for reject in per_line} <= {"damaged_gzip"} and stop.reason == "truncated_file"
    assert [reject.line for reject in per_line] == list(range(kept + 1, kept + 1 + len(per_line)))
    assert stop.line == kept + len(per_line) + 1 and f"gzip member {damaged + 1}" in stop.detail


def _line_ends(lines: list[bytes]) -> list[int]:
    ends, offset = [], 0
    for line in lines:
        offset += len(line)
        ends.append(offset)
    return ends


@st.composite
def damaged_gzip(draw):
    """A CzEng file cut into 1-5 gzip members at random bytes (lines may span members; big
    members hold more than one block read), and damage in one member: bytes changed at random,
    or the file cut inside it."""
    lines = czeng_lines(draw(st.integers(1, 4000)), tag=draw(st.sampled_from(["a", "ž" * 30])))
    text = b"".join(lines)
    cuts = draw(st.lists(st.integers(1, len(text) - 1), max_size=4, unique=True)) if len(text) > 1 else []
    members = members_of(text, cuts, level=draw(st.sampled_from([0, 1, 6])))
    damaged = draw(st.integers(0, len(members) - 1))
    member = bytearray(members[damaged])
    if draw(st.booleans()):
        member = member[: draw(st.integers(1, len(member) - 1))]
    else:
        for at in draw(st.lists(st.integers(0, len(member) - 1), min_size=1, max_size=3)):
            member[at] ^= draw(st.integers(1, 255))
    return lines, members, damaged, b"".join(members[:damaged]) + bytes(member) + b"".join(members[damaged + 1 :])


@settings(max_examples=80, deadline=None)
@given(damaged_gzip())
def test_no_line_of_a_damaged_gzip_member_is_kept(tmp_path_factory, generated):
    lines, members, damaged, data = generated
    path = tmp_path_factory.mktemp("gz") / "train.gz"
    path.write_bytes(data)
    if not data.startswith(b"\x1f\x8b"):
        with pytest.raises(InputError, match="train.gz is named .gz but is not gzip"):
            resolve_inputs(str(path))
        return
    check_damage(path, lines, members, damaged)


def test_a_changed_byte_found_only_by_the_checksum_keeps_no_line_of_its_member(tmp_path):
    """Stored (uncompressed) deflate blocks: a changed letter is valid deflate data, so only the
    member's CRC-32 finds it, after 600 KB of its lines were decompressed."""
    lines = czeng_lines(20_000)
    members = members_of(b"".join(lines), [len(b"".join(lines[:5000]))], level=0)
    second = bytearray(members[1])
    second[len(second) // 2] ^= 0x20  # a letter's case
    (tmp_path / "train.gz").write_bytes(members[0] + bytes(second))
    check_damage(tmp_path / "train.gz", lines, members, 1)
    items = read_all(tmp_path / "train.gz")
    assert sum(isinstance(item, BitextRecord) for item in items) == 5000
    assert sum(getattr(item, "reason", "") == "damaged_gzip" for item in items) > 10_000


def test_a_damaged_member_in_the_english_file_of_a_pair_keeps_only_checked_pairs(tmp_path):
    count = 3000
    (tmp_path / "x.cs").write_text("".join(f"Věta {n}.\n" for n in range(1, count + 1)))
    english = "".join(f"Sentence {n}.\n" for n in range(1, count + 1)).encode()
    members = members_of(english, [len(english) // 3, 2 * len(english) // 3])
    second = bytearray(members[1])
    second[len(second) // 2] ^= 0xFF
    (tmp_path / "x.en").write_bytes(members[0] + bytes(second) + members[2])
    items = read_all(tmp_path / "x.cs")
    records = [item for item in items if isinstance(item, BitextRecord)]
    assert records and all(record.en == f"Sentence {record.line}." and record.foreign == f"Věta {record.line}." for record in records)
    assert [record.line for record in records] == list(range(1, english[: len(english) // 3].count(b"\n") + 1)), "the first member's lines"
    assert {item.reason for item in items if isinstance(item, Reject)} <= {"damaged_gzip", "truncated_file", "misaligned"}
    assert sum(getattr(item, "reason", "") == "truncated_file" for item in items) == 1


def test_read_lines_cuts_at_lf_and_keeps_a_cr_inside(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"a\r\nb\rc\n\nd")
    assert list(read_lines(str(tmp_path / "t.txt"), "t.txt", [])) == [b"a\r", b"b\rc", b"", b"d"]


def test_random_spellings_of_a_pair_through_read_unit_give_each_line_once(folder):
    spellings = ["data/w.cs", "./data/w.cs", "link/w.cs", "loop/link//w.cs", f"{folder}/data/w.cs"]
    random.Random(0).shuffle(spellings)
    with contextlib.chdir(folder):
        units = resolve_inputs(",".join(spellings))
    items = [item for unit in units for item in read_unit(BITEXT_FORMAT, unit, 10_000)]
    assert [item.line for item in items] == list(range(1, 31)) and all(isinstance(item, BitextRecord) for item in items)


def test_a_translation_reader_gives_each_asked_line_of_plain_and_gzip_files_forward_back_and_far(tmp_path):
    from corpus.lines import LineIndex, index_lines
    from corpus.translation_files import TRANSLATION_RUN_LINES, TranslationFile, TranslationReader

    lines = 3 * TRANSLATION_RUN_LINES + 17
    text = "".join(f"translation {n}\r\n" if n % 3 else f"translation {n}\n" for n in range(1, lines + 1)).encode()
    (tmp_path / "plain.en").write_bytes(text)
    (tmp_path / "packed.en.gz").write_bytes(gzip.compress(text))
    asked = [[1, 2, 5], [9_999, 10_000, 10_001], [25_000], [3, 4], [lines - 1, lines]]  # on, across a run, far, back, the end
    for name in ("plain.en", "packed.en.gz"):
        index = index_lines(str(tmp_path / name), TRANSLATION_RUN_LINES)
        assert isinstance(index, LineIndex) and index.lines == lines and index.compressed == name.endswith(".gz") and not index.damage
        reader = TranslationReader(TranslationFile(str(tmp_path / name), "foreign", "system", name, index))
        for numbers in asked:
            got = [raw.removesuffix(b"\r") for raw in reader.take(numbers)]
            assert got == [f"translation {n}".encode() for n in numbers], (name, numbers)
