// Writes schema/supergraph.graphql; with --check, fails when the committed file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { checkSupergraph, composeSupergraph, SUPERGRAPH_PATH } from '../schema/compose.js';

if (process.argv.includes('--check')) {
  const { stale, errors } = checkSupergraph(readFileSync(SUPERGRAPH_PATH, 'utf8'));
  if (errors.length > 0) {
    console.error(`Composition failed:\n${errors.join('\n')}`);
    process.exit(1);
  }
  if (stale) {
    console.error('schema/supergraph.graphql is stale: run `npm run compose` and commit the result.');
    process.exit(1);
  }
  console.log('schema/supergraph.graphql is up to date.');
} else {
  const composed = composeSupergraph();
  if (composed.supergraphSdl === null) {
    console.error(`Composition failed:\n${composed.errors.join('\n')}`);
    process.exit(1);
  }
  writeFileSync(SUPERGRAPH_PATH, `${composed.supergraphSdl.trim()}\n`);
  console.log(`Wrote ${SUPERGRAPH_PATH}`);
}
