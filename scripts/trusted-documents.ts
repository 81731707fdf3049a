// `npm run trusted-documents` writes schema/trusted-documents.json, the REST adapter's and the dashboard's documents that the gateway trusts; `-- --check` fails when the file is stale (CI).
import { readFileSync, writeFileSync } from 'node:fs';
import { BUILT_IN_TRUSTED_DOCUMENTS } from '../gateway/src/trusted-documents.js';
import { persistedQueryManifest } from '../platform/graphql/persisted-queries.js';
import { builtInTrustedDocuments } from '../rest-adapter/src/contract/trusted-documents.js';

const text = `${JSON.stringify(persistedQueryManifest(builtInTrustedDocuments()), null, 2)}\n`;
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(BUILT_IN_TRUSTED_DOCUMENTS, 'utf8');
  } catch {
    // Missing: stale.
  }
  if (current !== text) {
    console.error('schema/trusted-documents.json is stale: run `npm run trusted-documents` and commit the result.');
    process.exit(1);
  }
  console.log('schema/trusted-documents.json is up to date.');
} else {
  writeFileSync(BUILT_IN_TRUSTED_DOCUMENTS, text);
  console.log('Wrote schema/trusted-documents.json.');
}
