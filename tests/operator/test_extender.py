"""The HTTP extender client against a loopback server: upstream's wire format (Go field
names, decoded case-insensitively), both node modes, and upstream's error wording."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from scheduler.config import ExtenderConfig
from scheduler.framework.extender import ExtenderError, Victims
from scheduler.operator.extender import HTTPExtender
from scheduler.testing import node, pod, pod_info, scheduler_of

Answer = Callable[[str, Any], tuple[int, Any]]


class Server:
    def __init__(self, answer: Answer) -> None:
        self.requests: list[tuple[str, Any]] = []
        # Reply without Content-Length, in one chunk (HTTP/1.1 chunked encoding).
        self.chunked = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body))
                code, reply = answer(self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(code)
                if server.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
                    return
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/scheduler"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], Server]]:
    servers: list[Server] = []

    def start(answer: Answer) -> Server:
        servers.append(Server(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.httpd.shutdown()


NODES = [node("a"), node("b")]


def extender(url: str, **kwargs: Any) -> HTTPExtender:
    return HTTPExtender(ExtenderConfig(url_prefix=url, **kwargs))


def test_filter_sends_node_names_to_a_node_cache_capable_extender(serve: Any) -> None:
    server = serve(lambda path, body: (200, {
        "nodenames": ["b"], "failedNodes": {"a": "no room"}, "FailedAndUnresolvableNodes": {},
        "Error": ""}))
    s, _ = scheduler_of(nodes=NODES)
    result = extender(server.url, filter_verb="filter", node_cache_capable=True).filter(
        pod_info("p"), ["a", "b"], s.snapshot)
    assert (list(result.nodes), dict(result.failed)) == (["b"], {"a": "no room"})
    path, body = server.requests[0]
    assert path == "/scheduler/filter"
    assert body["NodeNames"] == ["a", "b"] and body["Nodes"] is None
    assert body["Pod"]["metadata"]["name"] == "p"


def test_filter_sends_node_objects_otherwise_and_reads_the_returned_list(serve: Any) -> None:
    def answer(path: str, body: Any) -> tuple[int, Any]:
        kept = [n for n in body["Nodes"]["items"] if n["metadata"]["name"] == "a"]
        return 200, {"Nodes": {"items": kept}, "NodeNames": None}

    server = serve(answer)
    s, _ = scheduler_of(nodes=NODES)
    result = extender(server.url, filter_verb="filter").filter(pod_info("p"), ["a", "b"],
                                                                 s.snapshot)
    assert list(result.nodes) == ["a"]
    sent = server.requests[0][1]["Nodes"]["items"]
    assert [n["metadata"]["name"] for n in sent] == ["a", "b"]
    assert sent[0]["status"]["allocatable"]["cpu"] == "4"


def test_prioritize_reads_the_host_priority_list(serve: Any) -> None:
    server = serve(lambda path, body: (200, [{"Host": "a", "Score": 7}, {"host": "b",
                                                                        "score": 2}]))
    s, _ = scheduler_of(nodes=NODES)
    scores = extender(server.url, prioritize_verb="prioritize", weight=1,
                      node_cache_capable=True).prioritize(pod_info("p"), ["a", "b"], s.snapshot)
    assert scores == {"a": 7, "b": 2}


def test_bind_sends_upstreams_binding_args(serve: Any) -> None:
    server = serve(lambda path, body: (200, {"Error": ""}))
    extender(server.url, bind_verb="bind").bind(pod_info("p"), "a")
    assert server.requests == [("/scheduler/bind", {
        "PodName": "p", "PodNamespace": "default", "PodUID": "uid-default-p", "Node": "a"})]


def test_preemption_sends_meta_victims_and_maps_the_answer_back_to_pods(serve: Any) -> None:
    victim = pod("v", node_name="a", cpu="1")
    server = serve(lambda path, body: (200, {"NodeNameToMetaVictims": {
        "a": {"Pods": [{"UID": "uid-default-v"}], "NumPDBViolations": 1}}}))
    s, _ = scheduler_of(nodes=NODES, pods=[victim])
    v = pod_info("v", node_name="a", cpu="1")
    answer = extender(server.url, preempt_verb="preempt", node_cache_capable=True) \
        .process_preemption(pod_info("p"), {"a": Victims([v])}, s.snapshot)
    assert [p.name for p in answer["a"].pods] == ["v"] and answer["a"].num_pdb_violations == 1
    assert server.requests[0][1]["NodeNameToMetaVictims"] == {
        "a": {"Pods": [{"UID": "uid-default-v"}], "NumPDBViolations": 0}}


def test_a_victim_the_scheduler_does_not_know_is_an_error(serve: Any) -> None:
    server = serve(lambda path, body: (200, {"NodeNameToMetaVictims": {
        "a": {"Pods": [{"UID": "nope"}]}}}))
    s, _ = scheduler_of(nodes=NODES)
    with pytest.raises(ExtenderError, match="claims to preempt pod \\(UID: nope\\) on node: a"):
        extender(server.url, preempt_verb="preempt").process_preemption(
            pod_info("p"), {}, s.snapshot)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(lambda p, b: (500, {}),
                     "failed filter with extender at URL {url}/filter, code 500", id="status"),
        pytest.param(lambda p, b: (200, {"Error": "quota exceeded"}), "quota exceeded",
                     id="the extender's own error"),
        pytest.param(lambda p, b: (200, {"NodeNames": ["zzz"]}),
                     "extender '{url}' claims a filtered node 'zzz' which is not found",
                     id="a node that was not asked about"),
    ],
)
def test_errors_are_worded_as_upstreams(serve: Any, answer: Answer, message: str) -> None:
    server = serve(answer)
    s, _ = scheduler_of(nodes=NODES)
    with pytest.raises(ExtenderError) as excinfo:
        extender(server.url, filter_verb="filter", node_cache_capable=True).filter(
            pod_info("p"), ["a"], s.snapshot)
    assert str(excinfo.value).startswith(message.format(url=server.url))


def test_an_unreachable_extender_reads_as_go_reports_it() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    s, _ = scheduler_of(nodes=NODES)
    with pytest.raises(ExtenderError) as excinfo:
        extender(url, filter_verb="filter").filter(pod_info("p"), ["a"], s.snapshot)
    assert str(excinfo.value) == (
        f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused')


def test_verbs_not_configured_send_nothing() -> None:
    s, _ = scheduler_of(nodes=NODES)
    unused = extender("http://127.0.0.1:1")
    assert list(unused.filter(pod_info("p"), ["a"], s.snapshot).nodes) == ["a"]
    assert unused.prioritize(pod_info("p"), ["a"], s.snapshot) == {"a": 0}
    assert not (unused.is_filter or unused.is_prioritizer or unused.is_binder
                or unused.supports_preemption)


def self_signed(tmp_path: Any) -> tuple[Any, bytes]:
    """A certificate for 127.0.0.1 and its key, as files, and the certificate's PEM."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "extender")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                 x509.DNSName("extender.local")]), critical=False)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "cert.pem").write_bytes(pem)
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return tmp_path, pem


