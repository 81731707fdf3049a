import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'lint', 'table-lookup.ts');

describe('the lint rule banking/no-table-lookup', () => {
  it('reports each lookup of a constant table by a key that may be any string, and nothing else', async () => {
    const eslint = new ESLint({ cwd: ROOT, ignore: false });
    const [result] = await eslint.lintFiles([FIXTURE]);
    expect(result?.messages.filter((m) => m.fatal)).toEqual([]);
    const reported = (result?.messages ?? []).filter((m) => m.ruleId === 'banking/no-table-lookup').map((m) => m.line);
    const marked = readFileSync(FIXTURE, 'utf8').split('\n').flatMap((line, i) => (line.endsWith('// reported') ? [i + 1] : []));
    expect(marked.length).toBeGreaterThan(0);
    expect(reported).toEqual(marked);
  }, 60_000);
});
