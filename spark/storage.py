"""Where the pipeline reads and writes: local paths, or URIs of Spark's Hadoop file systems.

A recording, the Parquet dataset and the report may live on the machine that runs the
command (a path) or anywhere Spark can reach (``file://``, ``hdfs://``, ``s3a://`` ...). A URI
is never put through :mod:`pathlib`, which would fold ``s3a://b/x`` into ``s3a:/b/x``: it goes
to Spark as given and is listed and read on the driver through the Hadoop ``FileSystem`` API
of the running session, with the cluster's connectors and credentials. A local path is made
absolute and given to Spark as a ``file:`` URI, so a cluster whose default file system is
HDFS still reads the local disk for it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from spark.failures import root_cause

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Location", "StorageError", "HadoopFiles", "is_uri", "location", "join", "basename", "spark_path"]

#: A local path, or a URI (kept as the string the user gave).
Location = Path | str

# Two letters at least: "C:/x" is a Windows path, not a URI.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


class StorageError(ValueError):
    """A URI cannot be listed, read or written; the message names it and the file system's reason."""


def is_uri(value: Location) -> bool:
    return isinstance(value, str) and bool(_URI.match(value))


def location(value: str) -> Location:
    """A command-line argument as a location: URIs stay strings, anything else is a path."""
    return value if is_uri(value) else Path(value)


def join(base: Location, *parts: str) -> Location:
    if is_uri(base):
        return "/".join([str(base).rstrip("/"), *parts])
    return Path(base).joinpath(*parts)


def basename(value: Location) -> str:
    return str(value).rstrip("/").rsplit("/", 1)[-1] if is_uri(value) else Path(value).name


def spark_path(value: Location) -> str:
    """What Spark is given: a URI untouched, a local path as an absolute ``file:`` URI."""
    return str(value) if is_uri(value) else Path(value).resolve().as_uri()


class HadoopFiles:
    """The few file operations the pipeline needs on a URI, through the session's Hadoop FS."""

    def __init__(self, spark: "SparkSession") -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, uri: str):
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        try:
            return path.getFileSystem(self._conf), path
        except Exception as exc:  # no connector for the scheme, a bad authority
            raise StorageError(f"{uri}: {root_cause(exc)}") from None

    def _call(self, uri: str, what):
        fs, path = self._fs(uri)
        try:
            return what(fs, path)
        except StorageError:
            raise
        except Exception as exc:  # access denied, an unreachable name node or bucket
            raise StorageError(f"{uri}: {root_cause(exc)}") from None

    def is_dir(self, uri: str) -> bool:
        return self._call(uri, lambda fs, p: fs.exists(p) and fs.getFileStatus(p).isDirectory())

    def files(self, uri: str, suffix: str) -> list[tuple[str, int]]:
        """``(uri, size)`` of the files directly in ``uri`` whose names end with ``suffix``, sorted."""
        def listing(fs, p):
            if not fs.exists(p) or not fs.getFileStatus(p).isDirectory():
                return []
            found = []
            for status in fs.listStatus(p):
                name = status.getPath().getName()
                if status.isFile() and name.endswith(suffix):
                    found.append((join(uri, name), int(status.getLen())))
            return sorted(found)
        return self._call(uri, listing)

    def read_text(self, uri: str) -> str:
        def read(fs, p):
            stream = fs.open(p)
            try:
                data = self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
            finally:
                stream.close()
            return bytes(data).decode("utf-8")
        return self._call(uri, read)

    def upload(self, local_dir: Path, uri: str) -> None:
        """Copy the files of ``local_dir`` into the directory ``uri`` (created if missing)."""
        def copy(fs, p):
            fs.mkdirs(p)
            for source in sorted(local_dir.iterdir()):
                if source.is_file():
                    target = self._jvm.org.apache.hadoop.fs.Path(join(uri, source.name))
                    fs.copyFromLocalFile(False, True, self._jvm.org.apache.hadoop.fs.Path(source.resolve().as_uri()),
                                         target)
        self._call(uri, copy)
