// RFC 6902 JSON Patch application: a port of app/delta.py's apply_patch (docs/protocol.md, "Deltas,
// audiences and versions"). Operations add, remove and replace; paths are JSON Pointers (RFC 6901:
// "~1" is "/", "~0" is "~"); a "-" list index appends; the path "" is the whole document.
// Proven against the Python code on generated cases by tests/client/test_patch_js.py (run in node).
// No browser globals here, so node can load this file as it is.

/** A patch that does not apply to the document (the client then asks for a full state). */
export class PatchError extends Error {
  constructor(message) {
    super(message);
    this.name = "PatchError";
  }
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
// a JSON copy: own keys only (an own "__proto__" key stays a key), like the server's JSON
const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

function setKey(obj, key, value) {
  // a plain `obj[key] = value` with key "__proto__" would change the prototype, not add a key
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

const unescape = (token) => token.replace(/~1/g, "/").replace(/~0/g, "~");

function index(token, highest, path) {
  if (!/^[0-9]+$/.test(token) || (token !== "0" && token.startsWith("0"))) {
    throw new PatchError(`bad list index in ${JSON.stringify(path)}`);
  }
  const i = Number(token);
  if (i > highest) throw new PatchError(`list index out of range in ${JSON.stringify(path)}`);
  return i;
}

function child(node, token, path) {
  if (isObject(node)) {
    if (!hasOwn(node, token)) throw new PatchError(`no ${JSON.stringify(token)} on the way to ${JSON.stringify(path)}`);
    return node[token];
  }
  if (Array.isArray(node)) return node[index(token, node.length - 1, path)];
  throw new PatchError(`${JSON.stringify(path)} goes through a scalar`);
}

function parent(doc, path) {
  if (!path.startsWith("/")) throw new PatchError(`bad JSON pointer ${JSON.stringify(path)}`);
  const tokens = path.slice(1).split("/").map(unescape);
  let node = doc;
  for (const token of tokens.slice(0, -1)) node = child(node, token, path);
  return [node, tokens[tokens.length - 1]];
}

/**
 * `doc` with `patch` (an array of {op, path[, value]}) applied. Returns the new document: a copy of
 * `doc` unless `inPlace` (then `doc` itself is changed, and may be half changed after an error).
 * Throws PatchError if an operation does not apply; then `doc` is unchanged unless `inPlace`.
 */
export function applyPatch(doc, patch, { inPlace = false } = {}) {
  if (!Array.isArray(patch)) throw new PatchError("a patch is a list of operations");
  let out = inPlace ? doc : clone(doc);
  for (const op of patch) {
    if (!isObject(op)) throw new PatchError("an operation is an object");
    const kind = op.op;
    const path = op.path;
    if (typeof path !== "string") throw new PatchError("an operation needs a string 'path'");
    if ((kind === "add" || kind === "replace") && !hasOwn(op, "value")) throw new PatchError(`${kind} needs a 'value'`);
    if (path === "") {
      if (kind === "add" || kind === "replace") {
        out = clone(op.value);
        continue;
      }
      throw new PatchError(`cannot ${kind} the whole document`);
    }
    const [node, key] = parent(out, path);
    const value = clone(op.value);
    if (isObject(node)) {
      if (kind === "add") {
        setKey(node, key, value);
      } else if (kind === "replace" || kind === "remove") {
        if (!hasOwn(node, key)) throw new PatchError(`nothing at ${JSON.stringify(path)} to ${kind}`);
        if (kind === "replace") setKey(node, key, value);
        else delete node[key];
      } else {
        throw new PatchError(`unsupported op ${JSON.stringify(kind)}`);
      }
    } else if (Array.isArray(node)) {
      if (kind === "add") {
        if (key === "-") node.push(value);
        else node.splice(index(key, node.length, path), 0, value);
      } else if (kind === "replace") {
        node[index(key, node.length - 1, path)] = value;
      } else if (kind === "remove") {
        node.splice(index(key, node.length - 1, path), 1);
      } else {
        throw new PatchError(`unsupported op ${JSON.stringify(kind)}`);
      }
    } else {
      throw new PatchError(`${JSON.stringify(path)} goes through a scalar`);
    }
  }
  return out;
}
