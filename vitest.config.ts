import { defineConfig } from 'vitest/config';

export default defineConfig({
  // graphql has no `exports` map: Node loads its CommonJS build for every package (graphql-ws and
  // Apollo check `instanceof` against it), while Vite would give the code under test the .mjs
  // build. One graphql in tests, as in production.
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.e2e.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more workers only queue behind each other and the database.
    maxWorkers: 2,
  },
});