@pytest.fixture
def https_server(serve: Any, tmp_path: Any) -> tuple[Server, bytes]:
    import ssl

    folder, pem = self_signed(tmp_path)
    server = serve(lambda path, body: (200, {"NodeNames": ["a"]}))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    server.url = server.url.replace("http://", "https://")
    return server, pem


@pytest.mark.parametrize(
    ("case", "tls", "enable_https", "ok"),
    [
        ("enableHTTPS without a CA does not verify (upstream)", None, True, True),
        ("the CA given as data verifies", "ca", False, True),
        ("an https URL without a CA verifies against the system's, and fails", None, False,
         False),
        ("insecure skips verification", "insecure", False, True),
        ("serverName is the name verified", "server-name", False, True),
        ("a serverName the certificate does not have fails", "wrong-name", False, False),
    ],
)
def test_https_as_upstreams_transport(
    https_server: tuple[Server, bytes], case: str, tls: str | None, enable_https: bool,
    ok: bool,
) -> None:
    from scheduler.config import ExtenderTLS

    server, pem = https_server
    settings = {None: None, "ca": ExtenderTLS(ca_data=pem),
                "insecure": ExtenderTLS(insecure=True),
                "server-name": ExtenderTLS(ca_data=pem, server_name="extender.local"),
                "wrong-name": ExtenderTLS(ca_data=pem, server_name="other.local")}[tls]
    ext = extender(server.url, filter_verb="filter", node_cache_capable=True,
                   enable_https=enable_https, tls=settings)
    s, _ = scheduler_of(nodes=NODES)
    if ok:
        assert list(ext.filter(pod_info("p"), ["a"], s.snapshot).nodes) == ["a"], case
    else:
        with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
            ext.filter(pod_info("p"), ["a"], s.snapshot)


