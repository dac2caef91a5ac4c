"""How long one document may be: a bound every reader checks while it reads, before the document's tokens and
labels are made.

A reader's memory grows with the documents it builds (a document's tokens, each annotator's labels on them, the
arrays that align spans to tokens), so one document of 90 million characters took a reading process past 2.5 GB.
:class:`DocumentLimits` bounds a document by characters (its text) and by tokens; the service takes the bounds
from ``CROWDQA_MAX_DOCUMENT_CHARS`` and ``CROWDQA_MAX_DOCUMENT_TOKENS`` and every reader is handed them through its
:class:`~crowdqa.ingest.errors.ProblemLog`. A document past either bound is refused with a
:class:`~crowdqa.ingest.errors.DocumentTooLongError` (an IngestError) naming the file, the line (where the format
has lines), the document and the bound, under ``on_error="skip"`` too: it is not a bad row but an upload the
service will not hold.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DocumentLimits", "CHARS_SETTING", "TOKENS_SETTING"]

#: The settings a refusal names (the service's; the command line's ``crowdqa`` reads the same variables).
CHARS_SETTING = "CROWDQA_MAX_DOCUMENT_CHARS"
TOKENS_SETTING = "CROWDQA_MAX_DOCUMENT_TOKENS"


@dataclass(frozen=True)
class DocumentLimits:
    """The longest document a reader accepts.

    Parameters
    ----------
    max_chars : int, default=1_000_000
        Characters of a document's text (for token formats: its tokens joined by single spaces).
    max_tokens : int, default=500_000
        Tokens of a document.
    """

    max_chars: int = 1_000_000
    max_tokens: int = 500_000

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> DocumentLimits:
        """The bounds of ``CROWDQA_MAX_DOCUMENT_CHARS`` and ``CROWDQA_MAX_DOCUMENT_TOKENS`` (the defaults where
        unset), for the command line, which reads files without the service's settings; a ValueError naming the
        variable for a value that is not a positive integer."""
        environ = os.environ if environ is None else environ
        values = {}
        for name, field in ((CHARS_SETTING, "max_chars"), (TOKENS_SETTING, "max_tokens")):
            text = environ.get(name, "").strip()
            if text:
                if not text.isdigit() or int(text) <= 0:
                    raise ValueError(f"{name} must be a positive integer, found {text!r}")
                values[field] = int(text)
        return cls(**values)

    def check_chars(self, n_chars: int, *, doc_id: str, source: str = "", line: int | None = None) -> None:
        """Refuse a document of ``n_chars`` characters past :attr:`max_chars`."""
        from crowdqa.ingest.errors import DocumentTooLongError

        if n_chars > self.max_chars:
            raise DocumentTooLongError(f"document {doc_id!r} has {n_chars} characters, more than the "
                                       f"{self.max_chars} a document may have ({CHARS_SETTING})", source=source,
                                       line=line, doc_id=doc_id, limit=CHARS_SETTING)

    def check_bytes(self, n_bytes: int, *, doc_id: str, source: str = "", line: int | None = None) -> None:
        """Refuse a text of ``n_bytes`` bytes before it is read when even UTF-8's widest characters (4 bytes)
        would make it longer than :attr:`max_chars`."""
        from crowdqa.ingest.errors import DocumentTooLongError

        if n_bytes > 4 * self.max_chars:
            raise DocumentTooLongError(f"document {doc_id!r} is {n_bytes} bytes, more than the {self.max_chars} "
                                       f"characters a document may have ({CHARS_SETTING}) take", source=source,
                                       line=line, doc_id=doc_id, limit=CHARS_SETTING)

    def check_tokens(self, n_tokens: int, *, doc_id: str, source: str = "", line: int | None = None,
                     at_least: bool = False) -> None:
        """Refuse a document of ``n_tokens`` tokens past :attr:`max_tokens` (``at_least``: the reader stopped
        counting once past it)."""
        from crowdqa.ingest.errors import DocumentTooLongError

        if n_tokens > self.max_tokens:
            count = f"more than {self.max_tokens}" if at_least else str(n_tokens)
            raise DocumentTooLongError(f"document {doc_id!r} has {count} tokens, more than the {self.max_tokens} "
                                       f"a document may have ({TOKENS_SETTING})", source=source, line=line,
                                       doc_id=doc_id, limit=TOKENS_SETTING)

    def check_lengths(self, doc_lengths: Any, doc_ids: Sequence[Any], *, source: str = "") -> None:
        """Refuse the longest of documents whose token counts are ``doc_lengths`` (an ndarray of shape (n_docs,)),
        if past :attr:`max_tokens`: the check of a reader that counts every document's tokens at once."""
        if len(doc_lengths) and int(doc_lengths.max()) > self.max_tokens:
            d = int(doc_lengths.argmax())
            self.check_tokens(int(doc_lengths[d]), doc_id=str(doc_ids[d]), source=source)
