"""The five tutorials the app teaches from, by the names a student sees, and the code a page shows in those names.

The developers' docstrings cite a tutorial by its seed file (``seed 003 (003_734755b2d0b981d3.txt)``, its §1.3): a
newcomer to the code finds the file in ``shared/seeds/``. A student who opens "Show the code" sees the same source,
so :func:`for_students` writes each such reference as the tutorial's name (what it is: its topic, its language, the
book or lecture behind it) and drops the file's name and the tutorial's internal section numbers. A leaf module.
"""

from __future__ import annotations

import re

#: A seed tutorial's number -> its name, short enough to stand inside a sentence of a docstring.
TUTORIALS: dict[str, str] = {
    "000": "the Chinese tutorial on scaled dot-product self-attention",
    "001": "the Chinese lesson on coding attention (after Raschka, Build a Large Language Model (From Scratch), ch. 3)",
    "002": "the Chinese tutorial on scaled dot-product attention (after Zhang et al., Dive into Deep Learning §10.3)",
    "003": "the Chinese notes on Hung-yi Lee's Transformer lecture",
    "004": "the Afrikaans tutorial on attention (after Raschka, Build a Large Language Model (From Scratch), ch. 3)",
}

_FILE = r"(?:``)?(?:\.\./)?(?:shared/)?(?:seeds/)?(00[0-4])_[0-9a-f]{16}\.txt(?:``)?"
#: "seed 003 (``003_….txt``), §1.3", "seeds 001 and 004", a bare file name: one reference each.
_REFERENCE = re.compile(
    r"\bseed (00[0-4])(?:\s*\(" + _FILE + r"\))?(?:,?\s*(?:§|sec\.\s?)\d+(?:\.\d+)*)?"
    r"|\bseeds (00[0-4]) and (00[0-4])\b"
    r"|" + _FILE, re.IGNORECASE)


def _name(match: re.Match) -> str:
    single, _in_file, first, second, bare = match.groups()
    name = f"{TUTORIALS[first]} and {TUTORIALS[second]}" if first else TUTORIALS[single or bare]
    return name[0].upper() + name[1:] if match.group()[0].isupper() else name  # "Seed 003 says" -> "The notes ..."


#: The book's chapter as the code calls it ("rasbt/LLMs-from-scratch ch03", "rasbt's ch03").
_BOOK = re.compile(r"\brasbt(?:/LLMs-from-scratch|'s)?\s+ch03\b|\brasbt/LLMs-from-scratch\b")
#: A tutorial's own section number left after its name ("(the notes …) §1.7").
_SECTION = re.compile(r"(?<=\))\s*§\d+(?:\.\d+)*")


def for_students(text: str) -> str:
    """``text`` (a function's source) with every seed reference written as the tutorial's name, and the book's
    chapter by its title."""
    named = _REFERENCE.sub(_name, text)
    return _SECTION.sub("", _BOOK.sub("Raschka, Build a Large Language Model (From Scratch), ch. 3", named))
