"""Event wording shared with the web client: :func:`wording` (``app/web/events.json``'s template
language and default, plus every registered game's own wording file, ``GameInfo.wording``, under
the game's id) is read here and by ``app/web/js/wording.js`` (served as ``/events.json``), so
``bannerfall demo``/``replay`` and the play page's event log say the same thing.

The template language is described in the file's ``_doc``; this module and ``wording.js`` are its
two interpreters and ``tests/test_wording.py`` checks that they agree on recorded events.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger("bannerfall.wording")

WORDING_FILE = Path(__file__).resolve().parents[1] / "web" / "events.json"

_TAG = re.compile(r"\{([^{}]*)\}")
_SUITS = {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}
_SYMBOLS = {"infantry": "⚔", "archer": "➹", "knight": "♞"}


@dataclass(frozen=True)
class Line:
    """One event as words: ``text``; ``kind`` (minor | normal | turn | battle | big); ``seat`` the
    seat the line is about (None: nobody in particular); ``private`` True for an event only its seat sees;
    ``known`` False when ``events.json`` has no entry for the event's type (the line is its type in words)."""

    text: str
    kind: str
    seat: int | None
    private: bool
    known: bool = True


@lru_cache(maxsize=1)
def wording() -> dict[str, Any]:
    """``events.json`` as served: its ``_doc`` and ``default``, and under each registered game's id
    that game's wording (its package's ``GameInfo.wording`` file; ``{}`` for a game without one, whose
    events then read as their type in words). Read once. A game whose wording file is unreadable or
    not a JSON object gets ``{}`` too, and the error is logged (its conformance check fails it)."""
    from app.games import registry

    merged: dict[str, Any] = json.loads(WORDING_FILE.read_text(encoding="utf-8"))
    for game_id, game in registry().items():
        try:
            merged[game_id] = game_wording(game)
        except ValueError as exc:  # a broken package: its events read as their types (the suites fail it)
            log.error("%s", exc)
            merged[game_id] = {}
    return merged


def game_wording(game: Any) -> dict[str, Any]:
    """A game's own wording (``{"events": {type: entry}, "card", "score", "reasons", ...}``) read from
    the file its ``info.wording`` names, ``{}`` when it names none. Raises ValueError (with the
    file) when the file is not a JSON object."""
    from app.games import declared_file

    path = declared_file(game, game.info.wording)
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{game.info.id}: wording file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{game.info.id}: wording file {path} is not a JSON object")
    return data


# --- templates -------------------------------------------------------------------------------

def _parse(template: str) -> list[Any]:
    """A template as a tree: str | ("val", expr) | ("if", negate, expr, literal|None, body)
    | ("each", expr, sep, body)."""
    root: list[Any] = []
    stack: list[list[Any]] = [root]
    pos = 0
    for m in _TAG.finditer(template):
        if m.start() > pos:
            stack[-1].append(template[pos:m.start()])
        pos = m.end()
        tag = m.group(1)
        if tag == "/":
            if len(stack) > 1:
                stack.pop()
            continue
        if tag[:1] in "?!":
            expr, eq, literal = tag[1:].partition("=")
            node: Any = ("if", tag[0] == "!", expr, literal if eq else None, [])
        elif tag[:1] == "#":
            expr, bar, sep = tag[1:].partition("|")
            node = ("each", expr, sep if bar else ", ", [])
        else:
            stack[-1].append(("val", tag))
            continue
        stack[-1].append(node)
        stack.append(node[-1])
    if pos < len(template):
        stack[-1].append(template[pos:])
    return root


_parsed: dict[str, list[Any]] = {}


def _lookup(scopes: list[Any], path: str) -> Any:
    if path == ".":
        last = scopes[-1]
        return last.value if isinstance(last, _Entry) else last
    if path == "@key":
        for scope in reversed(scopes):
            if isinstance(scope, _Entry):
                return scope.key
        return None
    parts = path.split(".")
    value: Any = None
    for scope in reversed(scopes):
        if isinstance(scope, _Entry):
            scope = scope.value
        if isinstance(scope, dict) and parts[0] in scope:
            value = scope[parts[0]]
            break
    for part in parts[1:]:
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value.value if isinstance(value, _Entry) else value


class _Entry:
    """A key and value while looping over an object (``@key`` and ``.``)."""

    __slots__ = ("key", "value")

    def __init__(self, key: str, value: Any) -> None:
        self.key, self.value = key, value


