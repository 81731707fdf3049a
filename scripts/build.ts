// `npm run build`: the services as plain JavaScript in dist/, laid out as the repository is, so that a deployment runs them with node alone (no TypeScript loader).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../platform/runtime/config.js';

/** Where the build goes. */
export const DIST = path.join(REPO_ROOT, 'dist');

/**
 * What the modules read beside themselves at run time: schemas and trusted documents, operation documents, the
 * database patches, the package's own manifest, and the browser pages' sources (bundled on first
 * request by esbuild).
 */
const ASSETS: ReadonlyArray<{ from: string; only?: RegExp }> = [
  { from: 'package.json' },
  { from: 'schema', only: /\.(graphql|json)$/ },
  { from: 'rest-adapter/src/operations', only: /\.graphql$/ },
  { from: 'platform/mongo/ferretdb-patches' },
  { from: 'web' },
  // The pages' tsconfig extends the repository's.
  { from: 'tsconfig.json' },
];

/**
 * Compiles every service, script and benchmark into `into` (inside the repository, so that the
 * built modules find its node_modules) and copies their assets beside them.
 */
export function build(into = DIST): void {
  // A build run with node keeps its data (the embedded database, the written messages) in `.data` beside it: that stays.
  if (existsSync(into))
    for (const entry of readdirSync(into)) if (entry !== '.data') rmSync(path.join(into, entry), { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', into],
    { stdio: 'inherit' },
  );
  for (const { from, only } of ASSETS) {
    const source = path.join(REPO_ROOT, from);
    if (!existsSync(source)) throw new Error(`The build's asset ${from} is missing.`);
    cpSync(source, path.join(into, from), {
      recursive: true,
      filter: (file) => !file.includes(`${path.sep}node_modules`) && (only === undefined || !path.extname(file) || only.test(file)),
    });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(REPO_ROOT, 'scripts', 'build.ts')) {
  build();
  console.log(
    `Built into ${path.relative(process.cwd(), DIST) || '.'}: run a service with node dist/scripts/serve.js <service>, or all of them with node dist/scripts/start.js.`,
  );
}
