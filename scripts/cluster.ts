// `npm run start:cluster`: replicas on one machine. Each subgraph, two gateways and two REST adapters as processes of their own, behind HAProxy,
// each started again should it die.
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../platform/runtime/config.js';
import { startEmbeddedMongo, type EmbeddedMongo } from '../platform/mongo/ferretdb.js';
import { connectMongo } from '../platform/mongo/mongo.js';
import { withoutCredentials } from '../platform/security/masking.js';
import { MEMBERS, startCluster, type Cluster } from './lib/cluster.js';
import { DEFAULT_BACKOFF } from './lib/supervisor.js';
import { seedDemo } from './stack.js';

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

async function main(): Promise<void> {
  // Read as every member will read it, to fail early on a bad value and to know the database and the drain.
  const config = loadConfig({ ...process.env, REDIS_URL: process.env.REDIS_URL || DEFAULT_REDIS_URL });
  let embedded: EmbeddedMongo | null = null;
  let cluster: Cluster | null = null;
  // An object, not a variable: a signal may set it while the cluster starts.
  const state = { stopping: false };
  const stop = async (signal: string) => {
    // A second signal does not wait for the drain: every process ends at once (the cluster kills its processes on exit).
    if (state.stopping) process.exit(signal === 'SIGINT' ? 130 : 143);
    state.stopping = true;
    process.stderr.write(`\n${signal}: stopping the cluster (each process drains for ${config.drainSeconds} s)...\n`);
    await cluster?.close(config.drainSeconds * 1000 + 10_000);
    await embedded?.stop();
    process.stderr.write('Cluster stopped.\n');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // The processes are in groups of their own (a closed terminal's hang-up reaches only this one): stop them.
  process.on('SIGHUP', () => void stop('SIGHUP'));

  if (!config.mongodbUri) {
    embedded = await startEmbeddedMongo({ dataDir: config.dataDir, ferretdbBin: config.ferretdbBin });
    if (config.seedDemo) {
      const mongo = await connectMongo(embedded.uri, config.dbPrefix);
      try {
        await seedDemo(mongo);
      } finally {
        await mongo.close();
      }
    }
  }
  const mongodbUri = config.mongodbUri ?? embedded!.uri;
  // Generated for this cluster when unset: shared by its processes, never by anything else.
  const internalSecret = process.env.INTERNAL_SECRET || randomBytes(32).toString('hex');
  const jwtSecret = process.env.JWT_SECRET || randomBytes(32).toString('hex');
  const width = Math.max(...MEMBERS.map((member) => member.length), 'haproxy'.length, 'cluster'.length);
  const database = embedded ? `embedded FerretDB at ${embedded.uri}, data in ${config.dataDir}` : withoutCredentials(mongodbUri);
  const started = performance.now();
  process.stderr.write(`Starting ${MEMBERS.join(', ')} and HAProxy, on ${database}...\n`);
  try {
    cluster = await startCluster({
      env: { MONGODB_URI: mongodbUri, REDIS_URL: config.redisUrl, INTERNAL_SECRET: internalSecret, JWT_SECRET: jwtSecret },
      detached: true,
      restPort: config.ports.rest,
      graphqlPort: config.ports.gateway,
      // Each line as docker compose shows it: who wrote it, then the line (the services' JSON log lines, and the
      // cluster's own: each member that died and its restart).
      onLine: (who, line) => void process.stdout.write(`${who.padEnd(width)} | ${line}\n`),
    });
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
  if (state.stopping) return;
  process.stderr.write(
    [
      '',
      `Banking graph cluster is up (${Math.round((performance.now() - started) / 1000)} s): two gateways and two REST adapters behind HAProxy.`,
      `  REST adapters (both specs' {base_url}) ${cluster.restUrl}`,
      `  GraphQL gateways (HTTP, graphql-ws)    ${cluster.graphqlUrl}`,
      ...MEMBERS.map((member) => `  ${member.padEnd(38)}${cluster.urls[member]}`),
      `  database                              ${database}`,
      `  Redis                                 ${withoutCredentials(config.redisUrl ?? DEFAULT_REDIS_URL)}`,
      '',
      `A process that dies is started again, ${DEFAULT_BACKOFF.initialMs / 1000} s later, doubling to ${DEFAULT_BACKOFF.maxMs / 1000} s while it keeps dying; "cluster" lines log it.`,
      'SIGTERM or Ctrl-C stops every process.',
      '',
    ].join('\n'),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
});
