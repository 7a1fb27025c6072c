"""Checks of Prometheus exposition text shared by the metrics tests (tests/test_metrics_names.py without a
cluster, tests/test_monitoring.py against a live one)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def conventions_broken(text: str) -> list[str]:
    """Every line or name of ``text`` that breaks the naming rules: no ``_created`` series at all, and for
    vecgrid's own families no ``_count_total``, counters ending in ``_total``, gauges not ending in ``_num``,
    ``_count`` or ``_total``.  (Dask's own names, e.g. ``dask_scheduler_tick_count_total``, are Dask's.)"""
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    wrong = [line for line in samples if "_created" in line.split("{")[0].split(" ")[0]]
    wrong += [line for line in samples if line.startswith("vecgrid_") and "_count_total" in line]
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("vecgrid_"):
            continue
        if family.type == "counter":
            wrong += [s.name for s in family.samples if not s.name.endswith("_total")]
        if family.type == "gauge" and family.name.endswith(("_num", "_count", "_total")):
            wrong.append(family.name)
    return wrong
