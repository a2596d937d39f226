// Gemini CLI's own memory loader, run on a fixture: what it loads at session start and what
// it loads just in time when a tool touches a file. Prints one JSON line.
// Usage: node gemini_oracle.mjs CORE_PACKAGE_DIR WORKING_FOLDER TOUCHED_FILE [NAME...]
// CORE_PACKAGE_DIR is an unpacked @google/gemini-cli-core with its dependencies installed.
// The names are what the CLI's settings loader hands to setGeminiMdFilename from
// context.fileName in .gemini/settings.json (none: the default, GEMINI.md).
import { pathToFileURL } from 'node:url';
import * as path from 'node:path';

const [core, cwd, touched, ...names] = process.argv.slice(2);
const load = (file) => import(pathToFileURL(path.join(core, 'dist', 'src', file)).href);
const memory = await load('utils/memoryDiscovery.js');
const tool = await load('tools/memoryTool.js');
if (names.length > 0) {
  tool.setGeminiMdFilename(names.length === 1 ? names[0] : names);
}
const atStart = await memory.getEnvironmentMemoryPaths([cwd]);
const read = await memory.readGeminiMdFiles(atStart, 'tree');
const jit = await memory.loadJitSubdirectoryMemory(touched, [cwd], new Set(atStart));
const version = (await import(pathToFileURL(path.join(core, 'package.json')).href, {
  with: { type: 'json' },
})).default.version;
process.stdout.write(
  JSON.stringify({
    version,
    at_start: read.map((item) => ({ path: item.filePath, content: item.content })),
    just_in_time: jit.files.map((item) => ({ path: item.path, content: item.content })),
  }) + '\n',
);
