"""Delegated authentication and authorization, as kube-scheduler's secure port does them
(k8s.io/apiserver ``DelegatingAuthenticationOptions`` and ``DelegatingAuthorizationOptions``).

Authentication, in upstream's order: a client certificate signed by the client CA (the TLS
layer has verified it; CN is the user, O the groups), then a bearer token reviewed by the API
server (TokenReview), answers cached 10 s whether they allowed or not (``CacheTTL``). A
request with neither is ``system:anonymous`` (anonymous authentication is on upstream); a
token the API server does not accept is a 401, never anonymous.

Authorization: ``system:masters`` always (``AlwaysAllowGroups``), the always-allowed paths
for anyone (``--authorization-always-allow-paths``: exact, or a prefix with a trailing ``*``),
else a SubjectAccessReview, its answer cached 10 s when allowed and 10 s when denied
(``AllowCacheTTL``, ``DenyCacheTTL``). Without a client for the reviews nothing else is
allowed (upstream's "no authorization-kubeconfig" case).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from cachetools import TTLCache

log = structlog.get_logger("scheduler.serving")

TOKEN_CACHE_TTL = 10.0
ALLOW_CACHE_TTL = 10.0
DENY_CACHE_TTL = 10.0
DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = frozenset({"system:masters"})
CACHE_SIZE = 4096
REVIEW_TIMEOUT = 10.0
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


class ReviewClient(Protocol):
    """What posting a review needs of :class:`~scheduler.operator.kubeapi.KubeApi`."""

    def review(self, path: str, body: dict[str, Any]) -> tuple[int, Any]: ...


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do: a non-resource ``path``, or ``resource`` in ``namespace``."""

    verb: str
    path: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""

    def forbidden_message(self, user: User) -> str:
        """apiserver's responsewriters.forbiddenMessage (core group resources only)."""
        if not self.resource:
            return f'User "{user.name}" cannot {self.verb} path "{self.path}"'
        return (f'User "{user.name}" cannot {self.verb} resource "{self.resource}" in API '
                f'group "" in the namespace "{self.namespace}"')


class UnauthenticatedError(Exception):
    """The request carried credentials that are not valid: 401."""


class _Cache:
    """A TTL cache safe to share between the server's workers."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self._entries: TTLCache[Hashable, Any] = TTLCache(CACHE_SIZE, ttl, timer=clock)
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._entries[key] = value


class Authenticator:
    def __init__(self, client: ReviewClient | None, *, ttl: float = TOKEN_CACHE_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self._tokens = _Cache(ttl, clock)

    def authenticate(self, authorization: str, peer_cert: Mapping[str, Any] | None) -> User:
        """The user of a verified client certificate, else of the ``Authorization`` header's
        bearer token, else anonymous."""
        user = certificate_user(peer_cert)
        if user is not None:
            return user
        token = bearer_token(authorization)
        if token is None or self.client is None:
            return ANONYMOUS
        key = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(key)
        if cached is None:
            cached = self._review(token)
            if cached is not None:
                self._tokens.put(key, cached)
        if isinstance(cached, User):
            return cached
        raise UnauthenticatedError("invalid bearer token")

    def _review(self, token: str) -> User | bool | None:
        """The user, False when the API server says the token is not valid (both kept for
        the TTL), None when it could not say (not kept)."""
        assert self.client is not None
        status, body = self.client.review(TOKEN_REVIEWS, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})
        if status // 100 != 2 or not isinstance(body, dict):
            log.warning("TokenReview failed", status=status, reason=str(body)[:200])
            return None
        result = body.get("status") or {}
        if not result.get("authenticated"):
            return False
        info = result.get("user") or {}
        extra = tuple(sorted((k, tuple(v)) for k, v in (info.get("extra") or {}).items()))
        return User(str(info.get("username", "")), tuple(info.get("groups") or ()),
                    str(info.get("uid", "")), extra)


def bearer_token(header: str) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (upstream's bearertoken: the scheme is
    case-insensitive; anything else is no token at all)."""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def certificate_user(peer_cert: Mapping[str, Any] | None) -> User | None:
    """The user of a verified client certificate: CN the name, O the groups (upstream's
    x509 CommonNameUserConversion); ``ssl`` hands over only certificates it verified."""
    if not peer_cert:
        return None
    names: list[str] = []
    groups: list[str] = []
    for rdn in peer_cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                names.append(value)
            elif key == "organizationName":
                groups.append(value)
    if not names:
        return None
    return User(names[0], (*groups, "system:authenticated"))


