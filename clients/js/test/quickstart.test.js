// docs/quickstart.md's JavaScript program, run as written (its server URL replaced by the test
// server's) from inside the package, so `@bannerfall/client` is this package: it plays a match to
// its end and prints the outcome.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { URL } from "./helpers.js";

const QUICKSTART = fileURLToPath(new globalThis.URL("../../../docs/quickstart.md", import.meta.url));
const PROGRAM = fileURLToPath(new globalThis.URL("./_quickstart.mjs", import.meta.url));

test("the quick start's JavaScript plays a match to its end", async () => {
  const text = await readFile(QUICKSTART, "utf8");
  const block = /```js\n([\s\S]*?)```/.exec(text);
  assert.ok(block, "docs/quickstart.md has a js block");
  const code = block[1];
  assert.ok(code.split("\n").filter((l) => l.trim()).length < 30, "under 30 lines");
  assert.ok(code.includes("http://127.0.0.1:8000"));
  await writeFile(PROGRAM, code.replaceAll("http://127.0.0.1:8000", URL));
  try {
    const { stdout } = await new Promise((resolve, reject) => {
      execFile(process.execPath, [PROGRAM], { timeout: 120_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`${err.message}\n${stdout}\n${stderr}`));
        else resolve({ stdout, stderr });
      });
    });
    assert.match(stdout, /^finished \{/m);
    assert.match(stdout, /turn \d+: ended with \d+ s left, now version \d+/);
    assert.match(stdout, /^event \d+ turn_ended$/m);
  } finally {
    await rm(PROGRAM, { force: true });
  }
});
