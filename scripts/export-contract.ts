// Writes the REST contract as files: `npm run contract -- [directory]` (default ./contract).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../platform/config.js';
import { buildPostmanCollection } from '../rest-adapter/src/contract/collection.js';
import { buildOpenApiDocument } from '../rest-adapter/src/contract/openapi.js';

const directory = path.resolve(process.argv[2] ?? 'contract');
const config = loadConfig(process.env);
mkdirSync(directory, { recursive: true });
writeFileSync(path.join(directory, 'openapi.json'), `${JSON.stringify(buildOpenApiDocument({ serverUrl: config.restPublicUrl, demoCredentials: config.seedDemo && config.nodeEnv !== 'production' }), null, 2)}\n`);
writeFileSync(path.join(directory, 'banking-graph.postman_collection.json'), `${JSON.stringify(buildPostmanCollection(config.restPublicUrl, { demoCredentials: config.seedDemo && config.nodeEnv !== 'production' }), null, 2)}\n`);
console.log(`Wrote openapi.json and banking-graph.postman_collection.json to ${directory}`);
