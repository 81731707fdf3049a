// Writes the REST contract and the built-in trusted documents as files: `npm run contract -- [directory]` (default ./contract).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../platform/runtime/config.js';
import { buildPostmanCollection } from '../rest-adapter/src/contract/collection.js';
import { buildOpenApiDocument } from '../rest-adapter/src/contract/openapi.js';
import { persistedQueryManifest } from '../platform/graphql/persisted-queries.js';
import { builtInTrustedDocuments } from '../rest-adapter/src/contract/trusted-documents.js';

const directory = path.resolve(process.argv[2] ?? 'contract');
const config = loadConfig(process.env);
mkdirSync(directory, { recursive: true });
writeFileSync(
  path.join(directory, 'openapi.json'),
  `${JSON.stringify(buildOpenApiDocument({ serverUrl: config.restPublicUrl, demoCredentials: config.seedDemo && config.nodeEnv !== 'production' }), null, 2)}\n`,
);
writeFileSync(
  path.join(directory, 'banking-graph.postman_collection.json'),
  `${JSON.stringify(buildPostmanCollection(config.restPublicUrl, { demoCredentials: config.seedDemo && config.nodeEnv !== 'production' }), null, 2)}\n`,
);
// The adapter's and the dashboard's GraphQL documents: the base of a TRUSTED_DOCUMENTS_FILE that adds other clients' operations.
writeFileSync(
  path.join(directory, 'trusted-documents.json'),
  `${JSON.stringify(persistedQueryManifest(builtInTrustedDocuments()), null, 2)}\n`,
);
console.log(`Wrote openapi.json, banking-graph.postman_collection.json and trusted-documents.json to ${directory}`);