def _key(value: Any) -> str:
    """How a value compares with a case key or ``{?path=literal}``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.1f}"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items())
    return str(value)


class _Renderer:
    def __init__(self, game: str, name: Callable[[Any], str]) -> None:
        self.spec = wording().get(game) or {}
        self.name_of = name

    def name(self, seat: Any) -> str:
        if seat is None:
            return "nobody"
        if seat == "neutral":
            return "neutral"
        return self.name_of(int(seat)) if isinstance(seat, (int, float)) or str(seat).isdigit() else str(seat)

    def card(self, card: Any) -> str:
        template = self.spec.get("card")
        if template is None or card is None:
            return "??" if card is None else _text(card)
        return self.render(template, [card])

    def filter(self, value: Any, name: str) -> Any:
        if name == "name":
            return self.name(value)
        if name == "names":
            return " & ".join(self.name(v) for v in value or []) or "nobody"
        if name == "cap":
            text = _text(value)
            return text[:1].upper() + text[1:]
        if name == "words":
            return _text(value).replace("_", " ")
        if name == "count":
            return len(value) if isinstance(value, (list, dict)) else 0
        if name == "s":
            return "" if _key(value) == "1" else "s"
        if name == "join":
            return " ".join(_text(v) for v in value or [])
        if name == "list":
            return ", ".join(_text(v) for v in value or [])
        if name == "land":
            return f"L{_text(value)}"
        if name == "lands":
            return ", ".join(f"L{_text(v)}" for v in value or [])
        if name == "poker":
            if not value:
                return "??"
            return ("10" if value[0] == "T" else value[0]) + _SUITS.get(value[1:2], "")
        if name == "symbols":
            return "".join(_SYMBOLS.get(k, k) * int(n) for k, n in (value or {}).items() if n)
        if name == "card":
            return self.card(value)
        if name == "cards":
            return self.spec.get("card_sep", ", ").join(self.card(c) for c in value or []) or "—"
        if name == "reason":
            return (self.spec.get("reasons") or {}).get(value) or _text(value).replace("_", " ")
        if name == "score":
            template = self.spec.get("score")
            return self.render(template, [value]) if template else _text(value)
        raise ValueError(f"unknown filter {name!r} in events.json")

    def expr(self, scopes: list[Any], expr: str) -> Any:
        path, *filters = expr.split("|")
        value = _lookup(scopes, path.strip())
        for f in filters:
            value = self.filter(value, f.strip())
        return value

    def render(self, template: Any, scopes: list[Any]) -> str:
        if isinstance(template, dict):
            value = self.expr(scopes, template["by"])
            cases = template.get("cases") or {}
            chosen = cases.get(_key(value), template.get("default", ""))
            return self.render(chosen, scopes)
        if template is None:
            return ""
        nodes = _parsed.get(template)
        if nodes is None:
            nodes = _parsed[template] = _parse(template)
        return self._nodes(nodes, scopes)

    def _nodes(self, nodes: list[Any], scopes: list[Any]) -> str:
        out = []
        for node in nodes:
            if isinstance(node, str):
                out.append(node)
            elif node[0] == "val":
                out.append(_text(self.expr(scopes, node[1])))
            elif node[0] == "if":
                _, negate, expr, literal, body = node
                value = self.expr(scopes, expr)
                if literal is None:
                    truth = value not in (None, False, "", 0) and value != [] and value != {}
                else:
                    truth = _key(value) == literal
                if truth != negate:
                    out.append(self._nodes(body, scopes))
            else:
                _, expr, sep, body = node
                value = self.expr(scopes, expr)
                pairs = value.items() if isinstance(value, dict) else enumerate(value or [])
                items = [_Entry(str(k), v) for k, v in pairs]
                out.append(sep.join(self._nodes(body, [*scopes, item]) for item in items))
        return "".join(out)


def describe(game: str, event: dict[str, Any], name: Callable[[int], str]) -> Line | None:
    """One event as a :class:`Line`, or None when the wording says it is not shown.

    ``game``: a game id; ``event``: an event as on the wire (``{"type": ..., ...}``);
    ``name``: seat number -> player name."""
    spec = (wording().get(game) or {}).get("events", {})
    known = event.get("type") in spec
    entry = spec[event.get("type")] if known else wording()["default"]
    if entry is None:
        return None
    renderer = _Renderer(game, name)
    text = renderer.render(entry["text"], [event])
    seat_path = entry.get("seat", "seat")
    seat = _lookup([event], seat_path) if seat_path else None
    return Line(text=text, kind=entry.get("kind", "normal"), seat=seat if isinstance(seat, int) else None,
                private=bool(entry.get("private", False)), known=known)


def score_text(game: str, score: Any) -> str:
    """A final score in the game's unit, e.g. ``"18 provinces"``, ``"41 points"``."""
    return _Renderer(game, str).filter(score, "score")


def reason_text(game: str, reason: str | None) -> str:
    """Why a match ended, in words (``"three rounds were played"``); an abort's own reason as is."""
    if not reason:
        return "no reason given"
    return _Renderer(game, str).filter(reason, "reason")
