// Lint (`npm run lint`): typescript-eslint's strict, type-aware rules and rules of our own. Import circles, layers and the walls
// between the services are dependency-cruiser's (.dependency-cruiser.cjs), which counts type-only imports.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import graphqlPlugin from '@graphql-eslint/eslint-plugin';
import tseslint from 'typescript-eslint';
import tableLookup from './scripts/lint/table-lookup-rule.js';

const SUBGRAPHS = ['user', 'cards', 'payments', 'compliance'];

/** A literal that reads as one of our error codes: capitals and underscores, four or more (a currency code is three). */
const CODE = '/^[A-Z][A-Z_]{3,}$/';
const NAME_IT = 'Name the error code through ErrorCode (platform/contracts/errors.ts; add it there if it is new) or ApolloServerErrorCode.';
/** Where an error code written as a literal would hide: an object's code, a comparison with a code, a switch over one. */
const ERROR_CODE_LITERALS = [
  `Property[key.name='code'] > Literal[value=${CODE}]`,
  `Property[key.value='code'] > Literal[value=${CODE}]`,
  `Property[key.name='code'] > TemplateLiteral > TemplateElement[value.raw=${CODE}]`,
  `BinaryExpression:has(> Identifier[name='code']) > Literal[value=${CODE}]`,
  `BinaryExpression:has(> MemberExpression[property.name='code'][object.property.name='extensions']) > Literal[value=${CODE}]`,
  `SwitchStatement[discriminant.name='code'] > SwitchCase > Literal.test[value=${CODE}]`,
  `SwitchStatement[discriminant.property.name='code'] > SwitchCase > Literal.test[value=${CODE}]`,
].map((selector) => ({ selector, message: NAME_IT }));

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
  // Error codes come from the one ErrorCode (or Apollo's own ApolloServerErrorCode), never as string literals; tests pin the wire values.
  {
    files: ['**/*.ts'],
    ignores: ['test/**'],
    rules: {
      'no-restricted-syntax': ['error', ...ERROR_CODE_LITERALS],
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
      // Not every type has an id: entities do, value types (a page, a figure) need none.
      '@graphql-eslint/strict-id-in-types': 'off',
      // Every type definition has a description, but for the User stubs of cards, payments and compliance (a User without
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
  // The gateway's own Subscription type extends the composed graph, which it does not hold: the rules that read its text alone.
  {
    files: ['schema/gateway-subscriptions.graphql'],
    languageOptions: { parser: graphqlPlugin.parser },
    plugins: { '@graphql-eslint': graphqlPlugin },
    rules: {
      '@graphql-eslint/require-description': ['error', { types: true, FieldDefinition: true }],
      '@graphql-eslint/naming-convention': ['error', { types: 'PascalCase', FieldDefinition: 'camelCase' }],
      '@graphql-eslint/no-hashtag-description': 'error',
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
