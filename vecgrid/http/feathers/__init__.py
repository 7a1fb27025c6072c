"""A Feathers v5 style service framework on Tornado, all of it in this package: the application
object and its hooks (``application``), authentication (``authentication``), the REST transport
(``rest``, on :class:`vecgrid.http.base.BaseHandler`), query strings and the common query syntax
(``query``), the database adapters (``adapters``), the OpenAPI document (``openapi``) and the
conformance app that proves it against the official Feathers client (``conformance``).
Feathers errors are in :mod:`vecgrid.common.feathers_errors` (the Python client uses them too)."""
