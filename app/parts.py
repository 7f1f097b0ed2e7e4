"""Documents kept as encoded parts: what a live match holds of each audience's view, and the RFC 6902
patch between two of them.

A viewer's document (``{"status", "prompts", "view"}``, docs/protocol.md) is kept as a
:data:`Document`: one flat ``dict`` from part keys to the JSON encoding (``bytes``) of each part, in
document order. A part is a member of the view object (key ``"turn"``), or one item of a list member
(``"hand\\x1f3"``, after the member's own entry, whose value is the marker :data:`LIST`); the
status and the prompts are ``"\\x1estatus"`` and the items of ``"\\x1eprompts"``. A dict whose keys are
``str`` and values ``bytes`` is one that CPython's cyclic collector never tracks: a live match's
documents cost the collector nothing, however many audiences and matches a node holds
(``docs/benchmarks/capacity.md``), where documents kept as dicts and lists were walked, promoted
and walked again at every collection.

Games give their views as :data:`ViewParts` (``Game.view_parts``): the view object's members in
order, ``(key, bytes)``, or ``(key, tuple of bytes)`` for a list member item by item;
:func:`document` makes the flat document of one.

- :func:`diff` compares two documents part by part (``bytes`` equality, in C) and gives the patch:
  one ``replace`` per changed part, ``add``/``remove`` for members and list items that came or went.
  A changed part is replaced whole: patches are coarser than a member-by-member diff, and far
  cheaper to make (nothing is walked, nothing is encoded twice).
- :func:`assemble` gives the document as a JSON tree whose leaves are ``orjson.Fragment``: a
  ``state`` message embeds it and orjson copies the parts' bytes without parsing them.
- :func:`encode_view` turns a view dict into its parts (the generic path of a game whose
  ``Game.view_parts`` is derived from ``Game.view``, ``app/games/base.py``).

Patches and assembled documents hold ``orjson.Fragment`` values: encode them with orjson (as
``app.runtime.wire.encode`` does); :func:`to_json` turns either into plain JSON values (tests, tools).
"""
from __future__ import annotations

from typing import Any, Union

import orjson

__all__ = ["LIST", "Document", "Part", "Shape", "ViewParts", "assemble", "diff", "document", "dumps", "encode_part",
           "encode_view", "joined", "revise", "shape_of", "to_json", "view_json"]

#: the encoding of one value, or the encodings of the items of a list value
Part = Union[bytes, tuple[bytes, ...]]
#: a view object's members, in order: ``(key, part)``
ViewParts = tuple[tuple[str, Part], ...]
#: a viewer's document, flat: part key -> JSON bytes (a list member's own entry holds :data:`LIST`)
Document = dict[str, bytes]

#: the value of a list member's own entry (never the JSON encoding of anything)
LIST = b"\x00["
#: the keys of the document's status and prompts (a view member's key never starts with it)
STATUS = "\x1estatus"
PROMPTS = "\x1eprompts"
#: between a list member's key and an item's index
_ITEM = "\x1f"

_Fragment = orjson.Fragment
_orjson_dumps = orjson.dumps


def dumps(value: Any) -> bytes:
    """``orjson.dumps(value)`` in a ``bytes`` of its own length, for encodings a match keeps (parts,
    prompts, constants). orjson's own result keeps the whole buffer it wrote into, about 4 KB however
    short the text; a live match keeps hundreds of parts, which made ~430 KB of RSS per live
    Provinces match (``docs/benchmarks/capacity.md``, "Where a live match's memory went"). The copy
    costs ~0.3 µs. Raises ``orjson.JSONEncodeError`` (a ``TypeError``) for what orjson cannot encode."""
    return _orjson_dumps(value).decode().encode()


_dumps = dumps
#: list member key -> the keys of its items, grown on demand (a few members per game)
_item_keys: dict[str, list[str]] = {}


def _items(key: str, count: int) -> list[str]:
    keys = _item_keys.get(key)
    if keys is None:
        keys = _item_keys[key] = []
    while len(keys) < count:
        keys.append(f"{key}{_ITEM}{len(keys)}")
    return keys


def encode_part(value: Any) -> Part:
    """The part of one value: a list's items encoded one by one, anything else encoded whole."""
    if type(value) is list:
        return tuple([_dumps(item) for item in value])
    return _dumps(value)


def encode_view(view: dict[str, Any]) -> ViewParts:
    """A view object's parts (:func:`encode_part` of each member)."""
    return tuple([(key, encode_part(value)) for key, value in view.items()])


def _put(doc: Document, key: str, part: Part) -> None:
    if isinstance(part, bytes):
        doc[key] = part
        return
    doc[key] = LIST
    if part:
        doc.update(zip(_items(key, len(part)), part, strict=False))  # the key list may be longer


