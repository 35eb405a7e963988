"""Append-only rotated files: never overwritten, rotated by size and by age, lines intact."""

from __future__ import annotations

from dmq.recorder.files import RotatingLineWriter
from dmq.recorder.schema import parse_data_file_name


class _Monotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lines(paths):
    return [line for p in paths for line in p.read_text().splitlines()]


def test_rotation_by_size_keeps_every_line_whole(tmp_path):
    writer = RotatingLineWriter(tmp_path, "h:3001", "s1", rotate_bytes=100)
    lines = [f'{{"i":{i},"pad":"{"x" * 20}"}}\n' for i in range(20)]
    for line in lines:
        writer.write(line)
    writer.close()
    assert len(writer.paths) > 3
    assert _lines(writer.paths) == [line.rstrip("\n") for line in lines]
    # A file is rotated only after it passed the limit: each holds at most one line beyond it.
    for path in writer.paths:
        assert path.stat().st_size < 100 + len(lines[0])
    assert [parse_data_file_name(p.name)[2] for p in writer.paths] == list(range(len(writer.paths)))


def test_rotation_by_age(tmp_path):
    clock = _Monotonic()
    writer = RotatingLineWriter(tmp_path, "n", "s", rotate_seconds=60, monotonic=clock)
    writer.write("a\n")
    clock.now = 59
    writer.maybe_rotate()
    writer.write("b\n")
    clock.now = 60
    writer.maybe_rotate()
    writer.write("c\n")
    writer.close()
    assert [p.read_text() for p in writer.paths] == ["a\nb\n", "c\n"]


def test_a_second_writer_of_the_session_never_touches_existing_files(tmp_path):
    first = RotatingLineWriter(tmp_path, "n", "s")
    first.write("one\n")
    first.close()
    other_session = RotatingLineWriter(tmp_path, "n", "t")
    second = RotatingLineWriter(tmp_path, "n", "s")
    second.write("two\n")
    other_session.write("three\n")
    second.close()
    other_session.close()
    assert first.paths[0].read_text() == "one\n"
    assert parse_data_file_name(second.paths[0].name)[2] == 1
    assert parse_data_file_name(other_session.paths[0].name)[2] == 0


def test_flush_makes_lines_visible_to_readers(tmp_path):
    writer = RotatingLineWriter(tmp_path, "n", "s")
    writer.write("x\n")
    assert writer.paths[0].read_text() == ""  # buffered: one big write later, not one per record
    writer.flush()
    assert writer.paths[0].read_text() == "x\n"
    writer.close()