def test_a_slow_extender_times_out_with_gos_words(serve: Any) -> None:
    import time

    def slow(path: str, body: Any) -> tuple[int, Any]:
        time.sleep(0.5)
        return 200, {}

    server = serve(slow)
    s, _ = scheduler_of(nodes=NODES)
    with pytest.raises(ExtenderError) as excinfo:
        extender(server.url, filter_verb="filter", http_timeout=0.1).filter(
            pod_info("p"), ["a"], s.snapshot)
    assert str(excinfo.value) == (f'Post "{server.url}/filter": context deadline exceeded '
                                  "(Client.Timeout exceeded while awaiting headers)")


class DripServer:
    """Answers one request with a valid filter reply, a byte at a time with a pause between
    them: each socket read is quick, the whole reply is not."""

    def __init__(self, *, header_drip: bool, pause: float = 0.02) -> None:
        body = json.dumps({"NodeNames": ["a"]}).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Padding: %s\r\n\r\n" % (
            len(body), b"x" * 100)
        self.sent = 0
        # Byte by byte: the headers, or the body (padded with JSON whitespace).
        self.pieces = ([bytes([b]) for b in head] + [body] if header_drip
                       else [head] + [bytes([b]) for b in body + b" " * 200])
        self._pause = pause
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with self._listener:
            conn, _ = self._listener.accept()
            with conn:
                conn.recv(65536)
                for piece in self.pieces:
                    if self._stop.wait(self._pause):
                        return
                    try:
                        conn.sendall(piece)
                    except OSError:
                        return  # the client hung up
                    self.sent += 1

    def close(self) -> None:
        self._stop.set()


@pytest.mark.parametrize(
    ("header_drip", "reason"),
    [
        pytest.param(True, "context deadline exceeded (Client.Timeout exceeded while awaiting "
                           "headers)", id="headers a byte at a time"),
        pytest.param(False, "context deadline exceeded (Client.Timeout or context "
                            "cancellation while reading body)", id="body a byte at a time"),
    ],
)
def test_http_timeout_bounds_the_whole_call_not_each_read(header_drip: bool,
                                                          reason: str) -> None:
    """Go's http.Client.Timeout, which upstream's extender client sets to httpTimeout: a
    server that keeps each read quick but the reply slow fails at the deadline. Every read
    here takes 20 ms, under the 100 ms timeout; the whole reply would take seconds."""
    server = DripServer(header_drip=header_drip)
    s, _ = scheduler_of(nodes=NODES)
    try:
        with pytest.raises(ExtenderError) as excinfo:
            extender(server.url, filter_verb="filter", node_cache_capable=True,
                     http_timeout=0.1).filter(pod_info("p"), ["a"], s.snapshot)
    finally:
        server.close()
    assert str(excinfo.value) == f'Post "{server.url}/filter": {reason}'
    assert server.sent < len(server.pieces)


