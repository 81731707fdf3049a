import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../platform/runtime/config.js';

const ROOT = REPO_ROOT;
const FIXTURE = path.join(ROOT, 'test', 'support', 'fixtures', 'lint', 'table-lookup.ts');

describe('the lint rule banking/no-table-lookup', () => {
  it('reports each lookup of a constant table by a key that may be any string, and nothing else', async () => {
    const eslint = new ESLint({ cwd: ROOT, ignore: false });
    const [result] = await eslint.lintFiles([FIXTURE]);
    expect(result?.messages.filter((m) => m.fatal)).toEqual([]);
    const reported = (result?.messages ?? []).filter((m) => m.ruleId === 'banking/no-table-lookup').map((m) => m.line);
    const marked = readFileSync(FIXTURE, 'utf8')
      .split('\n')
      .flatMap((line, i) => (line.endsWith('// reported') ? [i + 1] : []));
    expect(marked.length).toBeGreaterThan(0);
    expect(reported).toEqual(marked);
  }, 60_000);
});

describe('error codes through ErrorCode', () => {
  // Linted as if these files stood where the paths say, without type information (the rule reads only the syntax).
  const lintAt = async (file: string, code: string) => {
    const eslint = new ESLint({
      cwd: ROOT,
      overrideConfig: [
        { ...tseslint.configs.disableTypeChecked, files: ['**/*.ts'] },
        { files: ['**/*.ts'], rules: { 'banking/no-table-lookup': 'off' } },
      ],
    });
    const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
    expect(result?.messages.filter((m) => m.fatal)).toEqual([]);
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax').length;
  };

  it('refuses a code written as a string literal in service code, and lets tests pin the wire values', async () => {
    const literal = [
      "export const answer = { error: { code: 'NOT_FOUND', message: 'x' } };",
      "export const quoted = { 'code': 'FORBIDDEN' };",
      'export const templated = { code: `CONFLICT` };',
      "export const is = (e: { extensions: { code: unknown } }) => e.extensions.code === 'CONFLICT';",
      "export const local = (code: unknown) => code !== 'RATE_LIMITED';",
      "export function status(code: string): number {\n  switch (code) {\n    case 'NOT_FOUND':\n      return 404;\n    default:\n      return 400;\n  }\n}",
      '',
    ].join('\n');
    expect(await lintAt('rest-adapter/src/code-check.ts', literal)).toBe(6);
    expect(await lintAt('test/rest-adapter/code-check.test.ts', literal)).toBe(0);
    const named = [
      "import { ErrorCode } from '../../platform/contracts/errors.js';",
      "export const answer = { error: { code: ErrorCode.NOT_FOUND, message: 'x' }, currency: { code: 'USD' } };",
      "export const dropped = (error: { code?: string }) => error.code === 'ECONNRESET';",
      '',
    ].join('\n');
    expect(await lintAt('rest-adapter/src/code-check.ts', named)).toBe(0);
  }, 60_000);
});
