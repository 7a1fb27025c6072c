"""The QueryCoord role, laid out as Milvus's ``internal/querycoordv2``.

* ``meta/``: collections, replicas, targets, resource groups (what should be served);
* ``dist/``: the distribution the nodes report (what is served);
* ``checkers/``: compare the two and propose tasks; ``balance/``: where things go;
* ``task/``: the scheduler that runs tasks as Dask work pinned to a worker;
* ``job/``: load and release requests; ``observers/``: targets, load progress, health;
* ``session/``: membership of Dask workers and gRPC clients to the nodes;
* :mod:`.coordinator`: the wiring (Milvus's ``server.go``); :mod:`.context`, :mod:`.reports`,
  :mod:`.manual_balance`, :mod:`.timetick`, :mod:`.wal_retention`, :mod:`.load_info`.
"""
