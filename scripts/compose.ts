// Writes schema/supergraph.graphql and schema/api-schema.graphql; with --check, fails when either committed file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { API_SCHEMA_PATH, checkSupergraph, composeSupergraph, SUPERGRAPH_PATH } from '../schema/compose.js';

if (process.argv.includes('--check')) {
  const { stale, errors } = checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'), undefined, readFileSync(API_SCHEMA_PATH, 'utf8'));
  if (errors.length > 0) {
    console.error(`Composition failed:\n${errors.join('\n')}`);
    process.exit(1);
  }
  if (stale) {
    console.error('schema/supergraph.graphql or schema/api-schema.graphql is stale: run `npm run compose` and commit the result.');
    process.exit(1);
  }
  console.log('schema/supergraph.graphql and schema/api-schema.graphql are up to date.');
} else {
  const composed = composeSupergraph();
  if (composed.supergraphSdl === null) {
    console.error(`Composition failed:\n${composed.errors.join('\n')}`);
    process.exit(1);
  }
  writeFileSync(SUPERGRAPH_PATH, `${composed.supergraphSdl.trim()}\n`);
  writeFileSync(API_SCHEMA_PATH, `${composed.apiSchemaSdl.trim()}\n`);
  console.log(`Wrote ${SUPERGRAPH_PATH} and ${API_SCHEMA_PATH}`);
}
