/**
 * `npm run fuzz [-- --seeds N]`: the fuzzing of every REST route and mutation (test/fuzz/)
 * with N fresh random seeds each (default 5) instead of the committed ones, for exploring outside
 * CI. Each failing seed is printed; add it to test/support/fuzz/seeds.ts with its fix.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `--seeds N` or `--seeds=N`; anything else is a usage error. */
function seedsAsked(args: readonly string[]): number {
  if (args.length === 0) return 5;
  if (args.length === 1 && args[0]?.startsWith('--seeds=')) return Number(args[0].slice('--seeds='.length));
  if (args.length === 2 && args[0] === '--seeds') return Number(args[1]);
  return NaN;
}

const seeds = seedsAsked(process.argv.slice(2));
if (!Number.isInteger(seeds) || seeds < 1 || seeds > 1000) {
  console.error('usage: npm run fuzz [-- --seeds N]   (N from 1 to 1000 fresh seeds per route and mutation)');
  process.exit(2);
}
const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
console.log(`fuzz: ${seeds} fresh seed(s) per route and mutation; failing seeds are printed as "fuzz: failing seed {...}"`);
const run = spawnSync('npx', ['vitest', 'run', 'test/fuzz/'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, FUZZ_FRESH_SEEDS: String(seeds) },
});
process.exit(run.status ?? 1);
