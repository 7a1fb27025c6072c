""":class:`Catalog`: databases, collections, partitions, indexes, segments and channel checkpoints.

What Milvus splits between RootCoord (databases, collections, partitions, DML channels) and DataCoord
(index definitions, segments, their binlogs and index files, channel checkpoints), kept in one
:class:`~vecgrid.storage.kv.MetaStore` under Milvus-like keys (see :mod:`.keys`) as protobuf messages.

``Catalog`` is the one public class. It is composed of one part per concern, each in its own module
over :class:`~.base.CatalogBase` (the store, ids, timestamps, the writer lock and the key caches):

* :mod:`.collections`: databases, collections, partitions (RootCoord);
* :mod:`.aliases`: collection aliases, resolved wherever a collection is read by name;
* :mod:`.indexes`: index definitions and segment index builds;
* :mod:`.segments`: segment records and their file checksums;
* :mod:`.publish`: sealed segments becoming visible, planned as a :class:`~.publish.TxnPlan`;
* :mod:`.checkpoints`: channel checkpoints, changed by compare-and-swap;
* :mod:`.import_leases`: the segments a bulk import reserved (Importing) and the lease keeping them.

Rules every method keeps:

* **Validate, then write.** All checks (names, schema, index params, references, file checksums) run
  before any id or timestamp is allocated and before anything is written; a refused call leaves the
  store byte-for-byte unchanged. Errors are :mod:`vecgrid.errors` classes carrying Milvus codes.
* **One transaction per change.** A change touching several keys (a collection and its ``_default``
  partition, a published segment with its file checksums, index records and channel checkpoint)
  goes through a single ``store.txn()``, so a crash leaves all of it or none of it.
* **Single writer.** Read-modify-write sequences are serialised by a lock inside the object, so one
  ``Catalog`` is safe across threads. Like Milvus's RootCoord/DataCoord leader, exactly one process
  should write a given store through a Catalog; other processes may read it. The exceptions are
  channel checkpoints, which an import or flush beside a live server also moves: they change only
  by compare-and-swap (a guarded transaction when published with a segment), so no process can
  move one backwards; and import leases with their Importing segments, which an import and the
  coordinator's garbage collector both change, each change guarded by what it was decided from.
* **Nothing cached but keys.** Reads go to the store each time, so a reader in another process sees
  what was committed. The only caches map a segment or collection id to its key; a hit is confirmed
  by reading that key, a miss scans again, so they never make a read stale.

Idempotency follows Milvus 2.4: creating a collection that exists with an identical definition,
creating a partition that exists, or creating the same index again returns the existing object;
dropping something absent returns ``False``. Creating a collection whose name exists with a
different definition is refused (``ParameterInvalid``: "create duplicate collection with different
parameters").
"""

from __future__ import annotations

from .aliases import AliasMeta
from .base import ALL_PARTITIONS_ID, DEFAULT_DML_CHANNEL_NUM
from .checkpoints import CheckpointMeta
from .import_leases import ImportLeaseMeta
from .collections import CollectionMeta
from .indexes import IndexMeta
from .publish import PublishMeta, TxnPlan
from .segments import SegmentMeta

__all__ = ["ALL_PARTITIONS_ID", "DEFAULT_DML_CHANNEL_NUM", "Catalog", "TxnPlan"]


class Catalog(PublishMeta, ImportLeaseMeta, CheckpointMeta, SegmentMeta, IndexMeta, AliasMeta, CollectionMeta):
    """The cluster's catalog on a :class:`~vecgrid.storage.kv.MetaStore`; see
    :class:`~.base.CatalogBase` for its arguments and who owns what.

    Opening one makes sure the ``default`` database exists; every other record is read from the
    store when asked for.
    """
