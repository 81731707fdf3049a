// `npm start`: every service on this machine, on the embedded database unless MONGODB_URI is set.
import { ConfigError, loadConfig } from '../platform/runtime/config.js';
import { createLogger } from '../platform/runtime/logger.js';
import { startObservability } from '../platform/telemetry/observe.js';
import type { Stack } from './stack.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const observability = await startObservability(config, 'banking-graph', logger);
  // The services load once tracing is registered: Apollo's gateway takes its tracer as it loads.
  const { openDatabase, seedDemo, startStack } = await import('./stack.js');
  if (config.internalSecretGenerated) {
    logger.warn(
      'INTERNAL_SECRET is unset: generated one for this process. Services run as separate processes need a shared INTERNAL_SECRET.',
    );
  }
  const { mongo, embedded } = await openDatabase(config);
  let stack: Stack;
  try {
    if (embedded && config.seedDemo) await seedDemo(mongo);
    stack = await startStack(config, logger, mongo);
  } catch (error) {
    // Leave no embedded database behind when a port is taken or a service fails to start.
    await mongo.close();
    await embedded?.stop();
    await observability.stop();
    throw error;
  }
  process.stdout.write(
    [
      '',
      'Banking graph is up:',
      `  REST adapter (both specs' {base_url}) ${stack.restAdapter.url}`,
      `  GraphQL gateway                       ${stack.gateway.url}/graphql`,
      ...Object.entries(stack.subgraphs).map(([name, service]) => `  ${`${name} subgraph`.padEnd(38)}${service.url}/graphql`),
      `  database                              ${embedded ? `embedded FerretDB, data in ${config.dataDir}` : 'MONGODB_URI'}`,
      `  metrics                               ${observability.metricsUrl ?? `/metrics on every service's port`}`,
      '',
      `Try: curl -s -X PUT localhost:${stack.restAdapter.port}/token -H "content-type: application/json" \\`,
      '       -d \'{"channel":"internet","userName":"demo.user","password":"Demo#Pass2026"}\'',
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = async (signal: string) => {
    // A second signal does not wait for the drain: it ends the process at once.
    if (stopping) process.exit(signal === 'SIGINT' ? 130 : 143);
    stopping = true;
    logger.info('shutting down', { signal, drainSeconds: config.drainSeconds });
    await stack.drain(config.drainSeconds * 1000);
    await stack.stop();
    logger.info('services stopped');
    await mongo.close();
    logger.info('database connection closed');
    await embedded?.stop();
    await observability.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : ((error as Error).stack ?? String(error))}\n`);
  process.exit(1);
});
