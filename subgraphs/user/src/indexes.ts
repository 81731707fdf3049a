import type { Db } from 'mongodb';
import { authCollections } from './datasources/auth.js';
import { usersCollection } from './datasources/users.js';
import { alertSettingsCollection } from './alerts.js';
import { prospectCollections } from './prospects.js';

/** Creates the user subgraph's indexes; idempotent, run at every start. */
export async function ensureUserIndexes(db: Db): Promise<void> {
  const { credentials, sessions, devices, aggregatorUsers } = authCollections(db);
  await sessions.createIndex({ tokenHash: 1 }, { unique: true });
  await sessions.createIndex({ SvcUserId: 1 });
  await sessions.createIndex({ login: 1 });
  await credentials.createIndex({ SvcUserId: 1 });
  await devices.createIndex({ SvcUserId: 1 });
  await devices.createIndex({ deviceIdHash: 1 });
  await aggregatorUsers.createIndex({ svcAggregatorId: 1 });
  await usersCollection(db).createIndex({ referralCode: 1 });
  await alertSettingsCollection(db).createIndex({ SvcUserId: 1 });
  await prospectCollections(db).prospects.createIndex({ deviceTag: 1 });
}
