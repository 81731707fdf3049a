import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedMongo } from '../../platform/mongo/ferretdb.js';

declare module 'vitest' {
  export interface ProvidedContext {
    mongodbUri: string;
  }
}

/**
 * One database server for the whole run: `MONGODB_URI` where it is set, otherwise an embedded
 * FerretDB on a free port with its data in a temporary folder. Each test file uses its own
 * database prefix, so files never see each other's data.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.MONGODB_URI) {
    project.provide('mongodbUri', process.env.MONGODB_URI);
    return async () => {};
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'banking-graph-test-'));
  const embedded = await startEmbeddedMongo({ dataDir, ferretdbBin: process.env.FERRETDB_BIN });
  project.provide('mongodbUri', embedded.uri);
  return async () => {
    await embedded.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
