"""Storage backends: the file operations of a storage root, local or any fsspec URL.

A *storage root* is a local directory (the embedded default) or an fsspec URL (``s3://bucket/prefix``
with the ``s3`` extra, i.e. ``s3fs``; ``memory://`` for tests).  :func:`open_storage` picks the
backend; fsspec and s3fs are imported only for URL roots.  Every path is relative to the root and
'/'-separated.

* :meth:`Storage.write_atomic` writes through a temporary name, fsyncs and renames into place
  (local; an object store publishes a PUT atomically on close) and returns the new file's
  :class:`FileInfo` (size and checksum, computed while writing);
* :meth:`Storage.read_verified` / :meth:`Storage.verify` check a file against its
  :class:`FileInfo` before anything decodes it, raising :class:`CorruptSegmentError` on a
  missing, truncated or altered file;
* :meth:`Storage.list_files`, :meth:`Storage.remove_file` and :meth:`Storage.remove_empty_dir`
  are the garbage collector's: what is stored, and removing what nothing names.

The segment file format (:mod:`vecgrid.storage.segment_files`) and the QueryNode's segment loader
both read and write through these backends.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import posixpath
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

import pyarrow as pa

from .fsutil import fsync_dir

__all__ = [
    "FileInfo", "SegmentStorageError", "CorruptSegmentError", "StorageBackendUnavailableError",
    "Hasher", "checksum_of", "algorithm_of", "Storage", "StoredFile", "LocalStorage", "FsspecStorage",
    "open_storage", "canonical_root", "set_filesystem_options", "filesystem_options",
]

_CHUNK: Final = 8 << 20  # streaming verification reads


class SegmentStorageError(Exception):
    """Base class for segment storage errors."""


class CorruptSegmentError(SegmentStorageError):
    """A segment file is missing, truncated, or does not match its recorded checksum."""


class StorageBackendUnavailableError(SegmentStorageError, ImportError):
    """The storage root needs an optional package that is not installed (e.g. s3fs for s3://)."""


@dataclass(frozen=True)
class FileInfo:
    """One stored file: ``path`` relative to the storage root ('/'-separated), size, checksum.

    ``checksum`` is ``"<algorithm>:<hex digest>"`` so the algorithm can change without a migration.
    """

    path: str
    size: int
    checksum: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "checksum": self.checksum}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FileInfo:
        return cls(str(d["path"]), int(d["size"]), str(d["checksum"]))


# ---------------------------------------------------------------------------------------------
# checksums


class Hasher:
    def __init__(self, algorithm: str) -> None:
        self.algorithm = algorithm
        if algorithm == "sha256":
            self._h: Any = hashlib.sha256()
        elif algorithm == "crc32":
            self._crc = 0
        else:
            raise ValueError(f"unknown checksum algorithm {algorithm!r} (sha256 or crc32)")

    def update(self, data: bytes | memoryview) -> None:
        if self.algorithm == "sha256":
            self._h.update(data)
        else:
            self._crc = zlib.crc32(data, self._crc)

    def result(self) -> str:
        if self.algorithm == "sha256":
            return f"sha256:{self._h.hexdigest()}"
        return f"crc32:{self._crc:08x}"


def checksum_of(data: bytes | memoryview, algorithm: str) -> str:
    h = Hasher(algorithm)
    h.update(data)
    return h.result()


def algorithm_of(checksum: str) -> str:
    algorithm, sep, digest = checksum.partition(":")
    if not sep or not digest:
        raise ValueError(f"malformed checksum {checksum!r}")
    return algorithm


# ---------------------------------------------------------------------------------------------
# backends


class _CountingHashWriter(io.RawIOBase):
    """File-like sink that hashes and counts what goes through it (so writes need no second pass)."""

    def __init__(self, f: BinaryIO, algorithm: str) -> None:
        super().__init__()
        self._f = f
        self.hasher = Hasher(algorithm)
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        self._f.write(view)
        self.hasher.update(view)
        self.size += len(view)
        return len(view)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self._f.flush()


@dataclass(frozen=True)
class StoredFile:
    """A file as listed: root-relative path, size and modification time (seconds since the epoch;
    None where the backend does not tell).  Size and time tell a file from another one written
    under the same name."""

    path: str
    size: int
    mtime: float | None


