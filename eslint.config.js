// Lint (`npm run lint`): typescript-eslint's strict, type-aware rules, and one rule of our own.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import tableLookup from './scripts/lint/table-lookup-rule.js';

export default defineConfig(
  // The lint rule's fixture breaks the rule on purpose (test/lint.test.ts lints it).
  { ignores: ['node_modules/', '**/__generated__/', '.data/', 'dist/', 'test/fixtures/lint/'] },
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
  // The few JavaScript files (this one, the lint rule) have no types to check.
  { files: ['**/*.js'], extends: [tseslint.configs.disableTypeChecked], rules: { 'banking/no-table-lookup': 'off' } },
);
