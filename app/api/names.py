"""Checking names people choose: display names and usernames (issue 14 item 1).

A name is refused (422 with a code, nothing changed) when it

- holds a control character (category ``Cc``: NUL, CR, LF, tab, every C0 and C1 code), a lone
  surrogate, a private-use or unassigned code point: ``bad_name``;
- holds a bidi control (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, LRM, RLM, ALM) or any other
  invisible format character (``Cf``: zero-width space, word joiner, BOM …; ZWJ and ZWNJ are kept
  for emoji and scripts that need them): ``bad_name``;
- is blank: nothing visible left once spaces, format characters and combining marks are taken
  away: ``blank_name``;
- impersonates a reserved name (``admin``, ``bot``, ``system`` … :data:`RESERVED`), compared after
  NFKC normalisation, case folding, removal of accents and folding of common confusables (Cyrillic
  and Greek look-alikes, ``0``→``o``, ``1``→``l`` …), either as the whole name with separators
  removed (``A.d.m.i.n``) or as one of its words (``random-bot-0``, ``The Admin``): ``reserved_name``.

A name that passes is returned NFKC-normalised with runs of white space made one space and the
ends trimmed; that is what is stored and shown. Usernames are narrower still (:func:`check_username`)
and unique by :func:`username_key`.
"""
from __future__ import annotations

import re
import unicodedata

#: names nobody may take (compared by :func:`skeleton`)
RESERVED = frozenset({
    "admin", "administrator", "root", "system", "sysop", "server", "bot", "bots", "moderator", "mod",
    "staff", "support", "official", "bannerfall", "owner", "operator", "nobody", "null",
    "undefined", "anonymous",
})
#: display names: 1-32 characters once normalised
DISPLAY_MAX = 32
#: the most characters a display name may have as sent, before normalising (decomposed accents,
#: spaces to trim): only a bound on the input; the limit is :data:`DISPLAY_MAX` once normalised
DISPLAY_RAW_MAX = 4 * DISPLAY_MAX
#: usernames: 3-24 characters of letters, digits, ``_``, ``-`` and ``.``
USERNAME_MIN, USERNAME_MAX = 3, 24

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
KEPT_FORMAT = frozenset("\u200c\u200d")  # ZWNJ, ZWJ

#: look-alike letters folded to the Latin letter they imitate (cheap, not the full UTS 39 table)
_CONFUSABLE_LETTERS = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ӏ": "l", "ԛ": "q", "ԝ": "w",
    "ɡ": "g", "ь": "b",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "μ": "u", "ϲ": "c",
    # Latin look-alikes
    "ı": "i", "ł": "l", "ø": "o", "đ": "d", "ß": "ss", "ſ": "s",
})
#: digits and signs that stand for letters ("adm1n", "b0t", "5y5tem")
_LEET = str.maketrans({"0": "o", "1": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                       "9": "g", "$": "s", "@": "a", "!": "i", "|": "l"})


class NameRefused(ValueError):
    """A refused name: ``code`` is ``bad_name``, ``blank_name``, ``reserved_name`` or ``name_too_long``
    (or ``bad_username`` for a username outside its character set)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _fold(text: str) -> str:
    """NFKC, case fold, accents removed, confusable letters folded (digits kept)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) not in ("Mn", "Me"))
    return text.translate(_CONFUSABLE_LETTERS)


def skeleton(text: str) -> str:
    """What a name looks like: :func:`_fold`, then ``i``/``l`` made one letter, then only letters and
    digits kept."""
    return re.sub(r"[\W_]+", "", _fold(text)).replace("i", "l")


def _reserved(folded_words: list[str], whole: str) -> bool:
    reserved = {r.replace("i", "l") for r in RESERVED}
    candidates = [whole, whole.translate(_LEET)]
    for word in folded_words:
        candidates += [word, word.translate(_LEET)]
    for c in candidates:
        c = c.replace("i", "l")
        if c in reserved or re.sub(r"\d+$", "", c) in reserved:
            return True
    return False


def check_name(name: str, *, max_length: int = DISPLAY_MAX) -> str:
    """Check a display name and return it normalised (NFKC, white space collapsed, ends trimmed).
    Raises :class:`NameRefused` (see the module docstring)."""
    for ch in name:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cs", "Co", "Cn"):
            raise NameRefused("bad_name", f"names may not contain the control or unassigned character U+{ord(ch):04X}")
        if ch in BIDI_CONTROLS:
            raise NameRefused("bad_name", f"names may not contain the bidi control U+{ord(ch):04X}")
        if cat == "Cf" and ch not in KEPT_FORMAT:
            raise NameRefused("bad_name", f"names may not contain the invisible character U+{ord(ch):04X}")
    normal = " ".join(unicodedata.normalize("NFKC", name).split())
    visible = [c for c in normal if not c.isspace() and unicodedata.category(c) not in ("Mn", "Me", "Cf")]
    if not visible:
        raise NameRefused("blank_name", "names need at least one visible character")
    if len(normal) > max_length:
        raise NameRefused("name_too_long", f"names are at most {max_length} characters")
    words = [re.sub(r"[\W_]+", "", w) for w in re.split(r"[\s\W_]+", _fold(normal))]
    if _reserved([w for w in words if w], skeleton(normal)):
        raise NameRefused("reserved_name", "that name is reserved")
    return normal


_USERNAME_RE = re.compile(r"[\w.\-]+")


def check_username(username: str) -> str:
    """Check a username (3-24 letters, digits, ``_``, ``-``, ``.``; no spaces) and every rule of
    :func:`check_name`. Returns it NFKC-normalised. Raises :class:`NameRefused`."""
    normal = check_name(username, max_length=USERNAME_MAX)
    if not USERNAME_MIN <= len(normal) or not _USERNAME_RE.fullmatch(normal) or normal != username.strip():
        raise NameRefused("bad_username", f"usernames are {USERNAME_MIN}-{USERNAME_MAX} letters, digits, "
                                          "'_', '-' or '.', without spaces")
    return normal


def username_key(username: str) -> str:
    """The form usernames are unique by (a unique index): folded like :func:`skeleton` but keeping
    separators, so ``Alice``, ``ALICE``, ``аlice`` (Cyrillic а) and ``Alıce`` are one username."""
    return _fold(username).replace("i", "l")
