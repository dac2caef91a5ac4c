"""Label Studio's REST API: a small client, the labeling config, and tasks as crowdqa uploads.

Only what crowdqa needs of a project: its labeling config, its tasks with their annotations (paged, and since a
time for an incremental pull), its members' e-mails, and predictions written back. The client speaks httpx
(crowdqa's one HTTP dependency). label-studio-sdk 2.1.2 was measured and not chosen: 18 MB itself, 293 MB with
the packages it requires (opencv-python-headless, pandas, nltk, lxml, datamodel-code-generator, ...), and
``from label_studio_sdk.client import LabelStudio`` took 6.0-10.1 s against httpx's 0.55 s (2 cores, load 11).

Authentication (Label Studio 1.23, ``jwt_auth``): a *personal access token* is a JWT refresh token; it is
exchanged at ``POST /api/token/refresh/`` for a short-lived access token sent as ``Authorization: Bearer``,
exchanged again when the server answers 401. A *legacy token* (40 hex digits) is sent as
``Authorization: Token``; 1.23 refuses it unless the organization enables legacy tokens.

Tasks become the bytes of an upload in the formats crowdqa already reads, so a pull stores what a file upload
of the same annotations stores: a span project becomes a Label Studio JSON export (format ``label-studio``)
whose annotators are the members' e-mails, a choice project a ``categorical`` CSV (``item,annotator,label``).
One upload per role: the experts' annotations (named by e-mail, or flagged ground truth in Label Studio) go
to an expert upload.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import math
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from crowdqa.ingest._deadline_transport import Deadline, DeadlineTransport, environment_proxy

__all__ = ["LabelStudioError", "LabelStudio", "ExchangeLimits", "LabelConfig", "read_label_config", "token_kind",
           "plain_task", "split_tasks",
           "upload_bytes", "prediction_result", "PAGE_SIZE", "ID_PAGE_SIZE"]

#: Tasks per page of ``GET /api/tasks``.
PAGE_SIZE = 100
#: Task ids per page of ``GET /api/tasks?include=id`` (an id is about 11 bytes of JSON).
ID_PAGE_SIZE = 1000
#: What a request meets when the server closes the kept-alive connection it was sent on (its idle timeout, e.g.
#: uvicorn's 5 s, ending just as the request goes out): no answer, a reset, or a failed write. httpx drops a
#: connection the server closed before the request (httpcore checks an idle one is not readable) and retries
#: only failed connects (``retries``), so these reach the caller; a GET or HEAD is then sent once more, on a new
#: connection, and anything else (a POST of predictions) fails as one line: it may have been done.
_LOST = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
#: Methods sent again after a lost connection.
_IDEMPOTENT = frozenset({"GET", "HEAD"})
#: The data manager query of the tasks with no annotation: Label Studio counts a task's annotations, the skipped
#: (cancelled) ones apart, in ``total_annotations``.
_UNANNOTATED = json.dumps({"filters": {"conjunction": "and", "items": [
    {"filter": "filter:tasks:total_annotations", "operator": "equal", "type": "Number", "value": 0}]}})
#: Control tags crowdqa reads, by the kind of project they make.
_KINDS = {"Labels": "spans", "Choices": "choices"}
#: Object tags holding the text those controls label.
_TEXT_TAGS = ("Text", "HyperText", "Paragraphs")


class LabelStudioError(ValueError):
    """Label Studio cannot be used as asked (unreachable, token refused, config unreadable): one line."""


@dataclass(frozen=True)
class ExchangeLimits:
    """What one client may spend on its server: the service's settings (``CROWDQA_LABEL_STUDIO_*``, named in the
    refusals), made from them by :func:`crowdqa.jobs.label_studio.connect`.

    Attributes
    ----------
    timeout : float
        Seconds one request may take, from connecting to the last byte of its answer (not per read: a server
        answering a byte every second cannot stretch it).
    deadline : float
        Seconds the client may spend on all its requests together, counted from its making (a pull or a push).
    max_answer_bytes : int
        Bytes of one answer; a larger one is refused while it streams in, never held whole.
    max_total_bytes : int
        Bytes of all the answers the client reads.
    """

    timeout: float = 30.0
    deadline: float = 300.0
    max_answer_bytes: int = 64 * 1024**2
    max_total_bytes: int = 512 * 1024**2


def token_kind(token: str) -> str:
    """``"personal"`` for a JWT refresh token (a personal access token), ``"access"`` for a JWT access token,
    ``"legacy"`` for anything else (Label Studio's legacy tokens are 40 hex digits)."""
    parts = token.split(".")
    if len(parts) != 3:
        return "legacy"
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return "legacy"
    kind = payload.get("token_type") if isinstance(payload, dict) else None
    return "personal" if kind == "refresh" else "access" if kind == "access" else "legacy"


_KIND_NAMES = {"personal": "personal access token", "access": "access token", "legacy": "legacy token"}


def _seconds(value: float) -> str:
    return f"{value:g} s" if value < 120 or not math.isfinite(value) else f"{value / 60:g} min"


def _messages(errors: Any) -> list[str]:
    """The messages of a Django REST framework error body (a message, or lists and dicts of them)."""
    if isinstance(errors, dict):
        return [m for value in errors.values() for m in _messages(value)]
    if isinstance(errors, list):
        return [m for value in errors for m in _messages(value)]
    return [str(errors)]


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if isinstance(body, dict):
        text = body.get("detail") or body.get("validation_errors") or body
        if body.get("detail") and body.get("validation_errors"):  # 1.23's 400s: "Validation error" and the why
            text = f"{body['detail']}: {'; '.join(_messages(body['validation_errors']))}"
        return " ".join(str(text).split())[:300]
    return f"HTTP {response.status_code}"


class LabelStudio:
    """A Label Studio server at ``url``, spoken to with ``token``.

    Parameters
    ----------
    url : str
        The server's address (``http://host:8080``).
    token : str
        A personal access token (refresh token), an access token, or a legacy token.
    limits : ExchangeLimits, optional
        The time and bytes the client may spend (default :class:`ExchangeLimits`'s): past one, a
        LabelStudioError naming its setting, and nothing of the answer kept.
    transport : httpx.BaseTransport, optional
        The transport under the client (the tests wrap the real one to cut a pull halfway); the limits of time are
        kept by the default one, the limits of bytes by any. The default one goes through the proxy the
        environment names for the URL (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, unless ``NO_PROXY`` names
        its host), with the same limits.

    A scheme other than http(s) and a URL holding a user name or password are refused here, before any connection
    (which servers a URL may name is the caller's policy: :func:`crowdqa.jobs.label_studio.connect`), and no
    redirect is followed: a 3xx answer is a LabelStudioError naming where it pointed, so an allowed server cannot
    send the client (and its token) elsewhere.
    """

    def __init__(self, url: str, token: str, *, limits: ExchangeLimits | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        url = url.strip().rstrip("/")
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, ValueError) as exc:
            raise LabelStudioError(f"bad Label Studio URL {url!r}: {exc}") from None
        if parsed.userinfo:  # also "http://host:8080\@elsewhere", which reaches elsewhere; never repeated back
            raise LabelStudioError("the Label Studio URL holds a user name or password: give the server's address "
                                   "alone, and the token as the token")
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise LabelStudioError(f"the Label Studio URL must start with http:// or https:// and name a host, "
                                   f"found {url!r}")
        token = token.strip()
        if not token:
            raise LabelStudioError("the Label Studio token is empty")
        self.url = url
        self.kind = token_kind(token)
        self._token = token
        self._access: str | None = token if self.kind == "access" else None
        self.limits = limits or ExchangeLimits()
        #: Bytes of the answers read so far (bounded by ``limits.max_total_bytes``).
        self.received = 0
        self._deadline = Deadline()
        self._ends = time.monotonic() + self.limits.deadline
        try:
            proxy = None if transport is not None else environment_proxy(parsed)
        except ValueError as exc:
            raise LabelStudioError(str(exc)) from None
        #: How the server is reached, for the messages: "" (directly) or " through the proxy in HTTPS_PROXY".
        self._via = "" if proxy is None else f" through the proxy in {proxy[0]}"
        try:
            # A transport of our own is given, so httpx reads no proxy from the environment: the transport does.
            self._http = httpx.Client(base_url=url, timeout=self.limits.timeout, follow_redirects=False,
                                      transport=transport or DeadlineTransport(
                                          self._deadline, proxy=None if proxy is None else proxy[1]))
        except (httpx.InvalidURL, ValueError) as exc:
            raise LabelStudioError(f"bad Label Studio URL {url!r}: {exc}") from None

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> LabelStudio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------------------------
    def _send(self, method: str, path: str, *, auth: bool = True, **kw: Any) -> httpx.Response:
        """One request, done within its deadline (:attr:`ExchangeLimits.timeout`, cut to what is left of
        :attr:`ExchangeLimits.deadline`) and its answer within the bytes left; a GET or HEAD that a kept-alive
        connection loses is sent once more (see :data:`_LOST`)."""
        # Asked plain: a compressed answer would be counted as it came, not as it takes memory once decoded.
        headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if auth:
            headers["Authorization"] = self._authorization()
        whole = self._ends - time.monotonic() <= self.limits.timeout  # the deadline of all comes first
        self._deadline.at = min(time.monotonic() + self.limits.timeout, self._ends)
        try:
            try:
                r = self._bounded(method, path, headers=headers, **kw)
            except _LOST:
                if method not in _IDEMPOTENT:
                    raise
                r = self._bounded(method, path, headers=headers, **kw)  # on a new connection
        except (httpx.InvalidURL, UnicodeError) as exc:
            raise LabelStudioError(f"bad Label Studio URL {self.url!r}: {exc}") from None
        except httpx.TimeoutException:
            if whole:
                raise LabelStudioError(
                    f"Label Studio at {self.url} took longer than this exchange may take in all "
                    f"({_seconds(self.limits.deadline)}, CROWDQA_LABEL_STUDIO_DEADLINE): stopped at {method} "
                    f"{path}") from None
            raise LabelStudioError(f"Label Studio at {self.url} did not answer {method} {path} within "
                                   f"{_seconds(self.limits.timeout)} (CROWDQA_LABEL_STUDIO_TIMEOUT), from "
                                   "connecting to the answer's last byte") from None
        except httpx.TransportError as exc:
            why = " ".join(str(exc).split()) or type(exc).__name__
            raise LabelStudioError(f"cannot reach Label Studio at {self.url}{self._via}: {why}") from None
        if r.is_redirect:  # never followed (follow_redirects=False): it could lead off the allowed servers
            where = " ".join(r.headers.get("location", "").split())[:300] or "nowhere"
            raise LabelStudioError(f"Label Studio at {self.url} answered {method} {path} with a redirect "
                                   f"(HTTP {r.status_code}) to {where}, which crowdqa does not follow: give the "
                                   "server's own address")
        return r

    def _bounded(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """Send a request and read its answer as it streams in, refused (LabelStudioError naming the setting) once
        it passes :attr:`ExchangeLimits.max_answer_bytes` or the bytes left of
        :attr:`ExchangeLimits.max_total_bytes`: a huge answer is never held whole."""
        cap = min(self.limits.max_answer_bytes, self.limits.max_total_bytes - self.received)
        with self._http.stream(method, path, **kw) as r:
            encoding = r.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise LabelStudioError(f"Label Studio at {self.url} answered {method} {path} compressed "
                                       f"({encoding[:40]}) although asked for a plain answer")
            body = bytearray()
            declared = r.headers.get("content-length", "")
            if not declared.isdigit() or int(declared) <= cap:
                for chunk in r.iter_bytes():  # plain (refused otherwise): the bytes as sent
                    body += chunk
                    if len(body) > cap:
                        break
            if len(body) > cap or (declared.isdigit() and int(declared) > cap):
                raise self._too_large(method, path, cap)
            self.received += len(body)
            headers = [(k, v) for k, v in r.headers.multi_items() if k.lower() != "transfer-encoding"]
            return httpx.Response(r.status_code, headers=headers, content=bytes(body), request=r.request)

    def _too_large(self, method: str, path: str, cap: int) -> LabelStudioError:
        if cap < self.limits.max_answer_bytes:
            return LabelStudioError(
                f"Label Studio at {self.url} answered more than this exchange may read in all "
                f"({self.limits.max_total_bytes} bytes, CROWDQA_LABEL_STUDIO_MAX_PULL_BYTES): stopped at {method} "
                f"{path}")
        return LabelStudioError(f"Label Studio at {self.url} answered {method} {path} with more than "
                                f"{self.limits.max_answer_bytes} bytes (CROWDQA_LABEL_STUDIO_MAX_ANSWER_BYTES): "
                                "refused")

    def _authorization(self) -> str:
        if self.kind == "legacy":
            return f"Token {self._token}"
        if self._access is None:
            self._access = self._exchange()
        return f"Bearer {self._access}"

    def _exchange(self) -> str:
        """A fresh access token for the personal access token."""
        r = self._send("POST", "/api/token/refresh/", auth=False, json={"refresh": self._token})
        if r.status_code in (400, 401, 403):
            raise LabelStudioError(f"Label Studio at {self.url} refused the personal access token: {_detail(r)}")
        body = self._json(r, "POST /api/token/refresh/")
        access = body.get("access") if isinstance(body, dict) else None
        if not isinstance(access, str):
            raise LabelStudioError(f"{self.url} answered POST /api/token/refresh/ without an access token: "
                                   "is it a Label Studio server?")
        return access

    def _json(self, r: httpx.Response, what: str) -> Any:
        if r.status_code >= 400:
            raise LabelStudioError(f"Label Studio at {self.url} answered {what} with HTTP {r.status_code}: "
                                   f"{_detail(r)}")
        try:
            return r.json()
        except ValueError:
            raise LabelStudioError(f"{self.url} answered {what} with something that is not JSON "
                                   f"(HTTP {r.status_code}): is it a Label Studio server?") from None

    def _retrying(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """Send one request; a 401 of a personal access token's access token is retried once with a fresh one."""
        r = self._send(method, path, **kw)
        if r.status_code == 401 and self.kind == "personal":
            self._access = None
            r = self._send(method, path, **kw)
        return r

    def request(self, method: str, path: str, **kw: Any) -> Any:
        """Send one request and return its JSON; a 401 of a personal access token's access token is retried once
        with a fresh one (access tokens last minutes). Every failure is a :class:`LabelStudioError`."""
        r = self._retrying(method, path, **kw)
        if r.status_code in (401, 403):
            raise LabelStudioError(f"Label Studio at {self.url} refused the {_KIND_NAMES[self.kind]} "
                                   f"({method} {path}): {_detail(r)}")
        return self._json(r, f"{method} {path}")

    # -- the calls crowdqa makes ----------------------------------------------------------------------------
    def project(self, project: int) -> dict[str, Any]:
        """The project (its ``title`` and ``label_config``); a missing one is a LabelStudioError."""
        r = self._retrying("GET", f"/api/projects/{int(project)}")
        if r.status_code == 404:
            raise LabelStudioError(f"Label Studio at {self.url} has no project {project} (or the token's user "
                                   "cannot see it)")
        if r.status_code in (401, 403):
            raise LabelStudioError(f"Label Studio at {self.url} refused the {_KIND_NAMES[self.kind]}: {_detail(r)}")
        body = self._json(r, f"GET /api/projects/{project}")
        if not isinstance(body, dict) or "label_config" not in body:
            raise LabelStudioError(f"{self.url} answered GET /api/projects/{project} without a labeling config: "
                                   "is it a Label Studio server?")
        return body

    def emails(self) -> dict[int, str]:
        """Member id -> e-mail of the organization (empty if the token's user may not list members)."""
        r = self._retrying("GET", "/api/users/")
        if r.status_code in (401, 403):
            return {}
        users = self._json(r, "GET /api/users/")
        return {int(u["id"]): str(u["email"]) for u in users if isinstance(u, dict) and u.get("email")}

    def tasks(self, project: int, *, since: str | None = None, page_size: int | None = None) -> Iterator[dict]:
        """Every task of the project with its annotations, page by page; only those updated after ``since`` (an
        ISO time, a task's ``updated_at``) if given. Label Studio moves a task's ``updated_at`` when one of its
        annotations is added, changed or deleted."""
        params: dict[str, Any] = {"fields": "all"}
        if since is not None:
            params["query"] = json.dumps({"filters": {"conjunction": "and", "items": [
                {"filter": "filter:tasks:updated_at", "operator": "greater", "type": "Datetime", "value": since}]}})
        for _, found in self._pages(project, params, page_size or PAGE_SIZE):
            yield from found

    def task_ids(self, project: int, *, page_size: int | None = None) -> set[int]:
        """The ids of the project's tasks, and nothing else of them: ``GET /api/tasks?include=id`` (the
        ``include`` parameter keeps only the named fields; 1.23 answers about 11 bytes a task, against 2.7 kB
        with ``fields=all``). A LabelStudioError when the pages hold fewer ids than the ``total`` they announce
        (a project changing while it is read): a pull must not take a task it did not see for deleted."""
        ids: set[int] = set()
        total = None
        for announced, found in self._pages(project, {"include": "id"}, page_size or ID_PAGE_SIZE):
            total = announced  # the last page's: the project as the listing ended
            try:
                ids.update(int(task["id"]) for task in found)
            except (TypeError, KeyError, ValueError):
                raise LabelStudioError(f"{self.url} answered GET /api/tasks?include=id with a task without an "
                                       "id") from None
        if total is not None and len(ids) < total:
            raise LabelStudioError(f"{self.url} listed {len(ids)} task ids of project {project}, not the {total} "
                                   "it announced (were tasks added or deleted meanwhile?): pull again")
        return ids

    def _pages(self, project: int, params: dict[str, Any], page_size: int) -> Iterator[tuple[int | None, list]]:
        """``(total, tasks)`` of each page of ``GET /api/tasks`` for the project, until the announced ``total`` is
        seen (a server may cap the page size) or, from a server announcing none, a short page."""
        params = {"project": int(project), "page_size": page_size, **params}
        page, seen = 1, 0
        while True:
            r = self._retrying("GET", "/api/tasks", params={**params, "page": page})
            if r.status_code == 404 and page > 1:  # past the last page
                return
            if r.status_code in (401, 403):
                raise LabelStudioError(f"Label Studio at {self.url} refused the {_KIND_NAMES[self.kind]} "
                                       f"(GET /api/tasks): {_detail(r)}")
            body = self._json(r, "GET /api/tasks")
            found = body.get("tasks") if isinstance(body, dict) else body
            if not isinstance(found, list):
                raise LabelStudioError(f"{self.url} answered GET /api/tasks without a task list")
            total = body.get("total") if isinstance(body, dict) else None
            total = total if isinstance(total, int) else None
            yield total, found
            seen += len(found)
            if not found or (seen >= total if total is not None else len(found) < page_size):
                return
            page += 1

    def unannotated_tasks(self, project: int, *, page_size: int | None = None) -> Iterator[dict]:
        """The project's tasks that hold no annotation (Label Studio's ``total_annotations`` is 0: none, or only
        skipped ones), with their ``id`` and ``data`` alone (``include=id,data``), page by page."""
        params = {"include": "id,data", "query": _UNANNOTATED}
        for _, found in self._pages(project, params, page_size or PAGE_SIZE):
            yield from found

    def count_unannotated(self, project: int) -> int:
        """How many of the project's tasks hold no annotation (the ``total`` of one page of their ids)."""
        for total, found in self._pages(project, {"include": "id", "query": _UNANNOTATED}, 1):
            return total if total is not None else len(found)
        return 0

    def add_prediction(self, task: int, result: list[dict], *, score: float, model_version: str) -> dict:
        """Write one prediction on a task."""
        return self.request("POST", "/api/predictions/", json={
            "task": int(task), "result": result, "score": float(score), "model_version": model_version})

    def predictions(self, task: int) -> list[dict]:
        """The predictions of one task."""
        found = self.request("GET", "/api/predictions/", params={"task": int(task)})
        return found if isinstance(found, list) else found.get("results", [])


@dataclass(frozen=True)
class LabelConfig:
    """What crowdqa reads of a labeling config: one ``<Labels>`` (spans) or ``<Choices>`` control on a text.

    Attributes
    ----------
    kind : {"spans", "choices"}
    from_name, to_name : str
        The control's and the text's ``name``: the keys of results to read and of predictions to write.
    text_key : str
        The key of ``data`` holding the text (the text tag's ``value="$key"``).
    labels : tuple of str
        The control's label values.
    """

    kind: str
    from_name: str
    to_name: str
    text_key: str
    labels: tuple[str, ...]


def read_label_config(xml: str) -> LabelConfig:
    """The span or choice control of a Label Studio labeling config; a LabelStudioError naming what the config
    holds when it has none that labels a text (polygons on images, audio regions, ...)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise LabelStudioError(f"the project's labeling config is not XML: {exc}") from None
    tags = {el.get("name"): el for el in root.iter() if el.get("name")}
    found = []
    for el in root.iter():
        if el.tag not in _KINDS:
            found.append(el.tag)
            continue
        target = tags.get(el.get("toName", "").split(",")[0])
        value = target.get("value", "") if target is not None else ""
        if target is None or target.tag not in _TEXT_TAGS or not value.startswith("$"):
            found.append(f"{el.tag} on {'<' + target.tag + '>' if target is not None else 'nothing'}")
            continue
        labels = tuple(c.get("value") or c.get("alias") or "" for c in el if c.tag in ("Label", "Choice"))
        return LabelConfig(_KINDS[el.tag], el.get("name", ""), target.get("name", ""), value[1:], labels)
    controls = [t for t in found if t not in ("View", "Header", "Style", "Label", "Choice", *_TEXT_TAGS)]
    held = ", ".join(t if " " in t else f"<{t}>" for t in controls) or "no control"
    raise LabelStudioError("the project's labeling config has no <Labels> or <Choices> on a text, which is what "
                           f"crowdqa reads; it holds {held}")


def _result_of(ann: dict, config: LabelConfig) -> list[dict]:
    """The results of ``ann`` made by the config's control."""
    return [r for r in ann.get("result") or [] if isinstance(r, dict) and r.get("from_name") == config.from_name]


def plain_task(task: dict, config: LabelConfig, emails: dict[int, str]) -> dict[str, Any]:
    """A task of ``GET /api/tasks`` as a pull keeps it: id, ``updated_at``, the text, and each annotation's
    annotator (e-mail, else user id, and the user id), ground-truth flag and results of the config's control.
    Cancelled (skipped) annotations are left out."""
    anns = []
    for ann in task.get("annotations") or []:
        if not isinstance(ann, dict) or ann.get("was_cancelled"):
            continue
        who = ann.get("completed_by")
        if isinstance(who, dict):
            who = who.get("id", who.get("email"))
        anns.append({"completed_by": str(emails.get(who, who) if isinstance(who, int) else who),
                     "user_id": str(who), "ground_truth": bool(ann.get("ground_truth")),
                     "result": _result_of(ann, config)})
    data = task.get("data") if isinstance(task.get("data"), dict) else {}
    return {"id": int(task["id"]), "updated_at": str(task.get("updated_at") or ""),
            "data": {config.text_key: data.get(config.text_key)}, "annotations": anns}


def split_tasks(tasks: list[dict], *, experts: frozenset[str], ground_truth: bool = False) -> dict[str, list[dict]]:
    """Tasks of :func:`plain_task` as Label Studio export tasks per role (``crowd``, ``expert``).

    An annotation is an expert's when its annotator's e-mail or user id is in ``experts``, or, with
    ``ground_truth``, when Label Studio flags it as ground truth.
    """
    out: dict[str, list[dict]] = {"crowd": [], "expert": []}
    for task in tasks:
        per_role: dict[str, list[dict]] = {"crowd": [], "expert": []}
        for ann in task["annotations"]:
            expert = ann["completed_by"] in experts or ann.get("user_id") in experts or (
                ground_truth and ann["ground_truth"])
            per_role["expert" if expert else "crowd"].append({"completed_by": ann["completed_by"],
                                                              "result": ann["result"]})
        for role, anns in per_role.items():
            if anns:
                out[role].append({"id": task["id"], "data": task["data"], "annotations": anns})
    return out


def upload_bytes(tasks: list[dict], config: LabelConfig) -> tuple[bytes, str, dict[str, Any]]:
    """One role's export tasks as an upload: ``(bytes, format, options)``; a span project as a Label Studio JSON
    export, a choice project as ``item,annotator,label`` rows (the item is the task id)."""
    if config.kind == "spans":
        return (json.dumps(tasks, ensure_ascii=False, sort_keys=True).encode("utf-8"), "label-studio",
                {"text_column": config.text_key})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["item", "annotator", "label"])
    for task in tasks:
        for ann in task["annotations"]:
            chosen = [c for r in ann["result"] for c in (r.get("value") or {}).get("choices") or []]
            if len(chosen) > 1:  # a <Choices choice="multiple"> answer: not one label of a categorical item
                raise LabelStudioError(
                    f"task {task['id']}: {ann['completed_by']} chose {len(chosen)} answers "
                    f"({', '.join(map(repr, chosen))}) in <Choices name=\"{config.from_name}\">; crowdqa aggregates "
                    "one answer per annotator and task (a choice=\"single\" control)")
            w.writerows([task["id"], ann["completed_by"], choice] for choice in chosen)
    return buf.getvalue().encode("utf-8"), "categorical", {}


def prediction_result(config: LabelConfig, spans: list[tuple[int, int, str]] | None = None,
                      choice: str | None = None, text: str = "") -> list[dict]:
    """A prediction's ``result`` list: the spans ``(start, end, label)`` of a span project, or one choice."""
    if config.kind == "choices":
        return [] if choice is None else [{"from_name": config.from_name, "to_name": config.to_name,
                                           "type": "choices", "value": {"choices": [choice]}}]
    return [{"from_name": config.from_name, "to_name": config.to_name, "type": "labels",
             "value": {"start": s, "end": e, "text": text[s:e], "labels": [label]}} for s, e, label in spans or []]

