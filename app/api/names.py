"""Checking names people choose: display names and usernames.

A name is refused (422 with a code, nothing changed) when it

- holds a control character (category ``Cc``: NUL, CR, LF, tab, every C0 and C1 code), a lone
  surrogate, a private-use or unassigned code point: ``bad_name``;
- holds a bidi control (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, LRM, RLM, ALM) or any other
  invisible format character (``Cf``: zero-width space, word joiner, BOM …; ZWJ and ZWNJ are kept
  for emoji and scripts that need them): ``bad_name``;
- is blank: nothing visible left once spaces, format characters and combining marks are taken
  away: ``blank_name``;
- holds a letter that shows as nothing (Hangul fillers, the braille blank, the Khmer inherent
  vowels, the combining grapheme joiner: :data:`BLANK_LETTERS`): ``bad_name``;
- impersonates a reserved name (``admin``, ``bot``, ``system`` … :data:`RESERVED`), compared after
  NFKC normalisation, folding of look-alikes to the Latin letters they imitate (Unicode's
  confusables data of UTS 39 through the ``confusable_homoglyphs`` library: Greek ``ΑΜΙΝ``,
  Cyrillic ``а``, Cherokee ``Ꭺ``, Latin ``ɑ`` …; small capitals ``ᴀᴅᴍɪɴ`` by their Unicode names),
  case folding, removal of accents, and digits and signs that stand for letters (``0``→``o``,
  ``1``→``l``, ``@``→``a``, ``!``→``i`` …), either as the whole name with separators removed
  (``A.d.m.i.n``) or as one of its words (``random-bot-0``, ``The Admin``): ``reserved_name``;
- mixes the letters of two scripts in one word (``ⲀDMIN``: Coptic and Latin), the usual pairings
  with Han (Japanese, Korean, Chinese) excepted: ``bad_name``.

A name that passes is returned NFKC-normalised with runs of white space made one space and the
ends trimmed; that is what is stored and shown. Usernames are narrower still (:func:`check_username`)
and unique by :func:`username_key`.
"""
from __future__ import annotations

import re
import unicodedata

from confusable_homoglyphs import categories, confusables

#: names nobody may take as the whole name (compared by :func:`_reserved`; a plural ``s`` and
#: trailing digits are ignored)
RESERVED = frozenset({
    "admin", "administrator", "root", "system", "sysop", "server", "bot", "bots", "moderator", "mod",
    "staff", "support", "official", "bannerfall", "owner", "operator", "nobody", "null",
    "undefined", "anonymous", "gm", "gamemaster", "notice", "announcement", "broadcast",
})
#: names of several words that speak for the server, refused as the whole name and as any run of
#: adjacent words of a name, separators dropped (``Game Master``, ``The Server Notice``, ``G.M.``)
RESERVED_PHRASES = frozenset({
    "gamemaster", "servernotice", "systemnotice", "servermessage", "systemmessage", "serverannouncement",
    "systemannouncement", "officialnotice", "customersupport", "customerservice", "helpdesk",
})
#: the reserved names that are refused as any word of a name too (``The Admin``, ``random-bot-0``,
#: ``Bannerfall Support``): those that speak for the server. The others (``root``, ``null``,
#: ``owner``, ``server`` …) are common surnames or words (``Joe Root``), refused only alone
RESERVED_WORDS = frozenset({
    "admin", "administrator", "sysop", "bot", "bots", "moderator", "mod", "staff", "support", "official",
    "bannerfall", "system", "gm", "gamemaster",
})
#: reserved names refused also at the start or end of a word (``TheAdmin``, ``AdminBot``): long
#: enough that no common word or name starts or ends with them
RESERVED_AFFIXES = ("admin", "administrator", "moderator", "bannerfall")
#: display names: 1-32 characters once normalised
DISPLAY_MAX = 32
#: the most characters a display name may have as sent, before normalising (decomposed accents,
#: spaces to trim): only a bound on the input; the limit is :data:`DISPLAY_MAX` once normalised
DISPLAY_RAW_MAX = 4 * DISPLAY_MAX
#: usernames: 3-24 characters of letters, digits, ``_``, ``-`` and ``.``
USERNAME_MIN, USERNAME_MAX = 3, 24

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
KEPT_FORMAT = frozenset("\u200c\u200d")  # ZWNJ, ZWJ
#: letters and marks that render as nothing though their category says otherwise (Hangul fillers,
#: the braille blank, Khmer inherent vowels, the combining grapheme joiner, Mongolian vowel separator)
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5\u034f\u180e\U0001d159")
#: emoji tag characters (U+E0020-U+E007F): invisible format characters, allowed only in a tag
#: sequence after the black flag (the flags of Scotland, Wales, England)
_TAGS = range(0xE0020, 0xE0080)
_BLACK_FLAG = "\U0001f3f4"
#: scripts that may share a word (UTS 39's "highly restrictive" sets); Common and Inherited go with any
_SCRIPT_SETS = (frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}), frozenset({"LATIN", "HAN", "HANGUL"}),
                frozenset({"LATIN", "HAN", "BOPOMOFO"}))
