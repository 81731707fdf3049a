import type { Db } from 'mongodb';
import { authCollections } from './datasources/auth.js';

/** Creates the user subgraph's indexes; idempotent, run at every start. */
export async function ensureUserIndexes(db: Db): Promise<void> {
  const { credentials, sessions, devices } = authCollections(db);
  await sessions.createIndex({ tokenHash: 1 }, { unique: true });
  await sessions.createIndex({ SvcUserId: 1 });
  await credentials.createIndex({ SvcUserId: 1 });
  await devices.createIndex({ SvcUserId: 1 });
}