@dataclass
class Authorizer:
    client: ReviewClient | None
    always_allow_paths: Sequence[str] = DEFAULT_ALWAYS_ALLOW_PATHS
    allow_ttl: float = ALLOW_CACHE_TTL
    deny_ttl: float = DENY_CACHE_TTL
    clock: Callable[[], float] = time.monotonic
    # --insecure-serving: everything allowed to everyone (local development only).
    allow_all: bool = False
    _paths: frozenset[str] = field(init=False)
    _prefixes: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        exact, prefixes = always_allowed(self.always_allow_paths)
        self._paths, self._prefixes = exact, prefixes
        self._allowed = _Cache(self.allow_ttl, self.clock)
        self._denied = _Cache(self.deny_ttl, self.clock)

    def path_always_allowed(self, path: str) -> bool:
        bare = path.removeprefix("/")
        return bare in self._paths or any(bare.startswith(p) for p in self._prefixes)

    def authorize(self, user: User, attributes: Attributes) -> tuple[bool, str]:
        """(allowed, the reviewer's reason)."""
        if self.allow_all or ALWAYS_ALLOW_GROUPS.intersection(user.groups):
            return True, ""
        if not attributes.resource and self.path_always_allowed(attributes.path):
            return True, ""
        if self.client is None:
            return False, ""
        key = (user, attributes)
        if self._allowed.get(key) is not None:
            return True, ""
        denied = self._denied.get(key)
        if denied is not None:
            return False, str(denied)
        allowed, reason, definite = self._review(user, attributes)
        if definite:
            (self._allowed if allowed else self._denied).put(key, reason)
        return allowed, reason

    def _review(self, user: User, attributes: Attributes) -> tuple[bool, str, bool]:
        assert self.client is not None
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        if attributes.resource:
            spec["resourceAttributes"] = {
                "namespace": attributes.namespace, "verb": attributes.verb, "group": "",
                "version": "v1", "resource": attributes.resource, "name": attributes.name}
        else:
            spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
        status, body = self.client.review(ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": spec})
        if status // 100 != 2 or not isinstance(body, dict):
            log.warning("SubjectAccessReview failed", status=status, reason=str(body)[:200])
            return False, "", False
        result = body.get("status") or {}
        return bool(result.get("allowed")), str(result.get("reason") or ""), True


def always_allowed(paths: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Exact paths and prefixes (a trailing ``*``), as apiserver's path.NewAuthorizer; a
    ``*`` anywhere else is refused as there."""
    exact: set[str] = set()
    prefixes: list[str] = []
    for raw in paths:
        p = raw.removeprefix("/")
        if "*" in p[:-1]:
            raise ValueError(f"only trailing * allowed in {p!r}")
        if p.endswith("*"):
            prefixes.append(p[:-1])
        else:
            exact.add(p)
    return frozenset(exact), tuple(prefixes)


@dataclass(frozen=True)
class Caller:
    """Who is asking, and the authorizer that says what they may do."""

    user: User
    authorizer: Authorizer

    def may(self, verb: str, resource: str, namespace: str, name: str = "") -> bool:
        attributes = Attributes(verb, resource=resource, namespace=namespace, name=name)
        return self.authorizer.authorize(self.user, attributes)[0]

    def forbidden(self, verb: str, resource: str, namespace: str, name: str = "") -> str:
        """apiserver's Forbidden message for this request (``pods "x" is forbidden: ...``)."""
        attributes = Attributes(verb, resource=resource, namespace=namespace, name=name)
        subject = f'{resource} "{name}"' if name else resource
        return f"{subject} is forbidden: {attributes.forbidden_message(self.user)}"
