"""Minimal RFC 6902 JSON Patch between two JSON documents, and its application.

The server sends a viewer, after its first full ``state``, only what changed in its view: ``diff``
of the viewer's previous and new view. Clients apply it with any RFC 6902 library (``jsonpatch`` in
Python, ``fast-json-patch`` in JavaScript) or with :func:`apply_patch` here / the JavaScript SDK's
``applyPatch`` (``clients/js/src/patch.ts``, fast-json-patch behind RFC 6901's checks; proven
against this module by ``tests/client/test_patch_js.py``).

Why our own diff and not ``jsonpatch.make_patch``: views are plain JSON trees (dicts, lists, str,
int, float, bool, None) of a few KB; a straight recursive walk that never searches for moved list
items is several times faster than ``make_patch`` (which looks for moves and copies) and gives patches
that are as small for our views (lists change at their ends or in place: hands, piles, logs).

Only three operations are produced: ``add``, ``remove`` and ``replace``. Paths are JSON Pointers
(RFC 6901: ``~`` is written ``~0``, ``/`` is written ``~1``). Rules of :func:`diff`:

* dicts: a key only in the new one is ``add``; only in the old one, ``remove``; in both, recurse;
* lists: the members equal at the start and at the end are kept; in the middle, recurse member by
  member over the part both have, then ``add`` the new members (``/path/i`` in ascending order: an
  RFC 6902 ``add`` inserts, so the equal tail moves along) or ``remove`` the old ones (highest index
  first, so every index is valid when applied in order). A card taken out of or put into a garrison
  is one operation, not a replace of every card after it;
* anything else that differs (another type, a scalar, ``1`` vs ``1.0`` vs ``True``): ``replace``.
  ``True == 1`` in Python, so scalars are compared with their type: the patch is exact for JSON.
* a member (dict or list) holding no container, whose walk gives more than one operation and at
  least one per member of its new value, is sent as one ``replace`` of the member (a revealed card
  is one operation, not a remove and an add of every key);
* a member that is a dict or list equal (``==``, in C) to its old value is skipped without a walk:
  most of a view does not change between two versions. The one inexactness: a container whose only
  change is a scalar of another type but equal value deep inside (``1`` → ``true``) is not patched;
  views never do that (the delta proofs compare exact JSON).

A replace of the whole document has the path ``""``.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

__all__ = ["PatchError", "apply_patch", "diff"]


class PatchError(ValueError):
    """A patch that does not apply to the document (a client should then ask for a full state)."""


def _escape(key: str) -> str:
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def diff(old: Any, new: Any, shared: dict[tuple[int, int, str], list[dict[str, Any]]] | None = None
         ) -> list[dict[str, Any]]:
    """The RFC 6902 patch (list of ``{"op", "path"[, "value"]}``) turning ``old`` into ``new``.
    Both must be JSON trees (dict with str keys, list, str, int, float, bool, None); ``new``'s values
    are put into the patch without copying (encode the patch before changing ``new``).

    ``shared``: a dict (empty at first) passed to several diffs whose documents share sub-objects
    (the audiences of one record: ``AudienceBook.advance``). A changed member met again — the same
    old object, the same new object, at the same path — gets the operations found the first time
    (the same dicts: patches are read-only) instead of a second walk. Only valid while every
    document of those diffs is alive and unchanged (ids are the key): make it for one batch only."""
    ops: list[dict[str, Any]] = []
    if shared is None:
        _diff(old, new, "", ops)
    else:
        _diff_shared(old, new, "", ops, shared)
    return ops


def _diff_shared(old: Any, new: Any, path: str, ops: list[dict[str, Any]],
                 shared: dict[tuple[int, int, str], list[dict[str, Any]]]) -> None:
    """:func:`_diff` with every changed container member (of dicts, and of lists of unchanged length)
    looked up in / added to ``shared``; lists whose length changed get the plain head/tail walk."""
    if old is new:
        return
    told = type(old)
    if told is not type(new) or (told is not dict and told is not list):
        _diff(old, new, path, ops)
        return
    if told is list and len(old) != len(new):  # the head/tail walk of lists: no sharing below
        _diff(old, new, path, ops)
        return
    items: Iterable[tuple[Any, Any]] = new.items() if told is dict else enumerate(new)
    for key, value in items:
        if told is dict and key not in old:
            ops.append({"op": "add", "path": path + "/" + _escape(key), "value": value})
            continue
        was = old[key]
        if was is value:
            continue
        tv = type(value)
        if type(was) is tv:
            if was == value:
                continue  # equal members: one comparison in C, as in _diff
            if tv is dict or tv is list:
                sub = f"{path}/{key}" if told is list else path + "/" + _escape(key)
                memo_key = (id(was), id(value), sub)
                found = shared.get(memo_key)
                if found is None:  # first met: walk it, keep its operations for the other audiences
                    start = len(ops)
                    _diff_shared(was, value, sub, ops, shared)
                    _collapse(ops, start, sub, value)
                    shared[memo_key] = ops[start:]
                else:
                    ops.extend(found)
                continue
        sub = f"{path}/{key}" if told is list else path + "/" + _escape(key)
        ops.append({"op": "replace", "path": sub, "value": value})
    if told is dict:
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": path + "/" + _escape(key)})


def _diff(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if old is new:
        return
    told = type(old)
    if told is not type(new):
        ops.append({"op": "replace", "path": path, "value": new})
        return
    if told is dict:
        for key, value in new.items():
            if key in old:
                was = old[key]
                if was is value or (type(was) is type(value) and was == value):
                    continue  # most members: one comparison in C, no call
                _child_diff(was, value, key, path, ops)
            else:
                ops.append({"op": "add", "path": path + "/" + _escape(key), "value": value})
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": path + "/" + _escape(key)})
        return
    if told is list:
        lo, ln = len(old), len(new)
        shortest = min(lo, ln)
        head = 0  # members equal at the start ...
        while head < shortest and _same(old[head], new[head]):
            head += 1
        tail = 0  # ... and at the end: only the middle changes (a card taken out, one put in)
        while tail < shortest - head and _same(old[lo - 1 - tail], new[ln - 1 - tail]):
            tail += 1
        old_mid, new_mid = lo - head - tail, ln - head - tail
        common = min(old_mid, new_mid)
        for i in range(head, head + common):
            was, value = old[i], new[i]
            if was is value or (type(was) is type(value) and was == value):
                continue
            _child_diff(was, value, i, path, ops)
        for i in range(head + common, head + new_mid):  # inserted before the equal tail, ascending
            ops.append({"op": "add", "path": f"{path}/{i}", "value": new[i]})
        for i in range(head + old_mid - 1, head + common - 1, -1):  # highest first
            ops.append({"op": "remove", "path": f"{path}/{i}"})
        return
    if old != new:
        ops.append({"op": "replace", "path": path, "value": new})


def _collapse(ops: list[dict[str, Any]], start: int, path: str, new: Any) -> None:
    """The walk of one container member wrote ``ops[start:]``: when that is more than one operation,
    at least one per member of ``new``, and ``new`` holds no container (a revealed card: every key
    removed and added), one ``replace`` of the member is as small or smaller and cheaper to apply."""
    count = len(ops) - start
    if count > 1 and count >= len(new) and not any(
            type(v) is dict or type(v) is list for v in (new.values() if type(new) is dict else new)):
        del ops[start:]
        ops.append({"op": "replace", "path": path, "value": new})


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON at the top (a scalar's type counts: ``1`` is not ``true``)."""
    return old is new or (type(old) is type(new) and old == new)


