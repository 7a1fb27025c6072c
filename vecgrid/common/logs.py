"""One log format for every logger of a vecgrid process and of the worker processes it starts.

``vecgrid serve``, ``coord`` and ``worker`` call :func:`configure_logging` (``common.log_level``,
``common.log_format``): text (:data:`TEXT_LOG_FORMAT`) or one JSON object a line
(:class:`JsonLogFormatter`), on vecgrid's loggers and on the stream handlers Dask's logging config gave
``distributed``, ``bokeh`` and ``tornado``; :func:`worker_logging` hands the same to the Dask worker
processes through their environment.

State: the process's logging configuration (the standard library's, guarded by its lock); the
environment variable :func:`worker_logging` sets belongs to the process that starts the workers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any, Iterator

LOG_FORMATS = ("text", "json")
TEXT_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: loggers at WARNING unless --log-level debug: Dask's and Tornado's INFO lines (an access line per
#: request), bokeh's, and faiss's loader (which CPU build it picked, several lines per process)
QUIET_LOGGERS = ("distributed", "tornado.access", "bokeh", "faiss.loader")


class JsonLogFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, and ``exc`` /
    ``stack`` when the record carries a traceback (kept inside the one line)."""

    def format(self, record: logging.LogRecord) -> str:
        from datetime import datetime, timezone

        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str)


def log_formatter(log_format: str) -> logging.Formatter:
    return JsonLogFormatter() if log_format == "json" else logging.Formatter(TEXT_LOG_FORMAT)


def configure_logging(level: str, log_format: str = "text", *, dask: bool = True) -> None:
    """One format for every logger of this process: ours on the root, and the same formatter on the stream
    handlers that Dask's logging config gave ``distributed``, ``bokeh`` and ``tornado`` (they do not
    propagate, so without it their lines keep Dask's format).  ``dask=False``: a process that never
    imports Dask (a client command), which then does not pay its import (about a second of CPU) here."""
    if dask:
        import distributed  # noqa: F401 - importing it applies Dask's logging config, which we then override

    formatter = log_formatter(log_format)
    root = logging.getLogger()
    if not root.handlers:  # as basicConfig: a host that configured logging (pytest) keeps its handlers
        handler = logging.StreamHandler()
        handler.setFormatter(formatter)
        root.addHandler(handler)
        root.setLevel(getattr(logging, level.upper(), logging.INFO))
    for logger in list(logging.root.manager.loggerDict.values()):
        for handler in getattr(logger, "handlers", ()):
            if type(handler) is logging.StreamHandler:
                handler.setFormatter(formatter)
    for name, quiet in quiet_levels(level).items():
        logging.getLogger(name).setLevel(quiet)


@contextlib.contextmanager
def worker_logging(level: str, log_format: str) -> Iterator[None]:
    """Log settings for the worker processes that ``vecgrid serve`` / ``worker`` start, while they run.

    A worker process applies Dask's logging config when it imports ``distributed``, before any line of it
    is logged; its config comes from the environment it inherits.  ``DASK_DISTRIBUTED__LOGGING`` (a
    literal that Dask's config reads) hands it a ``logging.config.dictConfig`` with this process's
    level and format, so its lines, Dask's own included, look like the parent's."""
    key = "DASK_DISTRIBUTED__LOGGING"
    before = os.environ.get(key)
    os.environ[key] = repr(dict_config(level, log_format))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def quiet_levels(level: str) -> dict[str, str]:
    """The levels of the chatty libraries' loggers: WARNING, or with ``debug`` Dask's INFO and every
    request's access line (Tornado's own default would hide them: Dask sets ``tornado`` to CRITICAL)."""
    if level.lower() == "debug":
        return {"distributed": "INFO", "tornado.access": "DEBUG"}
    return {name: "WARNING" for name in QUIET_LOGGERS}


def dict_config(level: str, log_format: str) -> dict[str, Any]:
    """What :func:`configure_logging` sets up, as a ``logging.config.dictConfig`` for another process."""
    formatter = {"()": f"{__name__}.JsonLogFormatter"} if log_format == "json" else {"format": TEXT_LOG_FORMAT}
    quiet = {name: {"level": quiet} for name, quiet in quiet_levels(level).items()}
    return {"version": 1, "disable_existing_loggers": False, "formatters": {"vecgrid": formatter},
            "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "vecgrid",
                                    "stream": "ext://sys.stderr"}},
            "root": {"level": level.upper(), "handlers": ["stderr"]}, "loggers": quiet}
