import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cruise, type ICruiseResult, type IConfiguration } from 'dependency-cruiser';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../platform/runtime/config.js';

const RULES = createRequire(import.meta.url)(path.join(REPO_ROOT, '.dependency-cruiser.cjs')) as IConfiguration;

/** Cruises `files` (path → source) laid out in a scratch tree, with the repository's rules; returns the rules broken. */
async function brokenRules(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(path.join(tmpdir(), 'layers-'));
  scratch.push(dir);
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: false } }),
  );
  for (const [file, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), source);
  }
  const options = {
    ...RULES.options,
    ruleSet: { forbidden: RULES.forbidden ?? [] },
    baseDir: dir,
    tsConfig: { fileName: path.join(dir, 'tsconfig.json') },
    validate: true,
  };
  const { output } = await cruise(
    Object.keys(files)
      .map((file) => file.split('/')[0]!)
      .filter((top, i, all) => all.indexOf(top) === i),
    options,
  );
  return (output as ICruiseResult).summary.violations.map((violation) => violation.rule.name).sort();
}
const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe('the dependency rules (.dependency-cruiser.cjs)', () => {
  it('pass on the repository', async () => {
    const { output } = await cruise(['platform', 'subgraphs', 'gateway', 'rest-adapter', 'scripts', 'bench', 'test', 'web', 'codegen.ts'], {
      ...RULES.options,
      ruleSet: { forbidden: RULES.forbidden ?? [] },
      baseDir: REPO_ROOT,
      tsConfig: { fileName: path.join(REPO_ROOT, 'tsconfig.json') },
      validate: true,
    });
    const result = output as ICruiseResult;
    expect(result.summary.totalCruised).toBeGreaterThan(300);
    expect(result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).toEqual([]);
  }, 60_000);

  it('refuse a circle made of type-only imports', async () => {
    expect(
      await brokenRules({
        'platform/http/a.ts': "import type { B } from './b.js';\nexport type A = B | 1;\n",
        'platform/http/b.ts': "import type { A } from './a.js';\nexport type B = A | 2;\n",
      }),
    ).toEqual(['no-circular']);
  }, 60_000);

  it('keep each layer importing only downwards', async () => {
    const upwards = {
      'platform/contracts/events.ts': "import { log } from '../runtime/logger.js';\nexport const e = log;\n",
      'platform/runtime/logger.ts': "import { start } from '../graphql/subgraph.js';\nexport const log = start;\n",
      'platform/graphql/subgraph.ts': 'export const start = 1;\n',
      'platform/domain/restrictions.ts': "import { start } from '../graphql/subgraph.js';\nexport const r = start;\n",
      'platform/money/money.ts': "import { r } from '../domain/restrictions.js';\nexport const m = r;\n",
      'platform/security/jwt.ts': "import { x } from '../../gateway/src/index.js';\nexport const j = x;\n",
      'gateway/src/index.ts': 'export const x = 1;\n',
      'platform/helpers/dates.ts': "import { m } from '../money/money.js';\nexport const d = m;\n",
      'platform/telemetry/metrics.ts': "import { c } from '../../schema/compose.js';\nexport const t = c;\n",
      'schema/compose.ts': 'export const c = 1;\n',
    };
    expect(await brokenRules(upwards)).toEqual([
      'contracts-stand-alone',
      'domain-below-glue',
      'kits-below-domain-and-glue',
      'kits-below-domain-and-glue',
      'platform-below-everything',
      'platform-below-everything',
      'platform-in-a-layer',
    ]);
    const downwards = {
      'platform/graphql/subgraph.ts': "import { r } from '../domain/restrictions.js';\nexport const start = r;\n",
      'platform/domain/restrictions.ts': "import { m } from '../money/money.js';\nexport const r = m;\n",
      'platform/money/money.ts': "import type { E } from '../contracts/events.js';\nexport const m: E = 1;\n",
      'platform/contracts/events.ts': 'export type E = 1;\n',
    };
    expect(await brokenRules(downwards)).toEqual([]);
  }, 60_000);

  it('keep the services apart, and the generated resolver types for resolvers', async () => {
    expect(
      await brokenRules({
        'subgraphs/user/src/login.ts': "import type { Card } from '../../cards/src/datasource.js';\nexport type C = Card;\n",
        'subgraphs/cards/src/datasource.ts': "import type { R } from './__generated__/resolvers-types.js';\nexport type Card = R;\n",
        'subgraphs/cards/src/__generated__/resolvers-types.ts': 'export type R = 1;\n',
        'subgraphs/cards/src/resolvers/Card.ts': "import type { R } from '../__generated__/resolvers-types.js';\nexport type C = R;\n",
        'gateway/src/index.ts': "import { x } from '../../rest-adapter/src/index.js';\nexport const g = x;\n",
        'rest-adapter/src/routes.ts': "import type { G } from '../../gateway/src/types.js';\nexport type R = G;\n",
        'gateway/src/types.ts': 'export type G = 1;\n',
        'rest-adapter/src/index.ts': "import { y } from './own.js';\nexport const x = y;\n",
        'rest-adapter/src/own.ts': 'export const y = 1;\n',
      }),
    ).toEqual(['resolver-types-for-resolvers', 'services-apart', 'services-apart', 'services-apart']);
  }, 60_000);
});
