// Lint (`npm run lint`): typescript-eslint's strict, type-aware rules, one rule of our own, and the walls between the services.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import tableLookup from './scripts/lint/table-lookup-rule.js';

const SUBGRAPHS = ['user', 'cards', 'payments', 'compliance'];

/** The walls between the services, as import-x zones: no file under `target` imports one under `from`. */
const WALLS = [
  ...SUBGRAPHS.map((name) => ({
    target: `./subgraphs/${name}`,
    from: [...SUBGRAPHS.filter((other) => other !== name).map((other) => `./subgraphs/${other}`), './gateway', './rest-adapter'],
    message: 'A subgraph imports no other service: shared code goes in a platform/ kit, other services are reached through the graph.',
  })),
  { target: './gateway', from: ['./subgraphs', './rest-adapter'], message: 'The gateway imports no subgraph and not the REST adapter.' },
  { target: './rest-adapter', from: ['./subgraphs', './gateway'], message: 'The REST adapter reaches the services through GraphQL operations, not their code.' },
  { target: './platform', from: ['./subgraphs', './gateway', './rest-adapter'], message: 'platform/ holds shared kits and imports no service.' },
];

export default defineConfig(
  // The lint rule's fixture breaks the rule on purpose (test/platform/lint.test.ts lints it).
  { ignores: ['node_modules/', '**/__generated__/', '.data/', 'dist/', 'test/support/fixtures/lint/'] },
  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { banking: { rules: { 'no-table-lookup': tableLookup } } },
    rules: {
      'banking/no-table-lookup': 'error',
      // With noUncheckedIndexedAccess, `!` after an index the code has just checked is the idiom.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Async methods implement promise-returning interfaces (Apollo plugins, stores with a Redis twin).
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // `const { secret: _secret, ...shown } = record` leaves a member out by name.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
    },
  },
  // No import circles (of imports that remain at run time: a type-only import is erased), and the walls between the services; imports resolve as TypeScript resolves them.
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
      // no-cycle follows each import into the module it names: the TypeScript parser reads those too.
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/extensions': ['.ts', '.tsx', '.js'],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: WALLS }],
    },
  },
  // The few JavaScript files (this one, the lint rule) have no types to check.
  { files: ['**/*.js'], extends: [tseslint.configs.disableTypeChecked], rules: { 'banking/no-table-lookup': 'off' } },
);
