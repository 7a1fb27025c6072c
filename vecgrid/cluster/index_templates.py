"""Trained IVF indexes shared by the segments of one index: train once, add per segment.

An IVF index is trained (k-means: its nlist centroids) before rows are added.  faiss over a whole
collection trains once; an index per segment trains per segment, so ten 1M-row segments of nlist
4096 train ten times what faiss trains once — most of a load's time.  So a build of an index
(collection, vector field, index id) that trains writes its trained, empty index — the
**template** — to the storage root (``segments/<collection>/templates/index_<field>_<index>.bin``),
and later builds of that index start from it and only add their rows.  A build whose segment can
train on more rows than the template was trained on (up to faiss's own sample, 256 × nlist) trains
its own and replaces it, so the template ends up trained on a full sample; a segment with fewer
than 39 × nlist rows (faiss's minimum for k-means) never writes one.

Segments built from one template share its coarse quantizer, and a search assigns its queries to
lists once for all of them (:func:`vecgrid.gpu.loaded_segment.search_segments`).

A template is a cache.  Missing, unreadable, corrupt (its header carries its checksum) or replaced
by a concurrent build on another node, it costs a training, never a wrong result: every segment's
index file holds its own quantizer.  The garbage collector removes the templates of dropped indexes
and collections.  Rows whose distribution drifts far from the template's sample
get less even lists (slower searches, as with any IVF index trained on a sample); dropping and
creating the index again trains afresh (a new index id).

Owner: the storage root holds the files (a build reads its template afresh: a few MB, and another
node may have replaced it).  A build that has to train holds a lock of the host for its template
(``flock`` on a file in the temp dir), so the other builds of that template on the host — the
threads of one node, the nodes of ``vecgrid serve --workers N`` — wait for its training and start
from it instead of training too; builds with a usable template take no lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from vecgrid import errors
from vecgrid.gpu import build
from vecgrid.storage import segment_files
from vecgrid.storage.backend import open_storage

try:
    import fcntl
except ImportError:  # not POSIX: the builds of one process wait for each other only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

MIN_ROWS_PER_LIST = 39     # faiss warns below it: k-means needs that many points per centroid
SAMPLE_ROWS_PER_LIST = 256  # faiss trains on at most this many per centroid (its own sample)


@dataclass(frozen=True)
class TemplateKey:
    root: str              # the storage root of the collection's segments
    collection_id: int
    field_id: int
    index_id: int

    @property
    def path(self) -> str:
        return segment_files.template_path(self.collection_id, self.field_id, self.index_id)


@dataclass
class _Template:
    index: Any
    trained_rows: int


class Templates:
    """The builds of this process that may share templates; see the module doc."""

    def __init__(self, lock_dir: str | None = None) -> None:
        self.lock_dir = lock_dir or os.path.join(
            tempfile.gettempdir(), f"vecgrid-templates-{os.getuid() if hasattr(os, 'getuid') else 0}")
        self._lock = threading.Lock()   # where fcntl is missing: the builds of this process only

    def build(self, key: TemplateKey | None, vectors: np.ndarray, index_type: str, metric: str,
              params: Mapping[str, Any], build_fn: Callable[..., build.BuiltIndex]) -> build.BuiltIndex:
        """``build_fn(vectors, index_type, metric, params, trained=...)``, from the key's template when
        it serves (see the module doc); writes the template when this build trained a better one."""
        nlist = _nlist(index_type, params, vectors.shape[1])
        if key is None or nlist is None:
            return build_fn(vectors, index_type, metric, params)
        sample = min(len(vectors), SAMPLE_ROWS_PER_LIST * nlist)

        def usable(template: _Template | None) -> bool:
            # within 2x of the sample this segment offers: segments of one import differ by a few rows
            return template is not None and 2 * template.trained_rows >= sample

        template = self._read(key)
        if not usable(template):
            # a training: the builds of this template on this host wait for it rather than train too
            with self._host_lock(key):
                template = self._read(key)
                if not usable(template):
                    built = build_fn(vectors, index_type, metric, params)
                    if built.trained is not None and sample >= MIN_ROWS_PER_LIST * nlist and \
                            (template is None or sample > template.trained_rows):
                        self._write(key, _Template(built.trained, sample), built.header)
                    built.trained = None   # the caller keeps the built index only
                    return built
        built = build_fn(vectors, index_type, metric, params, trained=template.index)
        built.trained = None
        return built

    @contextlib.contextmanager
    def _host_lock(self, key: TemplateKey) -> Iterator[None]:
        """Exclusive among the threads and processes of this host (``flock`` on a file of its own
        descriptor, so two threads of one process exclude each other too)."""
        if fcntl is None:
            with self._lock:
                yield
            return
        os.makedirs(self.lock_dir, mode=0o700, exist_ok=True)
        name = hashlib.blake2b(f"{key.root}\0{key.path}".encode(), digest_size=12).hexdigest()
        fd = os.open(os.path.join(self.lock_dir, f"{name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)   # drops the lock

    def _read(self, key: TemplateKey) -> _Template | None:
        storage = open_storage(key.root)
        try:
            size = storage.size(key.path)
            if size is None:
                return None
            index, header = build.read_index_file(memoryview(storage.read_all(key.path, size)))
        except (OSError, segment_files.SegmentStorageError, errors.MilvusError, RuntimeError, ValueError) as e:
            log.warning("index template %s is unreadable (%s): this build trains its own", key.path, e)
            return None
        if not header.get("template") or index.ntotal:
            log.warning("%s is not an index template: this build trains its own", key.path)
            return None
        return _Template(index, int(header.get("trained_rows", 0)))

    @staticmethod
    def _write(key: TemplateKey, template: _Template, header: Mapping[str, Any]) -> None:
        head = {k: header[k] for k in ("index_type", "built_type", "metric", "params", "dim", "factory")
                if k in header}
        head.update(template=True, trained_rows=template.trained_rows, num_rows=0)
        data = build.serialize_index(template.index, head, checksum=True)
        try:
            segment_files.put_file(key.root, key.path, data)
        except (OSError, segment_files.SegmentStorageError) as e:
            # the build itself succeeded; the next build of this index trains and tries again
            log.warning("could not write index template %s (the next build trains again): %s", key.path, e)


def _nlist(index_type: str, params: Mapping[str, Any], dim: int) -> int | None:
    """The nlist of a shareable IVF type, else None."""
    t = build.CPU_FALLBACK.get(index_type, index_type)
    if t not in build.TRAINED_SHAREABLE:
        return None
    return int(build.normalize_build_params(index_type, params, dim)["nlist"])


#: the process's templates (loads on a query node, index build tasks on a Dask worker)
TEMPLATES = Templates()
