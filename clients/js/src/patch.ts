// RFC 6902 patches of `delta` messages, applied with fast-json-patch (docs/protocol.md, "Deltas,
// audiences and versions": operations add, remove and replace; JSON Pointer paths).
import jsonpatch from "fast-json-patch";
import { PatchError } from "./errors.js";

export type PatchOperation =
  | { op: "add"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "replace"; path: string; value: unknown };

const OPS = new Set(["add", "remove", "replace"]);
const INDEX = /^(0|[1-9][0-9]*)$/;
const hasOwn = (o: object, k: string) => Object.prototype.hasOwnProperty.call(o, k);

/**
 * What fast-json-patch is lenient about, checked against the document as it is before `op`: list
 * indices are canonical (RFC 6901: no leading zero; `-` only to append), and the member a
 * replace or remove names is the object's own (not one it inherits, such as `constructor`).
 */
function check(doc: unknown, op: { op: string; path: string }): void {
  if (op.path === "") return;
  if (!op.path.startsWith("/")) throw new PatchError(`bad JSON pointer ${JSON.stringify(op.path)}`);
  const tokens = op.path.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  let node: unknown = doc;
  tokens.forEach((token, i) => {
    const last = i === tokens.length - 1;
    if (Array.isArray(node)) {
      if (!(INDEX.test(token) || (last && op.op === "add" && token === "-"))) {
        throw new PatchError(`bad list index in ${JSON.stringify(op.path)}`);
      }
      node = node[Number(token)];
    } else if (node !== null && typeof node === "object") {
      if (!hasOwn(node, token) && !(last && op.op === "add")) {
        throw new PatchError(`nothing at ${JSON.stringify(op.path)}`);
      }
      node = (node as Record<string, unknown>)[token];
    } else {
      throw new PatchError(`${JSON.stringify(op.path)} goes through a scalar`);
    }
  });
}

/**
 * `doc` with `patch` applied. Returns the new document: a copy of `doc` unless `inPlace` (then
 * `doc` itself is changed, and may be half changed after an error: throw it away). Throws
 * {@link PatchError} when an operation does not apply (a path that is not there, a list index out
 * of range or not canonical, an op other than add/remove/replace, or a path through `__proto__`,
 * which fast-json-patch refuses to touch: the connection then asks for a full state, which
 * JSON.parse reads right); `doc` is then unchanged unless `inPlace`.
 */
export function applyPatch<T = unknown>(doc: T, patch: readonly unknown[], { inPlace = false } = {}): T {
  if (!Array.isArray(patch)) throw new PatchError("a patch is a list of operations");
  for (const op of patch) {
    if (op === null || typeof op !== "object" || Array.isArray(op)) throw new PatchError("an operation is an object");
    const { op: kind, path } = op as { op?: unknown; path?: unknown };
    if (typeof kind !== "string" || !OPS.has(kind)) throw new PatchError(`unsupported op ${JSON.stringify(kind)}`);
    if (typeof path !== "string") throw new PatchError("an operation needs a string 'path'");
    if (kind !== "remove" && !hasOwn(op, "value")) throw new PatchError(`${kind} needs a 'value'`);
    if (kind === "remove" && path === "") throw new PatchError("cannot remove the whole document");
  }
  let out = inPlace ? doc : (JSON.parse(JSON.stringify(doc)) as T);
  for (const op of patch as jsonpatch.Operation[]) {
    check(out, op);
    try {
      // validate: fast-json-patch checks the operation against the document before applying it
      out = jsonpatch.applyOperation(out, op, true, true, true).newDocument as T;
    } catch (err) {
      throw new PatchError(err instanceof Error ? err.message : String(err));
    }
  }
  return out;
}
