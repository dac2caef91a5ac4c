"""Ingest errors: one exception, one line, naming the file, the line or row, and what was wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

from crowdqa.ingest.formats import choice_message, option
from crowdqa.ingest.limits import DocumentLimits

__all__ = ["IngestError", "DocumentTooLongError", "Problem", "ProblemLog"]


class IngestError(ValueError):
    """A file that cannot be read as the format it claims to be.

    ``str(err)`` is one line: ``"<source>:<line>: <message>"`` (the line part is left
    out when it does not apply).
    """

    def __init__(self, message: str, *, source: str = "", line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.detail = message
        where = source + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


class DocumentTooLongError(IngestError):
    """A document longer than the reading's :class:`~crowdqa.ingest.limits.DocumentLimits`: the upload is refused
    whole (``on_error="skip"`` does not skip it). ``doc_id`` names the document, ``limit`` the setting."""

    def __init__(self, message: str, *, doc_id: str, limit: str, source: str = "", line: int | None = None) -> None:
        super().__init__(message, source=source, line=line)
        self.doc_id, self.limit = doc_id, limit

    def at(self, source: str, line: int | None) -> DocumentTooLongError:
        """The same refusal, naming where the document was read (a reader that knows it, when a builder found
        it)."""
        return DocumentTooLongError(self.detail, doc_id=self.doc_id, limit=self.limit, source=source, line=line)


@dataclass(frozen=True)
class Problem:
    """One bad row that was skipped (``on_error="skip"``)."""

    source: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.source + (f":{self.line}" if self.line is not None else "")
        return f"{where}: {self.message}"


@dataclass
class ProblemLog:
    """Collect bad rows: raise at the first one (``"fail"``) or record and go on (``"skip"``). It travels with
    every reader and its helpers, so it also carries the bound on a document's length they check as they read."""

    on_error: str = "fail"
    problems: list[Problem] = field(default_factory=list)
    #: The longest document the reading accepts (refused in both modes).
    limits: DocumentLimits = field(default_factory=DocumentLimits)
    #: What the reader assumed or left out by rule (never raised): the parse summary lists them.
    notes: list[str] = field(default_factory=list)
    #: Rows left out by rule, not because they are bad (e.g. rejected MTurk assignments), by reason.
    dropped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.on_error not in option("on_error").choices:
            raise IngestError(choice_message("on_error", self.on_error))

    def note(self, message: str) -> None:
        """Record an assumption or a rule the reader applied (shown in the summary, in both modes)."""
        self.notes.append(message)

    def report(self, message: str, *, source: str = "", line: int | None = None) -> None:
        """Raise :class:`IngestError` in fail mode; otherwise remember the problem."""
        if self.on_error == "fail":
            raise IngestError(message, source=source, line=line)
        self.problems.append(Problem(source, line, message))