def document(status: bytes, prompts: Part, view: ViewParts) -> Document:
    """The flat document of ``status`` (encoded), ``prompts`` (a list part) and ``view``."""
    doc: Document = {STATUS: status}
    _put(doc, PROMPTS, prompts)
    for key, part in view:
        _put(doc, key, part)
    return doc


def joined(part: Part) -> bytes:
    """The JSON encoding of a whole part (a list part's items inside ``[...]``)."""
    if isinstance(part, bytes):
        return part
    return b"[" + b",".join(part) + b"]"


def _escape(key: str) -> str:
    if "~" in key or "/" in key:
        return key.replace("~", "~0").replace("/", "~1")
    return key


#: part key -> its JSON Pointer (member keys and the item keys of :func:`_items`: a few hundred; at
#: most :data:`_PATHS_KEPT`, past which a pointer is made each time)
_paths: dict[str, str] = {}
_PATHS_KEPT = 65536


def _path(key: str) -> str:
    """The JSON Pointer of a part key."""
    found = _paths.get(key)
    if found is None:
        found = _pointer(key)
        if len(_paths) < _PATHS_KEPT:
            _paths[key] = found
    return found


def _pointer(key: str) -> str:
    member, sep, index = key.partition(_ITEM)
    if member[0] == "\x1e":
        base = "/" + member[1:]
    else:
        base = "/view/" + _escape(member)
    return f"{base}/{index}" if sep else base


