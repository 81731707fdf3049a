// The database and demo data of a benchmark that runs every service in its own process: the
// embedded FerretDB in a folder of its own (or MONGODB_URI), databases under a prefix of the run,
// the demo user's session token, and everything removed afterwards.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEMO } from '../platform/domain/demo.js';
import { startEmbeddedMongo } from '../platform/mongo/ferretdb.js';
import { connectMongo, type Mongo } from '../platform/mongo/mongo.js';
import { loadConfig, type Config } from '../platform/runtime/config.js';
import { createLogger } from '../platform/runtime/logger.js';
import { backgroundAuditTrail } from '../platform/messaging/audit.js';
import { EVERY_PORT_FREE, seedDemo } from '../scripts/stack.js';
import { announceThrough, Sessions } from '../subgraphs/user/src/auth/sessions.js';
import { authCollections } from '../subgraphs/user/src/auth/datasource.js';
import { usersCollection } from '../subgraphs/user/src/profile/datasource.js';

/** What a benchmark gets: the configuration (every port free), the seeded database, and the demo user's token. */
export interface OneProcessBench {
  config: Config;
  mongo: Mongo;
  /** A session token of the demo user (internet channel, one hour), issued as the user subgraph issues them. */
  demoToken: () => Promise<string>;
}

/**
 * Runs `bench` over a fresh, seeded database named `<name>_<pid>_…`, with `env` on top of the
 * defaults (test mode, quiet logs, no geocoder preload, free ports), and removes it all afterwards.
 */
export async function withOneProcessBench(
  name: string,
  env: Record<string, string>,
  bench: (context: OneProcessBench) => Promise<void>,
): Promise<void> {
  const dataDir = process.env.MONGODB_URI ? null : await mkdtemp(path.join(tmpdir(), `bench-${name}-`));
  const embedded = dataDir ? await startEmbeddedMongo({ dataDir, ferretdbBin: process.env.FERRETDB_BIN }) : null;
  const config = loadConfig({
    NODE_ENV: 'test',
    MONGODB_URI: process.env.MONGODB_URI ?? embedded!.uri,
    MONGODB_DB_PREFIX: `bench${name}_${process.pid}_`,
    LOG_LEVEL: 'error',
    GEOCODER_PRELOAD: 'false',
    ...EVERY_PORT_FREE,
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...env,
  });
  const mongo = await connectMongo(config.mongodbUri!, config.dbPrefix);
  try {
    await seedDemo(mongo);
    const user = mongo.db('user');
    const sessions = new Sessions(
      authCollections(user).sessions,
      usersCollection(user),
      backgroundAuditTrail(user, createLogger('error'), { kind: 'service', service: 'bench' }),
      announceThrough(user),
    );
    await bench({
      config,
      mongo,
      demoToken: async () => (await sessions.issue({ kind: 'user', SvcUserId: DEMO.userId, channel: 'internet' }, 3600)).token,
    });
  } finally {
    for (const database of ['user', 'cards', 'payments', 'compliance'] as const) await mongo.db(database).dropDatabase();
    await mongo.close();
    await embedded?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}
