"""Text a user typed, pasted or linked, cut to what a page reads: at a word boundary, never silently.

A sentence box, a prompt or a link may carry any amount of text (a 2,000-word paste, a link with a novel in it).
What a page reads has limits (tokens for the walk-through's T × T grids, characters for a model's prompt): the text is
cut to them at a word boundary when the settings are validated, the cut text is what the box then shows and the
link holds, and the message says how much was cut and what the limits are.

Word tokens (:func:`tokenize`, the walk-through pages' tokens) are split at whitespace, with punctuation stripped
from both ends of a word and words of punctuation only dropped (:data:`PUNCTUATION`).
A leaf module (imports only ``errors``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Optional

from attention_core.errors import N_, Message

#: The page's cap on sentence length, in tokens (a T × T heatmap with numbers stays
#: readable on a projector up to about 12).
MAX_TOKENS = 12

#: The most characters of a sentence (and of the cross-attention page's encoder sentence): a longer one is cut at a
#: word boundary, with a message (``attention_core.inputs.text``); 12 long words fit.
MAX_SENTENCE_CHARS = 400

#: What is stripped from both ends of a word token (ASCII and the common CJK punctuation).
PUNCTUATION = string.punctuation + "，。！？；：、“”‘’（）"

_WORD = re.compile(r"\S+")


def tokenize(sentence: str) -> tuple[str, ...]:
    """Split a sentence into word tokens.

    Whitespace tokenisation as in seed 000 (``sentence.split()``), with
    punctuation stripped from both ends of each word so that ``"sun!"`` is the
    token ``"sun"`` (seed 004's "Hello shiny sun!"). Words that are only
    punctuation are dropped.

    Args:
        sentence: any text.

    Returns:
        The tokens, in order (possibly empty).
    """
    words = (w.strip(PUNCTUATION) for w in sentence.split())
    return tuple(w for w in words if w)


@dataclass(frozen=True)
class Cut:
    """What :func:`cut_text` kept of a text, and what it left out.

    Attributes:
        text: the kept text (the start of the original, up to the end of a word; trailing whitespace dropped).
        kept_words, cut_words: whitespace-separated words kept and left out.
        cut_chars: characters left out (of the original, counting from the end of ``text``).
    """

    text: str
    kept_words: int
    cut_words: int
    cut_chars: int


def cut_text(text: str, *, max_tokens: int = 0, max_chars: int = 0) -> Optional[Cut]:
    """``text`` cut after its ``max_tokens``-th word token and within ``max_chars`` characters, at a word boundary.

    Args:
        text: any text.
        max_tokens: the most word tokens kept (0: no limit). A word of punctuation only is no token, so it is
            kept or dropped with the words around it.
        max_chars: the most characters kept (0: no limit). When even the first word is longer, it is cut inside
            (there is no boundary before it).

    Returns:
        The :class:`Cut`, or None when ``text`` is within both limits (nothing to cut).
    """
    words = list(_WORD.finditer(text))
    end = None  # where the kept text ends
    tokens = 0
    for index, word in enumerate(words):
        is_token = bool(word.group().strip(PUNCTUATION))
        if max_chars and word.end() > max_chars:
            end = words[index - 1].end() if index else max_chars
            break
        if is_token:
            tokens += 1
            if max_tokens and tokens > max_tokens:
                end = words[index - 1].end()
                break
    if end is None:
        if max_chars and len(text) > max_chars:  # only whitespace beyond the limit
            end = max_chars
        else:
            return None
    kept = text[:end].rstrip()
    kept_words = len(_WORD.findall(kept))
    return Cut(text=kept, kept_words=kept_words, cut_words=len(words) - kept_words, cut_chars=len(text) - len(kept))


def cut_message(what: Message, cut: Cut, *, max_tokens: int = 0, max_chars: int = 0) -> Message:
    """The message that says a text was cut: how much, and the limits (``what``: the text's name, translated with
    the message)."""
    if max_tokens:
        return Message(N_("{what} was too long, so only its first {kept} words are kept: a page reads at most "
                          "{max_tokens} tokens and {max_chars} characters. {cut_words} more words ({cut_chars} "
                          "characters) were left out."),
                       what=what, kept=cut.kept_words, max_tokens=max_tokens, max_chars=f"{max_chars:,}",
                       cut_words=f"{cut.cut_words:,}", cut_chars=f"{cut.cut_chars:,}")
    return Message(N_("{what} was too long, so it was cut after {kept} characters, at the end of a word: at most "
                      "{max_chars} characters are read. {cut_chars} more characters ({cut_words} words) were left "
                      "out."),
                   what=what, kept=f"{len(cut.text):,}", max_chars=f"{max_chars:,}", cut_words=f"{cut.cut_words:,}",
                   cut_chars=f"{cut.cut_chars:,}")