def _child_diff(old: Any, new: Any, key: str | int, path: str, ops: list[dict[str, Any]]) -> None:
    """One member of a dict or list: equal containers are skipped with one comparison in C (most of
    a view does not change), changed ones are walked, scalars compared with their type."""
    if old is new:
        return
    tnew = type(new)
    if type(old) is tnew:
        if tnew is dict or tnew is list:
            if old != new:
                sub = f"{path}/{key}" if isinstance(key, int) else path + "/" + _escape(key)
                start = len(ops)
                _diff(old, new, sub, ops)
                _collapse(ops, start, sub, new)
            return
        if old == new:
            return
    sub = f"{path}/{key}" if isinstance(key, int) else path + "/" + _escape(key)
    ops.append({"op": "replace", "path": sub, "value": new})


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    if not path.startswith("/"):
        raise PatchError(f"bad JSON pointer {path!r}")
    tokens = path[1:].split("/")
    if "~" in path:
        tokens = [_unescape(t) for t in tokens]
    node = doc
    last = len(tokens) - 1
    for i in range(last):
        token = tokens[i]
        if type(node) is dict:  # decoded JSON: the common case, one lookup
            child = node.get(token, _MISSING)
            if child is _MISSING:
                raise PatchError(f"no {token!r} on the way to {path!r}")
            node = child
        else:
            node = _child(node, token, path)
    return node, tokens[last]