@pytest.mark.parametrize("declared", [True, False], ids=["Content-Length", "chunked"])
def test_a_reply_beyond_the_limit_is_refused(
    serve: Any, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    import scheduler.operator.extender as http_extender

    monkeypatch.setattr(http_extender, "REPLY_LIMIT_BYTES", 1000)
    server = serve(lambda path, body: (200, {"NodeNames": ["a"], "Error": "x" * 5000}))
    if not declared:
        server.chunked = True
    s, _ = scheduler_of(nodes=NODES)
    with pytest.raises(ExtenderError, match=r"reply larger than [0-9]+ bytes, refused"):
        extender(server.url, filter_verb="filter", node_cache_capable=True).filter(
            pod_info("p"), ["a"], s.snapshot)


WRONG_SHAPES = [
    pytest.param("filter", [], "json: cannot unmarshal array into Go value of type "
                 "v1.ExtenderFilterResult", id="filter: an array"),
    pytest.param("filter", {"NodeNames": "a"}, "json: cannot unmarshal string into Go value "
                 "of type ExtenderFilterResult.NodeNames", id="filter: NodeNames a string"),
    pytest.param("filter", {"FailedNodes": ["a"]}, "json: cannot unmarshal array into Go "
                 "value of type ExtenderFilterResult.FailedNodes", id="filter: FailedNodes"),
    pytest.param("filter", {"Nodes": {"Items": [5]}}, "json: cannot unmarshal number 5 into "
                 "Go value of type v1.Node", id="filter: a node a number"),
    pytest.param("prioritize", {"a": 1}, "json: cannot unmarshal object into Go value of "
                 "type v1.HostPriorityList", id="prioritize: an object"),
    pytest.param("prioritize", [{"Host": "a", "Score": "high"}], "json: cannot unmarshal "
                 "string into Go value of type HostPriority.Score", id="prioritize: Score"),
    pytest.param("prioritize", [{"Host": "a", "Score": 1.5}], "json: cannot unmarshal "
                 "number 1.5 into Go value of type HostPriority.Score",
                 id="prioritize: a fractional Score"),
    pytest.param("preempt", {"NodeNameToMetaVictims": ["a"]}, "json: cannot unmarshal array "
                 "into Go value of type ExtenderPreemptionResult.NodeNameToMetaVictims",
                 id="preempt: victims an array"),
    pytest.param("bind", "done", "json: cannot unmarshal string into Go value of type "
                 "v1.ExtenderBindingResult", id="bind: a string"),
]


@pytest.mark.parametrize(("verb", "reply", "message"), WRONG_SHAPES)
def test_valid_json_of_the_wrong_shape_is_an_extender_error(
    serve: Any, verb: str, reply: Any, message: str
) -> None:
    server = serve(lambda path, body: (200, reply))
    s, _ = scheduler_of(nodes=NODES)
    ext = extender(server.url, filter_verb="filter", prioritize_verb="prioritize", weight=1,
                   preempt_verb="preempt", bind_verb="bind")
    calls = {
        "filter": lambda: ext.filter(pod_info("p"), ["a"], s.snapshot),
        "prioritize": lambda: ext.prioritize(pod_info("p"), ["a"], s.snapshot),
        "preempt": lambda: ext.process_preemption(pod_info("p"), {}, s.snapshot),
        "bind": lambda: ext.bind(pod_info("p"), "a"),
    }
    with pytest.raises(ExtenderError) as excinfo:
        calls[verb]()
    assert str(excinfo.value) == message


def test_an_ignorable_extender_answering_the_wrong_shape_is_skipped(serve: Any) -> None:
    """Upstream's findNodesThatPassExtenders: an ignorable extender's error skips it."""
    from scheduler.testing import schedule

    server = serve(lambda path, body: (200, ["not", "a", "filter", "result"]))
    ignorable = extender(server.url, filter_verb="filter", ignorable=True)
    assert schedule(None, [node("a")], [pod("p", cpu="1")], extenders=[ignorable]) == {"p": "a"}


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://ext/scheduler", "ext:8888",
                                 "127.0.0.1:8888/scheduler"])
def test_only_http_and_https_urls_are_accepted_at_load(url: str) -> None:
    from scheduler.config import parse_config
    from scheduler.framework.registry import ConfigError
    from scheduler.plugins.registry import default_registry

    with pytest.raises(ConfigError) as excinfo:
        parse_config({"extenders": [{"urlPrefix": url, "filterVerb": "filter"}]},
                     default_registry())
    assert str(excinfo.value) == (f"extenders[0].urlPrefix: Invalid value: {url!r}: must be "
                                  "an http:// or https:// URL")