class Storage:
    """File operations on one storage root (root-relative '/'-separated paths), and reads that
    check a file against its :class:`FileInfo` before anything decodes it."""

    root: str

    def write_atomic(self, rel: str, produce: Callable[[BinaryIO], None], algorithm: str) -> FileInfo:
        raise NotImplementedError

    def read_all(self, rel: str, expected_size: int) -> bytes | pa.Buffer:
        raise NotImplementedError

    def size(self, rel: str) -> int | None:
        raise NotImplementedError

    def open_read(self, rel: str) -> BinaryIO:
        raise NotImplementedError

    def local_path(self, rel: str) -> str | None:
        return None

    def remove_tree(self, rel: str) -> None:
        raise NotImplementedError

    def sweep_temp(self, rel: str, older_than_s: float) -> list[str]:
        raise NotImplementedError

    def list_files(self, rel: str) -> list[StoredFile]:
        """Every file under ``rel`` (temporary ones of writes in flight included), by path;
        ``[]`` when ``rel`` does not exist."""
        raise NotImplementedError

    def remove_file(self, rel: str) -> bool:
        """Remove one file; ``False`` when it was already gone."""
        raise NotImplementedError

    def remove_empty_dir(self, rel: str) -> None:
        """Remove directory ``rel`` if it is empty (a writer that just created a file in it keeps it)."""

    # -- verified reads ----------------------------------------------------------------------
    def check_size(self, info: FileInfo) -> None:
        actual = self.size(info.path)
        if actual is None:
            raise CorruptSegmentError(f"{info.path}: file is missing")
        if actual != info.size:
            kind = "truncated" if actual < info.size else "longer than recorded"
            raise CorruptSegmentError(f"{info.path}: {kind} ({actual} bytes, expected {info.size})")

    def read_verified(self, info: FileInfo) -> bytes | pa.Buffer:
        """The whole file, its size and checksum checked first (:class:`CorruptSegmentError`)."""
        self.check_size(info)
        try:
            data = self.read_all(info.path, info.size)
        except FileNotFoundError:
            raise CorruptSegmentError(f"{info.path}: file is missing") from None
        actual = checksum_of(memoryview(data), algorithm_of(info.checksum))
        if actual != info.checksum:
            raise CorruptSegmentError(f"{info.path}: checksum mismatch (expected {info.checksum}, got {actual})")
        return data

    def verify(self, info: FileInfo) -> None:
        """Check size and checksum without keeping the content in memory (a streaming pass)."""
        self.check_size(info)
        h = Hasher(algorithm_of(info.checksum))
        try:
            with self.open_read(info.path) as f:
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
        except FileNotFoundError:
            raise CorruptSegmentError(f"{info.path}: file is missing") from None
        if h.result() != info.checksum:
            raise CorruptSegmentError(f"{info.path}: checksum mismatch (expected {info.checksum}, got {h.result()})")


def _temp_name(rel: str) -> str:
    head, name = posixpath.split(rel)
    return posixpath.join(head, f".{name}.{uuid.uuid4().hex}.tmp")


