/**
 * The fast-check seeds CI runs, so that `npm test` is deterministic. The fixed set runs for every
 * route and mutation; a seed that once found a bug replays where it found it (`scope`: a route as
 * `METHOD /path`, or a mutation's name) with the runs it was found with. `npm run fuzz` explores
 * fresh seeds; a failing seed it prints goes here with its fix.
 */
export interface FuzzSeed {
  seed: number;
  /** Where it replays; every route and mutation when absent. */
  scope?: string;
  /** Runs from the seed; the route's or mutation's own number when absent. */
  numRuns?: number;
  /** What it found (for a seed that found a bug). */
  found?: string;
  /**
   * The counterexample it found, replayed as a deterministic case in its scope: a value at a path
   * of the body (a route) or of the variables (a mutation). A seed draws other values once the
   * generators change; this keeps what it found.
   */
  counterexample?: { path: ReadonlyArray<string | number>; value: unknown };
}

const FUZZ_SEEDS: readonly FuzzSeed[] = [
  { seed: 20261125 },
  { seed: 424242 },
  {
    seed: 1893618297,
    scope: 'POST /prospect/data',
    numRuns: 8,
    found: '"valueOf" as preSegment answered 500 and stored a prospect (issue 22)',
    counterexample: { path: ['preSegment'], value: 'valueOf' },
  },
];

/** The seeds of one route or mutation: the fixed set and those found there. */
export function seedsOf(scope: string): FuzzSeed[] {
  return FUZZ_SEEDS.filter((s) => s.scope === undefined || s.scope === scope);
}