def _members(doc: Document) -> dict[str, Any]:
    """``{member key: bytes or [bytes, ...]}`` of a document, in order."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        member, sep, _index = key.partition(_ITEM)
        if sep:
            out[member].append(value)
        elif value is LIST or value == LIST:
            out[key] = []
        else:
            out[key] = value
    return out


def assemble(doc: Document) -> dict[str, Any]:
    """``{"status", "prompts", "view"}`` with ``orjson.Fragment`` leaves (encode with orjson)."""
    view: dict[str, Any] = {}
    out: dict[str, Any] = {"status": None, "prompts": [], "view": view}
    for key, value in _members(doc).items():
        leaf = [_Fragment(item) for item in value] if type(value) is list else _Fragment(value)
        if key == STATUS:
            out["status"] = leaf
        elif key == PROMPTS:
            out["prompts"] = leaf
        else:
            view[key] = leaf
    return out


def view_json(view: ViewParts) -> bytes:
    """The JSON encoding of the whole view object of ``view``."""
    return b"{" + b",".join([_dumps(key) + b":" + joined(part) for key, part in view]) + b"}"


def to_json(value: Any) -> Any:
    """Plain JSON values of a document (:data:`Document`), a patch, or anything holding Fragments."""
    if type(value) is dict and STATUS in value:
        return orjson.loads(orjson.dumps(assemble(value)))
    return orjson.loads(orjson.dumps(value))


def _whole(doc: Document, member: str) -> bytes:
    """The encoding of a whole member (a list member's items inside ``[...]``)."""
    value = doc[member]
    if value != LIST:
        return value
    items: list[bytes] = []
    keys = _item_keys.get(member, [])
    for key in keys:
        item = doc.get(key)
        if item is None:
            break
        items.append(item)
    return b"[" + b",".join(items) + b"]"


def diff(old: Document, new: Document) -> list[dict[str, Any]]:
    """The RFC 6902 patch (``add`` / ``remove`` / ``replace``, paths as JSON Pointers) turning the
    document ``old`` into ``new``; ``[]`` exactly when they are equal. Values are ``orjson.Fragment``.

    A member that changed between a list and anything else is replaced whole; list items that came
    are added in ascending order (each ``add`` appends), those that went removed from the highest."""
    ops: list[dict[str, Any]] = []
    if old is new or old == new:
        return ops
    removed: list[str] = []
    retyped: set[str] = set()
    for key, value in new.items():
        was = old.get(key)
        if was is value:
            continue
        member, sep, _index = key.partition(_ITEM)
        if sep and member in retyped:
            continue
        if was is None:
            if sep:
                ops.append({"op": "add", "path": _path(key), "value": _Fragment(value)})
            else:
                ops.append({"op": "add", "path": _path(key), "value": _Fragment(_whole(new, key))})
                if value == LIST:
                    retyped.add(key)
        elif was != value:
            if value == LIST or was == LIST:  # a list became something else, or the reverse
                ops.append({"op": "replace", "path": _path(key), "value": _Fragment(_whole(new, key))})
                retyped.add(key)
            else:
                ops.append({"op": "replace", "path": _path(key), "value": _Fragment(value)})
    for key in old:
        if key not in new:
            member, sep, _index = key.partition(_ITEM)
            if sep and member in retyped:
                continue
            if sep and member not in new:
                continue  # the whole member went: removed below
            removed.append(key)
    # list items from the highest index, then whole members (their items go with them)
    items = sorted((k for k in removed if _ITEM in k), key=lambda k: (k.partition(_ITEM)[0],
                                                                       -int(k.partition(_ITEM)[2])))
    for key in items:
        ops.append({"op": "remove", "path": _path(key)})
    for key in removed:
        if _ITEM not in key:
            ops.append({"op": "remove", "path": _path(key)})
    return ops


#: what :func:`revise` needs of a document besides its parts: its view members' keys in order, each
#: member's list length (-1: not a list) in the same order, and the prompts' count (-1: not a list)
Shape = tuple[tuple[str, ...], tuple[int, ...], int]


def shape_of(prompts: Part, view: ViewParts) -> Shape:
    """The :data:`Shape` of ``document(status, prompts, view)``."""
    return _reshaped(tuple([key for key, _part in view]), prompts, view)


def _reshaped(keys: tuple[str, ...], prompts: Part, view: ViewParts) -> Shape:
    """The :data:`Shape` of a document whose view members are ``keys`` (``view``'s own)."""
    return (keys, tuple([-1 if isinstance(part, bytes) else len(part) for _key, part in view]),
            -1 if isinstance(prompts, bytes) else len(prompts))


def revise(old: Document, old_shape: Shape, status: bytes, prompts: Part, view: ViewParts, patch: bool = True
           ) -> tuple[Document, list[dict[str, Any]] | None, Shape] | None:
    """``document(status, prompts, view)``, ``diff(old, it)`` and its :data:`Shape`, made from the
    parts that changed alone; ``old_shape`` is ``old``'s. ``old`` itself, ``[]`` and ``old_shape``
    when nothing changed; else the new document (a copy of ``old`` with the changed parts put in, or,
    when a list changed length, :func:`document`'s: the same keys in the same order either way) and
    the patch :func:`diff` gives, op for op: a ``replace`` per changed part and an ``add`` per list
    item that came, in document order, then a ``remove`` per list item that went. Each part is looked
    up in ``old`` and compared there (an identical object at once, other ``bytes`` in C); no document
    is built to be compared. ``patch`` False: no patch is made (None in its place; the document is
    still ``old`` itself exactly when nothing changed). None when the view's members changed (one
    came, went or moved, or changed between a list and anything else): then :func:`document` and
    :func:`diff` answer."""
    keys, lengths, prompt_count = old_shape
    count = len(view)
    if len(keys) != count:
        return None
    sets: list[tuple[str, str, bytes]] = []
    gone: list[str] = []
    if old[STATUS] != status:
        sets.append(("replace", STATUS, status))
    if not _changes(old, PROMPTS, prompt_count, prompts, sets, gone):
        return None
    for j in range(count):
        key, part = view[j]
        if key != keys[j] or not _changes(old, key, lengths[j], part, sets, gone):
            return None
    if not sets and not gone:
        return old, [] if patch else None, old_shape
    ops: list[dict[str, Any]] | None = None
    if patch:
        ops = [{"op": op, "path": _path(key), "value": _Fragment(value)} for op, key, value in sets]
    if gone or any(op == "add" for op, _key, _value in sets):
        doc = document(status, prompts, view)
        if ops is not None:
            gone.sort(key=_removal_order)
            ops += [{"op": "remove", "path": _path(key)} for key in gone]
        return doc, ops, _reshaped(keys, prompts, view)
    doc = old.copy()
    for _op, key, value in sets:
        doc[key] = value
    return doc, ops, old_shape


def _removal_order(key: str) -> tuple[str, int]:
    member, _sep, index = key.partition(_ITEM)
    return member, -int(index)


def _changes(old: Document, key: str, length: int, new: Part, sets: list[tuple[str, str, bytes]],
             gone: list[str]) -> bool:
    """Append to ``sets`` ``(op, part key, bytes)`` for each piece of ``new`` that differs from what
    ``old`` holds of member ``key`` (``length``: its list length there, -1 when not a list): the member
    whole, or its list items (``replace`` where both have the item, ``add`` where only ``new`` has it),
    and to ``gone`` the keys of the items only ``old`` has; False when one is a list and the other not."""
    if isinstance(new, bytes):
        if length != -1:
            return False
        was = old[key]
        if was is not new and was != new:
            sets.append(("replace", key, new))
        return True
    if length == -1:
        return False
    now = len(new)
    items = _items(key, max(length, now))
    for i in range(min(length, now)):
        item = new[i]
        was = old[items[i]]
        if item is not was and item != was:
            sets.append(("replace", items[i], item))
    for i in range(length, now):
        sets.append(("add", items[i], new[i]))
    for i in range(now, length):
        gone.append(items[i])
    return True
