"""What the sequence models (HMM-Crowd, BSC-seq) read from a corpus besides the labels.

Both models emit each token's word and word shape from its hidden state, and run
forward-backward over sequences (whole documents, or sentences cut by one rule), leaving
out documents that carry no evidence. These pure functions build those arrays once per
fit; :mod:`crowdqa.aggregation.hmm_crowd` and :mod:`crowdqa.aggregation.bsc_seq` each add
their own crowd design matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from crowdqa.aggregation._params import Check
from crowdqa.aggregation.corpus import Corpus

__all__ = ["FEATURES", "SENTENCE_END", "SHAPE_FEATURES", "Layout", "doc_first", "layout", "sentence_starts",
           "text_features", "token_text"]

#: Word-shape features a token can emit. The authors of HMM-Crowd use the first two
#: (``*U``: first character upper case, ``*D``: first character a digit).
SHAPE_FEATURES = {
    "capitalised": lambda w: w[:1].isupper(),
    "digit": lambda w: w[:1].isdigit(),
    "all_caps": lambda w: w.isupper(),
    "punctuation": lambda w: not w.isalnum(),
}
#: The constraint on a model's ``features`` parameter (see :mod:`crowdqa.aggregation._params`).
FEATURES = Check(lambda f: not isinstance(f, str) and all(x == "word" or x in SHAPE_FEATURES for x in f),
                 f"a tuple of 'word' and names in {sorted(SHAPE_FEATURES)}",
                 offending=lambda f: f if isinstance(f, str) else next(
                     (x for x in f if x != "word" and x not in SHAPE_FEATURES), f))
#: A token that is exactly one of these closes a sentence when the next token starts with
#: an upper-case letter or a digit (see :func:`sentence_starts`).
SENTENCE_END = (".", "?", "!")


def token_text(corpus: Corpus) -> list[str]:
    """Every token's text, documents concatenated: slices of the documents' texts joined once.

    Examples
    --------
    >>> c = Corpus.from_arrays(token=[2], worker=[0], label=[0], doc_lengths=[2, 1], token_start=[0, 4, 0],
    ...     token_end=[3, 7, 2], doc_ids=["a", "b"], texts=["The cat", "It"], worker_ids=["u"],
    ...     worker_roles=["crowd"], class_names=["O", "B-X", "I-X"])
    >>> token_text(c)
    ['The', 'cat', 'It']
    """
    text = "".join(corpus.texts)
    doc_offset = np.cumsum([0] + [len(t) for t in corpus.texts[:-1]], dtype=np.int64)
    first = (doc_offset[corpus.token_doc] + corpus.token_start).tolist()
    end = (doc_offset[corpus.token_doc] + corpus.token_end).tolist()
    return [text[a:b] for a, b in zip(first, end, strict=True)]


def doc_first(corpus: Corpus) -> NDArray[np.bool_]:
    """ndarray of shape (n_tokens,) of bool: True at the first token of each (non-empty) document."""
    out = np.zeros(corpus.n_tokens, dtype=bool)
    out[corpus.doc_start[:-1][corpus.doc_lengths > 0]] = True
    return out


def sentence_starts(tokens: list[str], *, doc_first: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """First token of each sentence: a document start, or a token after a standalone sentence mark.

    Rule: token ``t`` starts a sentence when the token before it (in the same document)
    is exactly ``.``, ``?`` or ``!`` and token ``t`` starts with an upper-case letter or a
    digit. The case test keeps ``e . g . the`` inside one sentence. Only a *standalone*
    mark ends a sentence: pre-tokenized text (CoNLL) keeps an abbreviation's period on
    its token (``U.S. Treasury``, ``Jan. 5``), often inside an entity, and a cut there
    would force the entity apart (no sequence may start with ``I-X``). Where every period
    is its own token (crowdqa's tokenizer, and the authors' PICO tokenizer, which splits
    off every word-final period and cuts after it) the two rules agree.

    Parameters
    ----------
    tokens : list of str, length n_tokens
        Token texts, documents concatenated.
    doc_first : ndarray of shape (n_tokens,) of bool
        True at the first token of each document.

    Returns
    -------
    ndarray of shape (n_tokens,) of bool

    Examples
    --------
    >>> sentence_starts(["U.S.", "Treasury", ".", "It", ".", "e"], doc_first=np.eye(1, 6, dtype=bool)[0])
    array([ True, False, False,  True, False, False])
    """
    n = len(tokens)
    ends = np.fromiter((t in SENTENCE_END for t in tokens), dtype=bool, count=n)
    opens = np.fromiter((t[:1].isupper() or t[:1].isdigit() for t in tokens), dtype=bool, count=n)
    out = doc_first.copy()
    out[1:] |= ends[:-1] & opens[1:]
    return out


def text_features(tokens: list[str], *, n_tokens: int, features: tuple[str, ...], lowercase: bool
                  ) -> tuple[NDArray[np.int64] | None, sp.csr_array | None, NDArray[np.bool_], tuple[str, ...]]:
    """Word ids, their one-hot matrix, the shape indicators of every token and the words.

    Parameters
    ----------
    tokens : list of str, length n_tokens
        May be empty when ``features`` is.
    n_tokens : int
    features : tuple of str
        ``"word"`` and names of :data:`SHAPE_FEATURES`.
    lowercase : bool
        Lower-case words before numbering them (the authors of both models keep the word
        as written).

    Returns
    -------
    word : ndarray of shape (n_tokens,) or None
        Word id in order of first appearance; None without ``"word"``.
    vocab : sparse array of shape (n_tokens, n_vocab) or None
        One-hot ``word``.
    shape : ndarray of shape (n_tokens, n_features) of bool
        One column per shape feature, in the order of ``features``.
    words : tuple of str
        The word of each id (lower-cased with ``lowercase``); empty without ``"word"``.
    """
    names = [f for f in features if f != "word"]
    shape = np.zeros((n_tokens, len(names)), dtype=bool)
    if not features:
        return None, None, shape, ()
    # One pass over the token strings numbers the distinct strings in order of first appearance; the word ids
    # and the shape features (each a function of the string) are then taken per distinct string and gathered.
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(t, len(index)) for t in tokens), dtype=np.int64, count=n_tokens)
    distinct = list(index)
    for j, name in enumerate(names):
        shape[:, j] = np.fromiter(map(SHAPE_FEATURES[name], distinct), dtype=bool, count=len(distinct)).take(ids)
    if "word" not in features:
        return None, None, shape, ()
    word, words = ids, tuple(distinct)
    if lowercase:  # numbered in order of first appearance of the lower-cased word, as the tokens give it
        lower: dict[str, int] = {}
        word = np.fromiter((lower.setdefault(w.lower(), len(lower)) for w in distinct), dtype=np.int64,
                           count=len(distinct)).take(ids)
        words = tuple(lower)
    vocab = sp.csr_array((np.ones(n_tokens), (np.arange(n_tokens), word)), shape=(n_tokens, max(len(words), 1)))
    return word, vocab, shape, words


@dataclass(frozen=True)
class Layout:
    """Which tokens the sequence models see, and where their sequences start."""

    active: NDArray[np.bool_]  # (n_tokens,) tokens of documents with any evidence
    seq_first: NDArray[np.bool_]  # (n_tokens,) first token of a sequence (document or sentence)
    start: NDArray[np.int64]  # (n_seqs,) first token of every sequence
    lengths: NDArray[np.int64]  # (n_seqs,) its token count; 0 for a sequence without evidence


def layout(corpus: Corpus, *, known: NDArray[np.int64] | None, sequences: str,
           tokens: list[str] | None = None, every_document: bool = False) -> Layout:
    """Sequences of the corpus (``"document"``, or ``"sentence"``: cut at :func:`sentence_starts`).

    A document has evidence when someone labelled it or a token of it has a ``known``
    class (or always, with ``every_document``: a model whose text model labels any document); the
    sequences of the others get length 0, so forward-backward skips them (their
    posteriors are filled with the class prior afterwards). ``tokens`` (from
    :func:`token_text`) is needed for ``"sentence"``.
    """
    evidence = np.bincount(corpus.obs_doc, minlength=corpus.n_docs) > 0
    evidence |= every_document
    if known is not None:
        evidence |= np.bincount(corpus.token_doc[known >= 0], minlength=corpus.n_docs) > 0
    active = evidence[corpus.token_doc]
    seq_first = doc_first(corpus)
    if sequences == "sentence":
        seq_first = sentence_starts(token_text(corpus) if tokens is None else tokens, doc_first=seq_first)
    start = np.flatnonzero(seq_first)
    lengths = np.where(active[start], np.diff(np.append(start, corpus.n_tokens)), 0)
    return Layout(active, seq_first, start, lengths)