_MISSING: Any = object()


def _child(node: Any, token: str, path: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"no {token!r} on the way to {path!r}")
        return node[token]
    if isinstance(node, list):
        i = _index(token, len(node) - 1, path)
        return node[i]
    raise PatchError(f"{path!r} goes through a scalar")


def _index(token: str, highest: int, path: str) -> int:
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"bad list index in {path!r}")
    i = int(token)
    if i > highest:
        raise PatchError(f"list index out of range in {path!r}")
    return i


def apply_patch(doc: Any, patch: list[dict[str, Any]], *, in_place: bool = False, copy_values: bool = True) -> Any:
    """``doc`` with ``patch`` applied (``add``, ``remove``, ``replace``; a ``-`` index appends).
    Returns the new document (a deep copy of ``doc`` unless ``in_place``). Raises :class:`PatchError`
    if an operation does not apply; then nothing of ``doc`` changed unless ``in_place``.

    ``copy_values``: each operation's ``value`` goes into the document as a deep copy (the patch may
    be applied again, or to other documents); False puts the value itself there, for a patch just
    decoded from the wire and applied once (a client's own copy: no copy made)."""
    if not in_place:
        doc = copy.deepcopy(doc)
    for op in patch:
        kind, path = op.get("op"), op.get("path")
        if not isinstance(path, str):
            raise PatchError("an operation needs a string 'path'")
        if path == "":
            if kind in ("add", "replace"):
                doc = copy.deepcopy(op["value"]) if copy_values else op["value"]
                continue
            raise PatchError(f"cannot {kind} the whole document")
        parent, key = _parent(doc, path)
        if kind in ("add", "replace") and "value" not in op:
            raise PatchError(f"{kind} needs a 'value'")
        value = copy.deepcopy(op.get("value")) if copy_values else op.get("value")
        if isinstance(parent, dict):
            if kind == "add":
                parent[key] = value
            elif kind in ("replace", "remove"):
                if key not in parent:
                    raise PatchError(f"nothing at {path!r} to {kind}")
                if kind == "replace":
                    parent[key] = value
                else:
                    del parent[key]
            else:
                raise PatchError(f"unsupported op {kind!r}")
        elif isinstance(parent, list):
            if kind == "add":
                if key == "-":
                    parent.append(value)
                else:
                    parent.insert(_index(key, len(parent), path), value)
            elif kind == "replace":
                parent[_index(key, len(parent) - 1, path)] = value
            elif kind == "remove":
                del parent[_index(key, len(parent) - 1, path)]
            else:
                raise PatchError(f"unsupported op {kind!r}")
        else:
            raise PatchError(f"{path!r} goes through a scalar")
    return doc