class LocalStorage(Storage):
    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def _abs(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/"))

    def local_path(self, rel: str) -> str:
        return self._abs(rel)

    def _makedirs_durable(self, path: str) -> None:
        missing = []
        p = path
        while not os.path.isdir(p):
            missing.append(p)
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
        if not missing:
            return
        os.makedirs(path, exist_ok=True)
        for d in reversed(missing):  # make each new directory entry durable
            fsync_dir(os.path.dirname(d))

    def write_atomic(self, rel: str, produce: Callable[[BinaryIO], None], algorithm: str) -> FileInfo:
        final = self._abs(rel)
        directory = os.path.dirname(final)
        self._makedirs_durable(directory)
        tmp = self._abs(_temp_name(rel))
        try:
            # A large buffer: Parquet issues many tiny writes (page headers) between the big ones.
            with open(tmp, "xb", buffering=1 << 20) as raw:
                sink = _CountingHashWriter(raw, algorithm)  # type: ignore[arg-type]
                produce(sink)  # type: ignore[arg-type]
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        fsync_dir(directory)
        return FileInfo(rel, sink.size, sink.hasher.result())

    def size(self, rel: str) -> int | None:
        try:
            return os.stat(self._abs(rel)).st_size
        except FileNotFoundError:
            return None

    def read_all(self, rel: str, expected_size: int) -> pa.Buffer:
        # Arrow's reader: one C++ read into a pooled buffer, GIL released, no zero-fill.
        with pa.OSFile(self._abs(rel), "rb") as f:
            data = f.read_buffer()
        if data.size != expected_size:
            raise CorruptSegmentError(f"{rel}: file changed size while being read ({data.size} != {expected_size})")
        return data

    def open_read(self, rel: str) -> BinaryIO:
        return open(self._abs(rel), "rb")

    def remove_tree(self, rel: str) -> None:
        import shutil

        path = self._abs(rel)
        shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            fsync_dir(os.path.dirname(path))

    def list_files(self, rel: str) -> list[StoredFile]:
        out = []
        for dirpath, _dirs, names in os.walk(self._abs(rel)):
            for name in names:
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                except FileNotFoundError:  # removed (or renamed into place) while listed
                    continue
                out.append(StoredFile(os.path.relpath(path, self.root).replace(os.sep, "/"), st.st_size,
                                      st.st_mtime))
        return sorted(out, key=lambda f: f.path)

    def remove_file(self, rel: str) -> bool:
        path = self._abs(rel)
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        try:
            fsync_dir(os.path.dirname(path))
        except FileNotFoundError:   # another remover took the emptied directory: nothing left to make durable
            pass
        return True

    def remove_empty_dir(self, rel: str) -> None:
        path = self._abs(rel)
        with contextlib.suppress(FileNotFoundError, OSError):  # not empty (ENOTEMPTY) or gone: keep it
            os.rmdir(path)
            fsync_dir(os.path.dirname(path))

    def sweep_temp(self, rel: str, older_than_s: float) -> list[str]:
        removed = []
        cutoff = time.time() - older_than_s
        for dirpath, _dirs, names in os.walk(self._abs(rel)):
            for name in names:
                if name.startswith(".") and name.endswith(".tmp"):
                    path = os.path.join(dirpath, name)
                    with contextlib.suppress(FileNotFoundError):
                        if os.stat(path).st_mtime < cutoff:
                            os.unlink(path)
                            removed.append(os.path.relpath(path, self.root).replace(os.sep, "/"))
        return removed


# Keyword arguments of each URL scheme's fsspec filesystem (the S3 endpoint and credentials): one set per
# process, given once at start-up from the settings (vecgrid.storage.layout.DataDir.of) and read by every
# open.  Owned by _options_lock; kept out of the roots so no credential is ever recorded in the catalog.
_options_lock = threading.Lock()
_filesystem_options: dict[str, dict[str, Any]] = {}


def set_filesystem_options(scheme: str, options: Mapping[str, Any]) -> None:
    """What every later :class:`FsspecStorage` of ``scheme`` URLs passes to its filesystem."""
    with _options_lock:
        _filesystem_options[scheme] = dict(options)


def filesystem_options(scheme: str) -> dict[str, Any]:
    with _options_lock:
        return dict(_filesystem_options.get(scheme, {}))


class FsspecStorage(Storage):
    def __init__(self, root: str) -> None:
        try:
            import fsspec.core
        except ImportError as exc:  # pragma: no cover - fsspec ships with dask
            raise StorageBackendUnavailableError(f"storage root {root!r} needs fsspec (pip install fsspec)") from exc
        scheme = root.split("://", 1)[0]
        try:
            self.fs, self.base = fsspec.core.url_to_fs(root, **filesystem_options(scheme))
        except ImportError as exc:
            hint = " (pip install 'vecgrid[s3]', i.e. s3fs)" if scheme in ("s3", "s3a") else ""
            raise StorageBackendUnavailableError(
                f"storage root {root!r} needs an optional package for {scheme}://{hint}: {exc}"
            ) from exc
        self.root = root
        self.base = self.base.rstrip("/")

    def _abs(self, rel: str) -> str:
        return f"{self.base}/{rel}"

    def write_atomic(self, rel: str, produce: Callable[[BinaryIO], None], algorithm: str) -> FileInfo:
        # Object stores make a PUT visible only once complete, so writing the final key is atomic.
        # On a non-atomic filesystem a crash can leave a partial file, which the checksum rejects.
        path = self._abs(rel)
        with contextlib.suppress(Exception):
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        try:
            with self.fs.open(path, "wb") as f:
                sink = _CountingHashWriter(f, algorithm)
                produce(sink)  # type: ignore[arg-type]
        except BaseException:
            with contextlib.suppress(Exception):
                self.fs.rm(path)
            raise
        return FileInfo(rel, sink.size, sink.hasher.result())

    def size(self, rel: str) -> int | None:
        try:
            return int(self.fs.size(self._abs(rel)))
        except FileNotFoundError:
            return None

    def read_all(self, rel: str, expected_size: int) -> bytes:
        with self.fs.open(self._abs(rel), "rb") as f:
            data = f.read()
        if len(data) != expected_size:
            raise CorruptSegmentError(f"{rel}: read {len(data)} bytes, expected {expected_size}")
        return data

    def open_read(self, rel: str) -> BinaryIO:
        return self.fs.open(self._abs(rel), "rb")

    def remove_tree(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(self._abs(rel), recursive=True)

    def sweep_temp(self, rel: str, older_than_s: float) -> list[str]:
        return []  # object-store writes leave no temporary names

    def list_files(self, rel: str) -> list[StoredFile]:
        try:
            found = self.fs.find(self._abs(rel), detail=True)
        except FileNotFoundError:
            return []
        prefix = self.base.strip("/") + "/"  # fsspec gives paths with or without a leading "/"
        out = []
        for path, info in found.items():
            path = path.lstrip("/")
            if path.startswith(prefix):
                out.append(StoredFile(path[len(prefix):], int(info.get("size") or 0), _mtime(info)))
        return sorted(out, key=lambda f: f.path)

    def remove_file(self, rel: str) -> bool:
        try:
            self.fs.rm_file(self._abs(rel))
        except FileNotFoundError:
            return False
        return True


def _mtime(info: Mapping[str, Any]) -> float | None:
    """A file's modification time from an fsspec info dict (each filesystem names it its own way)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        try:
            return float(value)
        except (TypeError, ValueError):
            continue
    return None


def canonical_root(root: str | os.PathLike[str]) -> str:
    """Root as recorded in :class:`SegmentFiles`: URLs unchanged, local paths made absolute."""
    root = os.fspath(root)
    return root if "://" in root else os.path.abspath(root)


def open_storage(root: str | os.PathLike[str]) -> Storage:
    """The backend of ``root``: a local directory (a path or ``file://``), else fsspec's for the URL."""
    root = os.fspath(root)
    if root.startswith("file://"):
        return LocalStorage(root[len("file://") :])
    if "://" in root:
        return FsspecStorage(root)
    return LocalStorage(root)
