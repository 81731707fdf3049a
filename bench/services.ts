// The services under benchmark, in their own process so the load generator does not share their
// event loop: the whole stack on the embedded database (or MONGODB_URI) with the demo data, and
// GraphQL Hive Gateway over the same supergraph and the same subgraphs, with the same
// authentication. Prints one JSON line with the addresses, then serves a control endpoint.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAuthenticator } from '../gateway/src/authenticate.js';
import { DEMO } from '../platform/demo.js';
import { createLogger } from '../platform/logger.js';
import { PRINCIPAL_HEADER, signPrincipal, type Principal } from '../platform/principal.js';
import { SUPERGRAPH_PATH } from '../schema/compose.js';
import { EVERY_PORT_FREE, loadConfig, openDatabase, seedDemo, startStack, type Stack } from '../scripts/stack.js';

/** The part of Hive Gateway's API this file uses. */
interface HiveRuntime {
  (req: http.IncomingMessage, res: http.ServerResponse): void;
  dispose(): Promise<void> | void;
}
type HivePlugin = {
  onContextBuilding(payload: { context: unknown; extendContext: (extension: { principal: Principal }) => void }): Promise<void>;
  onFetch(payload: { context: unknown; options: { headers?: unknown }; setOptions: (options: { headers?: unknown }) => void }): void;
};
// Loaded by a name TypeScript does not follow: its types reference the DOM library (through
// @whatwg-node/fetch), which would change Node's Buffer and Blob types for the whole project.
const HIVE_GATEWAY = '@graphql-hive/gateway';
const { createGatewayRuntime } = (await import(HIVE_GATEWAY)) as {
  createGatewayRuntime(options: { supergraph: string; logging: boolean; graphqlEndpoint: string; landingPage: boolean; plugins: () => HivePlugin[] }): HiveRuntime;
};

/** The ports the committed supergraph names, by subgraph. */
const SUPERGRAPH_PORTS = { user: 4001, cards: 4002, payments: 4003, compliance: 4004 } as const;

/** The configuration with the subgraphs' actual addresses (the stack took free ports). */
function servingConfig(stack: Stack) {
  const subgraphUrls = Object.fromEntries(Object.entries(stack.subgraphs).map(([name, service]) => [name, `${service.url}/graphql`])) as Stack['config']['subgraphUrls'];
  return { ...stack.config, subgraphUrls };
}

/** Hive Gateway over the stack's subgraphs, authenticating each request as our gateway does and forwarding the same signed principal. */
async function startHiveGateway(stack: Stack) {
  let supergraph = readFileSync(SUPERGRAPH_PATH, 'utf8');
  for (const [name, port] of Object.entries(SUPERGRAPH_PORTS)) {
    supergraph = supergraph.replace(`http://127.0.0.1:${port}/graphql`, `${stack.subgraphs[name as keyof typeof SUPERGRAPH_PORTS].url}/graphql`);
  }
  const authenticate = createAuthenticator(servingConfig(stack));
  const secret = stack.config.internalSecret;
  const runtime = createGatewayRuntime({
    supergraph,
    logging: false,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    plugins: () => [
      {
        onContextBuilding: async ({ context, extendContext }) => {
          const request = (context as { request: Request }).request;
          extendContext({ principal: await authenticate(Object.fromEntries(request.headers), 'hive') });
        },
        onFetch: ({ context, options, setOptions }) => {
          const principal = (context as { principal?: Principal } | undefined)?.principal;
          if (principal) setOptions({ ...options, headers: { ...(options.headers as Record<string, string> | undefined), [PRINCIPAL_HEADER]: signPrincipal(principal, secret) } });
        },
      },
    ],
  });
  const server = http.createServer(runtime);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, runtime };
}

/** Adds cards, each on its own account, to the demo user until it holds `count`: the N+1 scenario's list. */
async function growCards(stack: Stack, count: number): Promise<void> {
  type Stored = { _id: string; [member: string]: unknown };
  const cards = stack.mongo.db('cards').collection<Stored>('cards');
  const accounts = stack.mongo.db('payments').collection<Stored>('accounts');
  const card = await cards.findOne({ SvcCardId: DEMO.cardIds[0] });
  const account = await accounts.findOne({ SvcAccountId: card!.SvcAccountId });
  const have = await cards.countDocuments({ SvcUserId: DEMO.userId });
  for (let i = have; i < count; i += 1) {
    const SvcCardId = `bench_card_${i}`;
    const SvcAccountId = `bench_account_${i}`;
    await accounts.insertOne({ ...account, _id: SvcAccountId, SvcAccountId, name: `Bench ${i}` });
    await cards.insertOne({ ...card, _id: SvcCardId, SvcCardId, SvcAccountId, isMain: false, name: `Bench ${i}` });
  }
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'banking-bench-'));
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'development',
  DATA_DIR: dataDir,
  MONGODB_DB_PREFIX: `bench${Date.now().toString(36)}_`,
  ...EVERY_PORT_FREE,
  LOG_LEVEL: 'warn',
  GEOCODER_PRELOAD: 'false',
  // The load generator is one client at one address; the limits would measure themselves.
  RATE_LIMIT_PER_CREDENTIAL: '10000000',
  RATE_LIMIT_PER_ADDRESS: '10000000',
});
const logger = createLogger(config.logLevel);
const { mongo, embedded } = await openDatabase(config);
await seedDemo(mongo);
const stack = await startStack(config, logger, mongo);
const hive = await startHiveGateway(stack);

const authenticateDirect = createAuthenticator(servingConfig(stack));
const control = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://control');
  const answer = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  if (url.pathname === '/commands/reset') {
    mongo.commands.reset();
    return answer({ ok: true });
  }
  if (url.pathname === '/commands') {
    const databases = ['user', 'cards', 'payments', 'compliance'] as const;
    return answer(Object.fromEntries(databases.map((name) => [name, mongo.commands.snapshot(mongo.databaseName(name))])));
  }
  if (url.pathname === '/grow-cards') {
    growCards(stack, Number(url.searchParams.get('count') ?? 100)).then(() => answer({ ok: true }), (error: unknown) => res.writeHead(500).end(String(error)));
    return;
  }
  if (url.pathname === '/principal') {
    // A signed principal for calling a subgraph directly, as the gateway would forward it.
    authenticateDirect({ token: url.searchParams.get('token') ?? '' }, 'bench').then(
      (principal) => answer({ header: PRINCIPAL_HEADER, value: signPrincipal(principal, config.internalSecret) }),
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
    return;
  }
  res.writeHead(404).end();
});
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));

console.log(JSON.stringify({
  rest: stack.restAdapter.url,
  gateway: `${stack.gateway.url}/graphql`,
  hive: `${hive.url}/graphql`,
  subgraphs: Object.fromEntries(Object.entries(stack.subgraphs).map(([name, service]) => [name, `${service.url}/graphql`])),
  control: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
}));

const stop = async () => {
  control.close();
  hive.server.close();
  await hive.runtime.dispose();
  await stack.stop();
  await mongo.close();
  await embedded?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
