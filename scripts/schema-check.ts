// `npm run schema:check`: fails when a commit broke the API schema without saying why (a `Schema-Break: <why>` line in its message).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../platform/runtime/config.js';
import { API_SCHEMA_FILE, breakingChanges, schemaHistory } from './lib/schema-history.js';

const history = await schemaHistory(REPO_ROOT);
const unexplained = history.filter(({ breaking, reason }) => breaking.length > 0 && reason === null);
for (const { commit, subject, breaking, reason } of history) {
  if (breaking.length === 0) continue;
  console.log(
    `${commit.slice(0, 8)} ${subject}\n  ${reason === null ? 'breaks, without a reason' : `breaks, because: ${reason}`}\n${breaking.map((message) => `    - ${message}`).join('\n')}`,
  );
}

// Not yet committed: what the next commit will have to explain.
let committed: string | null = null;
try {
  committed = execFileSync('git', ['show', `HEAD:${API_SCHEMA_FILE}`], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
} catch {
  // Not in HEAD yet: the file is new.
}
const pending = committed === null ? [] : await breakingChanges(committed, readFileSync(path.join(REPO_ROOT, API_SCHEMA_FILE), 'utf8'));
if (pending.length > 0) {
  console.log(
    `Not committed yet, breaking: say why in the commit message with a "Schema-Break: <why>" line.\n${pending.map((message) => `    - ${message}`).join('\n')}`,
  );
}

if (unexplained.length > 0) {
  console.error(`${unexplained.length} commit(s) break the API schema without a "Schema-Break: <why>" line in their message.`);
  process.exit(1);
}
console.log(`The API schema's history (${history.length} commit(s)) has no unexplained breaking change.`);