#: characters that imitate a Latin letter by their Unicode name: small capitals, modifier and
#: subscript letters, letters with a hook, stroke, curl or tail that NFD cannot take apart
#: (``Ⱥ``, ``ᶏ``, ``ȡ``, ``ʈ``), squared and circled letters (``🅰``)
_NAMED_LOOKALIKE = re.compile(
    r"(?:.* )?LATIN (?:LETTER SMALL CAPITAL|SMALL CAPITAL LETTER|SUBSCRIPT SMALL LETTER|"
    r"(?:SMALL |CAPITAL )?LETTER (?:SMALL )?CAPITAL|(?:CAPITAL |SMALL )?LETTER(?: DOTLESS)?) ([A-Z])(?: WITH .*)?")
#: Coptic letters that look like Latin ones (Unicode's confusables data lacks most of them)
_COPTIC = {"ALFA": "a", "VIDA": "b", "EIE": "e", "ZATA": "z", "HATE": "h", "IAUDA": "i", "KAPA": "k", "MI": "m",
           "NI": "n", "O": "o", "RO": "p", "SIMA": "c", "TAU": "t", "UA": "y", "KHI": "x", "OOU": "w"}
_COPTIC_NAME = re.compile(r"COPTIC (?:CAPITAL|SMALL) LETTER ([A-Z]+)")

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
                       "9": "g", "$": "s", "@": "a", "!": "i", "|": "l", "¡": "i", "€": "e"})


