"""Checks of a game's declared contract: its action, event and view types (``GameInfo.actions`` /
``events`` / ``view``), the JSON Schemas published from them, its event wording and its doc's events
table.

- :class:`TypeCheck` validates actions, events and views against the declared types (pydantic, strict
  JSON mode: what a client would parse).
- :class:`SchemaCheck` validates the same against the published JSON Schemas (``jsonschema``,
  draft 2020-12): the end-to-end tests run real socket traffic through it.
- :func:`wording_problems` and :func:`doc_problems`: the wording and the doc name exactly the
  declared event types, and the wording's templates read only fields the event types have.
"""
from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Iterable

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from app.games.contract import game_schemas, type_name, unknown_keywords

__all__ = ["SchemaCheck", "TypeCheck", "doc_event_types", "doc_problems", "event_fields", "wording_problems"]


def _short(exc: ValidationError) -> str:
    errors = exc.errors()[:3]
    return "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors)


class TypeCheck:
    """A game's declared types as validators. Each ``*_problem`` method returns None when the value
    is what the type says, else one line."""

    def __init__(self, game: Any) -> None:
        info = game.info
        self.game_id = info.id
        self.actions = {type_name(t): TypeAdapter(t) for t in info.actions}
        self.events = {type_name(t): TypeAdapter(t) for t in info.events}
        self.view = TypeAdapter(info.view) if info.view is not None else None

    def _problem(self, adapter: TypeAdapter[Any] | None, value: Any, what: str) -> str | None:
        if adapter is None:
            return None
        try:
            adapter.validate_json(orjson.dumps(value), strict=True)
        except ValidationError as exc:
            return f"{self.game_id}: {what} is not its declared type: {_short(exc)}"
        return None

    def action_problem(self, action: Any) -> str | None:
        kind = action.get("type") if isinstance(action, dict) else None
        if not self.actions:
            return None
        if kind not in self.actions:
            return f"{self.game_id}: action type {kind!r} is not declared (GameInfo.actions)"
        return self._problem(self.actions[kind], action, f"action {kind!r}")

    def event_problem(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if not self.events:
            return None
        if kind not in self.events:
            return f"{self.game_id}: event type {kind!r} is not declared (GameInfo.events)"
        return self._problem(self.events[kind], event, f"event {kind!r}")

    def view_problem(self, view: Any, viewer: int) -> str | None:
        return self._problem(self.view, view, f"the view of {viewer}")


class SchemaCheck:
    """A game's published JSON Schemas (:func:`app.games.contract.game_schemas`) as validators
    (``jsonschema``'s draft 2020-12 validator); each ``*_errors`` returns a list of lines."""

    def __init__(self, game: Any, schemas: dict[str, dict[str, Any]] | None = None) -> None:
        from jsonschema import Draft202012Validator

        self.game_id = game.info.id
        self.schemas = schemas if schemas is not None else game_schemas(game)
        for part, schema in self.schemas.items():
            Draft202012Validator.check_schema(schema)
            unknown = unknown_keywords(schema)
            if unknown:
                raise AssertionError(f"{self.game_id} {part} schema: not JSON Schema 2020-12: {unknown[:5]}")
        self.validators = {part: Draft202012Validator(schema) for part, schema in self.schemas.items()}

    def errors(self, part: str, value: Any) -> list[str]:
        """``part``: ``action``, ``event`` (as the game emits it: without the wire's ``v``) or ``view``."""
        return [f"{self.game_id} {part} {'/'.join(str(p) for p in e.absolute_path)}: {e.message[:200]}"
                for e in self.validators[part].iter_errors(value)][:5]


# --- the wording and the doc -----------------------------------------------------------------------

def event_fields(declared: Any) -> set[str]:
    """The wire field names of a declared event type (aliases, e.g. ``from``)."""
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        return {f.alias or name for name, f in declared.model_fields.items()}
    return set(typing.get_type_hints(declared))


_TAG = re.compile(r"\{([^{}]*)\}")


def _template_roots(template: Any, out: set[str], inside_loop: bool = False) -> None:
    """Add to ``out`` the first path segments ``template`` reads at the event's top level (outside
    ``{#...}`` loops, whose bodies read the loop's item first)."""
    if isinstance(template, dict):
        by = template.get("by")
        if isinstance(by, str) and not inside_loop:
            out.add(by.split("|")[0].strip().split(".")[0])
        for case in (template.get("cases") or {}).values():
            _template_roots(case, out, inside_loop)
        _template_roots(template.get("default"), out, inside_loop)
        return
    if not isinstance(template, str):
        return
    blocks: list[bool] = []  # one per open {?}/{!}/{#} block: True for a loop
    for match in _TAG.finditer(template):
        tag = match.group(1)
        if tag == "/":
            if blocks:
                blocks.pop()
            continue
        prefix = tag[:1]
        expr = tag[1:] if prefix in "?!#" else tag
        path = expr.split("|")[0].split("=")[0].strip()
        if path and path not in (".", "@key") and not inside_loop and not any(blocks):
            out.add(path.split(".")[0])
        if prefix in "?!#":
            blocks.append(prefix == "#")


def wording_problems(game: Any, wording: dict[str, Any]) -> list[str]:
    """What is wrong between a game's wording (its ``events.json`` entry) and its declared events:
    a declared event type without an entry (``null`` is an entry: not shown), an entry for a type that
    is not declared, a template reading a top-level field the event type does not have."""
    info = game.info
    declared = {type_name(t): t for t in info.events}
    if not declared:
        return [f"{info.id}: no event types declared (GameInfo.events)"]
    entries = wording.get("events") or {}
    problems = [f"{info.id}: event {kind!r} has no wording (add an entry, or null to hide it)"
                for kind in declared if kind not in entries]
    problems += [f"{info.id}: wording for {kind!r}, which is not a declared event type"
                 for kind in entries if kind not in declared]
    for kind, entry in entries.items():
        if kind not in declared or entry is None:
            continue
        fields = event_fields(declared[kind])
        roots: set[str] = set()
        _template_roots(entry.get("text"), roots)
        if entry.get("seat"):
            roots.add(str(entry["seat"]).split(".")[0])
        missing = sorted(roots - fields)
        if missing:
            problems.append(f"{info.id}: the wording of {kind!r} reads {missing}, not fields of the event type")
    return problems


def doc_event_types(text: str) -> set[str]:
    """The event types a doc's events table lists: the first cell of every table row under its
    ``## Events`` heading (backquoted names; ``a`` / ``b`` cells count both)."""
    start = re.search(r"^## Events\b.*$", text, re.M)
    if start is None:
        return set()
    end = re.search(r"^## ", text[start.end():], re.M)
    section = text[start.end(): start.end() + end.start() if end else len(text)]
    found: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split("|")[1]
        found.update(re.findall(r"`([a-z][a-z0-9_]*)`", first))
    return found


def doc_problems(game: Any, doc: Path) -> list[str]:
    """A declared event type missing from ``doc``'s events table, or a listed type not declared."""
    declared = {type_name(t) for t in game.info.events}
    listed = doc_event_types(doc.read_text(encoding="utf-8"))
    if not listed:
        return [f"{game.info.id}: {doc} has no '## Events' table"]
    return ([f"{game.info.id}: event {kind!r} is declared but not in {doc.name}'s events table"
             for kind in sorted(declared - listed)]
            + [f"{game.info.id}: {doc.name}'s events table lists {kind!r}, which is not a declared event type"
               for kind in sorted(listed - declared)])


def first(problems: Iterable[str | None]) -> str | None:
    """The first problem that is not None."""
    return next((p for p in problems if p), None)
