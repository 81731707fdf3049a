import { defineConfig } from 'vitest/config';

/** The cluster scenarios: eight processes, HAProxy and hundreds of clients, which need the machine to themselves. */
const CLUSTER = ['test/scenarios/topology.e2e.ts'];

export default defineConfig({
  // graphql has no `exports` map: Node loads its CommonJS build for every package (graphql-ws and
  // Apollo check `instanceof` against it), while Vite would give the code under test the .mjs
  // build. One graphql in tests, as in production.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more workers only queue behind each other and the database.
    maxWorkers: 2,
    // The cluster runs after every other file: beside another file's stack, a gateway starved of
    // CPU misses HAProxy's health checks and the rolling restart finds no gateway in rotation.
    projects: [
      {
        extends: true,
        test: { name: 'suite', include: ['test/**/*.test.ts', 'test/**/*.e2e.ts'], exclude: CLUSTER, sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'cluster', include: CLUSTER, sequence: { groupOrder: 1 } } },
    ],
  },
});
