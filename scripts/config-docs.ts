// `npm run config-docs` writes the configuration's table into docs/operations.md and writes .env.example, both from
// platform/runtime/config-schema.ts; `-- --check` fails when either is stale (CI).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../platform/runtime/config.js';
import { ENV_EXAMPLE, envExample, OPERATIONS_DOC, withConfigTable } from './lib/config-docs.js';

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');
const written = new Map([
  [OPERATIONS_DOC, await withConfigTable(read(OPERATIONS_DOC), path.join(REPO_ROOT, OPERATIONS_DOC))],
  [ENV_EXAMPLE, envExample()],
]);
if (process.argv.includes('--check')) {
  const stale = [...written].filter(([file, text]) => read(file) !== text).map(([file]) => file);
  if (stale.length > 0) {
    console.error(`${stale.join(' and ')} ${stale.length > 1 ? 'are' : 'is'} stale: run \`npm run config-docs\` and commit the result.`);
    process.exit(1);
  }
  console.log(`${[...written.keys()].join(' and ')} are up to date.`);
} else {
  for (const [file, text] of written) writeFileSync(path.join(REPO_ROOT, file), text);
  console.log(`Wrote ${[...written.keys()].join(' and ')}.`);
}
