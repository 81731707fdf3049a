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

describe('the walls between the services', () => {
  // Linted as if these files stood where the paths say, without type information (the rules read only the imports).
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
    return (result?.messages ?? []).filter((m) => m.ruleId === 'import-x/no-restricted-paths').length;
  };

  it('refuse an import of another service, and let a service import platform/ and its own files', async () => {
    expect(
      await lintAt(
        'subgraphs/user/src/wall-check.ts',
        "import { cardsCollection } from '../../cards/src/cards/datasource.js';\nexport const c = cardsCollection;\n",
      ),
    ).toBe(1);
    expect(
      await lintAt(
        'gateway/src/wall-check.ts',
        "import { ROUTES } from '../../rest-adapter/src/routes/index.js';\nexport const r = ROUTES;\n",
      ),
    ).toBe(1);
    expect(
      await lintAt('rest-adapter/src/wall-check.ts', "import { start } from '../../gateway/src/index.js';\nexport const s = start;\n"),
    ).toBe(1);
    expect(
      await lintAt('platform/wall-check.ts', "import { start } from '../subgraphs/cards/src/index.js';\nexport const s = start;\n"),
    ).toBe(1);
    expect(
      await lintAt(
        'subgraphs/user/src/wall-check.ts',
        "import { newId } from '../../../platform/security/secrets.js';\nimport { resolvers } from './resolvers/index.js';\nexport const n = [newId, resolvers];\n",
      ),
    ).toBe(0);
  }, 60_000);
});
