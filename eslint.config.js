// Lint (`npm run lint`): typescript-eslint's strict, type-aware rules, one rule of our own, and the walls between the services.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import graphqlPlugin from '@graphql-eslint/eslint-plugin';
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
  {
    target: './rest-adapter',
    from: ['./subgraphs', './gateway'],
    message: 'The REST adapter reaches the services through GraphQL operations, not their code.',
  },
  {
    target: './platform',
    from: ['./subgraphs', './gateway', './rest-adapter'],
    message: 'platform/ holds shared kits and imports no service.',
  },
];

export default defineConfig(
  // The lint rule's fixture breaks the rule on purpose (test/platform/lint.test.ts lints it).
  { ignores: ['node_modules/', '**/__generated__/', '.data/', 'dist/', 'test/support/fixtures/lint/'] },
  { files: ['**/*.{ts,tsx,js}'], extends: [js.configs.recommended, tseslint.configs.strictTypeChecked] },
  {
    files: ['**/*.{ts,tsx,js}'],
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
  // The subgraph SDL, each file a schema of its own (graphql.config.json names the projects).
  {
    files: SUBGRAPHS.map((name) => `schema/${name}.graphql`),
    languageOptions: { parser: graphqlPlugin.parser },
    plugins: { '@graphql-eslint': graphqlPlugin },
    rules: {
      ...graphqlPlugin.configs['flat/schema-recommended'].rules,
      // The specs name fields and values (SvcUserId, available_balance, transactionId on Transaction): only type names are ours.
      '@graphql-eslint/naming-convention': ['error', { types: 'PascalCase', allowLeadingUnderscore: true }],
      '@graphql-eslint/no-typename-prefix': 'off',
      // The house style is "…" for one line and """…""" for more, which the rule cannot say.
      '@graphql-eslint/description-style': 'off',
      // Not yet: ids on every type are issue 26's next step.
      '@graphql-eslint/strict-id-in-types': 'off',
      // Every type definition has a description (issue 26), but for the User stubs of cards, payments and compliance (a User without
      // the user subgraph's `id`), which are commented (see below); fields are judged by hand: those whose name says it all go without.
      '@graphql-eslint/require-description': [
        'error',
        { types: true, ignoredSelectors: ['[type=ObjectTypeDefinition][name.value=User]:not(:has(FieldDefinition[name.value=id]))'] },
      ],
      // The User stubs in cards, payments and compliance are commented, not described: the user subgraph describes User.
      '@graphql-eslint/no-hashtag-description': 'off',
      // Federation entities are reached through _entities, which a subgraph's own schema does not show.
      '@graphql-eslint/no-unreachable-types': 'off',
      // Relay connections where a list is paged; other lists stay plain lists.
      '@graphql-eslint/relay-connection-types': 'error',
      // A node need not be refetchable through node(id:): refunds, return-rate reports and card webhook deliveries are paged, not entities.
      '@graphql-eslint/relay-edge-types': ['error', { listTypeCanWrapOnlyEdgeType: false, shouldImplementNode: false }],
      '@graphql-eslint/relay-arguments': ['error', { includeBoth: false }],
    },
  },
  // The subgraph that defines PageInfo: it must be Relay's.
  { files: ['schema/payments.graphql'], rules: { '@graphql-eslint/relay-page-info': 'error' } },
  // The operations the REST adapter and the dashboard send, against the gateway's API schema.
  { files: ['web/operations.ts'], processor: graphqlPlugin.processor },
  {
    files: ['rest-adapter/src/operations/*.graphql', 'web/operations.ts/*.graphql'],
    languageOptions: { parser: graphqlPlugin.parser },
    plugins: { '@graphql-eslint': graphqlPlugin },
    rules: {
      ...graphqlPlugin.configs['flat/operations-recommended'].rules,
      // Variables carry the specs' field names ($SvcUserId).
      '@graphql-eslint/naming-convention': 'off',
      // The adapter selects exactly what the specs answer (an `id` would appear in REST bodies), and
      // the dashboard keeps no normalized cache: `id` is for clients' caches, not required here.
      '@graphql-eslint/require-selections': 'off',
    },
  },
  // The end-user spec still documents the deprecated /condor/card/add, so the adapter serves it.
  { files: ['rest-adapter/src/operations/condor-card-add.graphql'], rules: { '@graphql-eslint/no-deprecated': 'off' } },
);