class NameRefused(ValueError):
    """A refused name: ``code`` is ``bad_name``, ``blank_name``, ``reserved_name`` or ``name_too_long``
    (or ``bad_username`` for a username outside its character set)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _unmarked(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) not in ("Mn", "Me"))


def _latin_lookalike(ch: str, homoglyphs: list[str]) -> str:
    """The ASCII letters or digits ``ch`` (not ASCII) imitates, else ``ch``: its small-capital
    name, or the first of its UTS 39 homoglyphs that is ASCII once its marks are taken away
    (``ł`` → ``l``)."""
    name = unicodedata.name(ch, "")
    named = _NAMED_LOOKALIKE.fullmatch(name)
    if named:
        return named.group(1).lower()
    coptic = _COPTIC_NAME.fullmatch(name)
    if coptic and coptic.group(1) in _COPTIC:
        return _COPTIC[coptic.group(1)]
    for glyph in homoglyphs:
        plain = _unmarked(glyph)
        if plain and plain.isascii() and plain.isalnum():
            return plain
    return ch


def _fold(text: str) -> str:
    """NFKC; every non-ASCII look-alike made the Latin letters it imitates (:func:`_latin_lookalike`:
    before case folding, since ``Μ`` (Greek capital mu) imitates ``M`` while its lower case ``μ``
    imitates ``u``); case fold; accents removed; the remaining Greek and Cyrillic look-alikes folded
    (digits and signs kept)."""
    text = unicodedata.normalize("NFKC", text)
    if not text.isascii():
        found = confusables.is_confusable(text, greedy=True, preferred_aliases=[]) or []
        homoglyphs = {item["character"]: [h["c"] for h in item["homoglyphs"]] for item in found}
        text = "".join(c if c.isascii() else _latin_lookalike(c, homoglyphs.get(c, [])) for c in text)
    return _unmarked(text.casefold()).translate(_CONFUSABLE_LETTERS)


#: letters that pairs of Latin letters imitate (UTS 39's confusables: ``rn`` for ``m``, ``vv`` for
#: ``w``, ``cl`` for ``d``), as the skeleton writes them: each letter becomes the pair, so a name
#: written with the pair and one written with the letter have one skeleton (``adrnin``, ``admin``)
_LETTER_PAIRS = (("m", "rn"), ("w", "vv"), ("d", "cl"))


def _skeleton(text: str) -> str:
    """``text`` (folded, lower case) with the letters that look alike made one: ``i`` and ``l`` one
    letter, and ``m``, ``w``, ``d`` written as the pairs that imitate them (:data:`_LETTER_PAIRS`)."""
    text = text.replace("i", "l")
    for letter, pair in _LETTER_PAIRS:
        text = text.replace(letter, pair)
    return text


_RESERVED_SKELETONS = frozenset(_skeleton(r) for r in RESERVED | RESERVED_PHRASES)
_RESERVED_WORD_SKELETONS = frozenset(_skeleton(r) for r in RESERVED_WORDS)
_PHRASE_SKELETONS = frozenset(_skeleton(r) for r in RESERVED_WORDS | RESERVED_PHRASES)
_AFFIX_SKELETONS = tuple(_skeleton(r) for r in RESERVED_AFFIXES)


def _readings(text: str) -> list[str]:
    """``text`` (folded, separators dropped) as it may be read: as it is, without trailing digits,
    with digits and signs as letters (``adm1n``), both (``adm1n7``), without a plural ``s``, and
    without letters of other scripts (``admin中``); each as its :func:`_skeleton` (``i`` and ``l``
    one letter, ``rn`` read as ``m``, ``vv`` as ``w``, ``cl`` as ``d``)."""
    base = [text, re.sub(r"\d+$", "", text)]
    base += [b.translate(_LEET) for b in base]
    base += [b[:-1] for b in base if len(b) > 3 and b.endswith("s")]
    base += [re.sub(r"[^\x00-\x7f]+", "", b) for b in base]
    return [_skeleton(b) for b in base if b]


def _two_reserved_words(word: str) -> bool:
    """``SystemBot``, ``StaffMod``: a word made of two of :data:`RESERVED_WORDS`."""
    return any(word.startswith(first) and word[len(first):] in _RESERVED_WORD_SKELETONS
               for first in _RESERVED_WORD_SKELETONS)


def _reserved(normal: str) -> bool:
    """Whether ``normal`` (a normalised name) is a reserved name (:data:`RESERVED`,
    :data:`RESERVED_PHRASES`), or one of its words is one of :data:`RESERVED_WORDS` or two of them,
    or a word starts or ends with one of :data:`RESERVED_AFFIXES`, or two or three adjacent words
    make one of :data:`RESERVED_WORDS` or :data:`RESERVED_PHRASES` (``Game Master``): folded
    (:func:`_fold`), then in every reading of :func:`_readings`; signs are turned into letters
    before separators are dropped (``@dm!n``)."""
    folded = _fold(normal)
    for variant in (folded, folded.translate(_LEET)):
        if any(r in _RESERVED_SKELETONS for r in _readings(re.sub(r"[\W_]+", "", variant))):
            return True
        words = [w for w in re.split(r"[\s\W_]+", variant) if w]
        for word in words:
            for r in _readings(re.sub(r"[\W_]+", "", word)):
                if r in _RESERVED_WORD_SKELETONS or (len(r) > 5 and r.startswith(_AFFIX_SKELETONS)) \
                        or (len(r) > 5 and r.endswith(_AFFIX_SKELETONS)) or _two_reserved_words(r):
                    return True
        for n in (2, 3):  # runs of adjacent words: "Game Master", "The Server Notice", "G M"
            for i in range(len(words) - n + 1):
                if any(r in _PHRASE_SKELETONS for r in _readings("".join(words[i:i + n]))):
                    return True
    return False


def _flag_tags_only(name: str) -> bool:
    """Whether every run of tag characters in ``name`` follows the black flag: an emoji tag
    sequence such as the flag of Scotland (U+1F3F4, tags ``gbsct``, cancel tag)."""
    return _BLACK_FLAG in name and all(m.start() > 0 and name[m.start() - 1] == _BLACK_FLAG
                                       for m in re.finditer("[\U000e0020-\U000e007f]+", name))


def _mixed_scripts(normal: str) -> str | None:
    """The first word of ``normal`` whose letters come from scripts that do not go together
    (:data:`_SCRIPT_SETS`), else None."""
    for word in normal.split():
        scripts = {categories.alias(c) for c in word if c.isalpha()} - {"COMMON", "INHERITED"}
        if len(scripts) > 1 and not any(scripts <= allowed for allowed in _SCRIPT_SETS):
            return word
    return None


def check_name(name: str, *, max_length: int = DISPLAY_MAX) -> str:
    """Check a display name and return it normalised (NFKC, white space collapsed, ends trimmed).
    Raises :class:`NameRefused` (see the module docstring)."""
    flag_tags = _flag_tags_only(name)
    for ch in name:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cs", "Co", "Cn"):
            raise NameRefused("bad_name", f"names may not contain the control or unassigned character U+{ord(ch):04X}")
        if ch in BIDI_CONTROLS:
            raise NameRefused("bad_name", f"names may not contain the bidi control U+{ord(ch):04X}")
        if ord(ch) in _TAGS and flag_tags:
            continue
        if (cat == "Cf" and ch not in KEPT_FORMAT) or ch in BLANK_LETTERS:
            raise NameRefused("bad_name", f"names may not contain the invisible character U+{ord(ch):04X}")
    normal = " ".join(unicodedata.normalize("NFKC", name).split())
    visible = [c for c in normal if not c.isspace() and unicodedata.category(c) not in ("Mn", "Me", "Cf")]
    if not visible:
        raise NameRefused("blank_name", "names need at least one visible character")
    if len(normal) > max_length:
        raise NameRefused("name_too_long", f"names are at most {max_length} characters")
    if _reserved(normal):
        raise NameRefused("reserved_name", "that name is reserved")
    mixed = _mixed_scripts(normal)
    if mixed is not None:
        raise NameRefused("bad_name", "a word of a name may not mix the letters of different scripts")
    return normal


_USERNAME_RE = re.compile(r"[\w.\-]+")


def check_username(username: str) -> str:
    """Check a username (3-24 letters, digits, ``_``, ``-``, ``.``, at least one letter or digit; no
    spaces) and every rule of :func:`check_name`. Returns it NFKC-normalised. Raises
    :class:`NameRefused`."""
    normal = check_name(username, max_length=USERNAME_MAX)
    if (not USERNAME_MIN <= len(normal) or not _USERNAME_RE.fullmatch(normal) or normal != username.strip()
            or not _SEPARATORS.sub("", normal)):
        raise NameRefused("bad_username", f"usernames are {USERNAME_MIN}-{USERNAME_MAX} letters, digits, "
                                          "'_', '-' or '.', with a letter or digit, without spaces")
    return normal


#: the digits that look like letters in most fonts (UTS 39 maps them so too): ``bi11`` is ``bill``
_DIGIT_LOOKALIKES = str.maketrans({"0": "o", "1": "l"})


#: the separators a username may hold; the key drops them (``a.lice`` and ``alice`` are one name)
_SEPARATORS = re.compile(r"[._\-]+")
#: the longest key the ``accounts.username_key`` column holds; a longer one is stored as a digest
KEY_MAX = 64


def username_key(username: str) -> str:
    """The form usernames are unique by (a unique index): folded by :func:`_fold`, separators
    (``.``, ``_``, ``-``) dropped, and letters that look alike made one (:func:`_skeleton`), so
    ``Alice``, ``ALICE``, ``аlice`` (Cyrillic а), ``Alıce``, ``A1ice``, ``a.lice`` and ``al_ice``
    are one username, and so are ``mark`` and ``rnark``, ``wendy`` and ``vvendy``, ``dave`` and
    ``clave`` (``0`` reads as ``o`` and ``1`` as ``l``, as in Unicode's confusables). At most
    :data:`KEY_MAX` characters (a longer skeleton is stored as its SHA-256, prefixed ``#``)."""
    key = _skeleton(_SEPARATORS.sub("", _fold(username).translate(_DIGIT_LOOKALIKES)))
    if len(key) > KEY_MAX:
        import hashlib

        key = "#" + hashlib.sha256(key.encode()).hexdigest()
    return key
