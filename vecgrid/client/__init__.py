"""vecgrid's Python client: a Feathers REST client and a MilvusClient-shaped layer over it.

``rest(url).urllib()`` / ``.requests(session)`` / ``.httpx(client)`` give a Feathers client app
(:mod:`vecgrid.client.feathers`) that talks to any Feathers server; :class:`VecgridClient` (and
:class:`AsyncVecgridClient`) wrap vecgrid's own services in the calls a pymilvus user knows
(:mod:`vecgrid.client.milvus_client`). Errors are the Feathers classes of
:mod:`vecgrid.common.feathers_errors`, re-exported here.
"""

from vecgrid.client.feathers import (App, AsyncApp, AsyncService, AuthenticationOptions, EventContext,
                                     MemoryStorage, RestClient, Service, rest)
from vecgrid.client.milvus_client import AsyncVecgridClient, VecgridClient
from vecgrid.common.feathers_errors import (BadGateway, BadRequest, Conflict, FeathersError, Forbidden,
                                            GeneralError, Gone, LengthRequired, MethodNotAllowed,
                                            NotAcceptable, NotAuthenticated, NotFound, NotImplemented,
                                            PayloadTooLarge, PaymentError, Timeout, TooManyRequests,
                                            Unavailable, Unprocessable)

__all__ = [
    "App", "AsyncApp", "AsyncService", "AsyncVecgridClient", "AuthenticationOptions", "EventContext",
    "MemoryStorage", "RestClient", "Service", "VecgridClient", "rest",
    "BadGateway", "BadRequest", "Conflict", "FeathersError", "Forbidden", "GeneralError", "Gone",
    "LengthRequired", "MethodNotAllowed", "NotAcceptable", "NotAuthenticated", "NotFound",
    "NotImplemented", "PayloadTooLarge", "PaymentError", "Timeout", "TooManyRequests", "Unavailable",
    "Unprocessable",
]
