// The services under benchmark, in two processes (the load generator runs in a third):
//   `services.ts stack`: every service of ours in one process, as `npm start` runs them (the four
//     subgraphs, the gateway and the REST adapter, calling each other in the process as IN_PROCESS_CALLS says, `all` by default), on the
//     embedded database (or MONGODB_URI) with the demo data, and a control endpoint (database
//     command counts, growing the card list, the demo aggregator's card webhook, a signed
//     principal for calling a subgraph directly);
//   `services.ts peer`: GraphQL Hive Gateway over the same supergraph and the stack's subgraphs,
//     with the same authentication, in a process of its own (a gateway of its kind runs apart
//     from its subgraphs).
// The suite passes both the same INTERNAL_SECRET and MONGODB_DB_PREFIX, and the peer the
// subgraphs' addresses. Each prints one JSON line with its addresses, then serves until SIGTERM.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAuthenticator } from '../gateway/src/authenticate.js';
import { SUBGRAPH_NAMES, type Config } from '../platform/config.js';
import { DEMO } from '../platform/demo.js';
import { createLogger } from '../platform/logger.js';
import type { Mongo } from '../platform/mongo.js';
import { PRINCIPAL_HEADER, signPrincipal, type Principal } from '../platform/principal.js';
import { SUPERGRAPH_PATH } from '../schema/compose.js';
import { webhookConfigsCollection } from '../subgraphs/cards/src/datasources/cards.js';
import { EVERY_PORT_FREE, loadConfig, openDatabase, seedDemo, startStack, subgraphUrlsOf } from '../scripts/stack.js';

/** What the stack tier prints. */
export interface StackAddresses {
  subgraphs: Config['subgraphUrls'];
  gateway: string;
  rest: string;
  control: string;
}

/** What the peer tier prints. */
export interface PeerAddresses {
  hive: string;
}

/** The part of Hive Gateway's API this file uses. */
interface HiveRuntime {
  (req: http.IncomingMessage, res: http.ServerResponse): void;
  dispose(): Promise<void> | void;
}
type HivePlugin = {
  onContextBuilding(payload: { context: unknown; extendContext: (extension: { principal: Principal }) => void }): Promise<void>;
  onFetch(payload: { context: unknown; options: { headers?: unknown }; setOptions: (options: { headers?: unknown }) => void }): void;
};

/** The ports the committed supergraph names, by subgraph. */
const SUPERGRAPH_PORTS = { user: 4001, cards: 4002, payments: 4003, compliance: 4004 } as const;

/** Hive Gateway over the subgraphs, authenticating each request as our gateway does and forwarding the same signed principal. */
async function startHiveGateway(config: Config) {
  // Loaded by a name TypeScript does not follow: its types reference the DOM library (through
  // @whatwg-node/fetch), which would change Node's Buffer and Blob types for the whole project.
  const HIVE_GATEWAY = '@graphql-hive/gateway';
  const { createGatewayRuntime } = (await import(HIVE_GATEWAY)) as {
    createGatewayRuntime: (options: { supergraph: string; logging: boolean; graphqlEndpoint: string; landingPage: boolean; plugins: () => HivePlugin[] }) => HiveRuntime;
  };
  let supergraph = readFileSync(SUPERGRAPH_PATH, 'utf8');
  for (const [name, port] of Object.entries(SUPERGRAPH_PORTS)) {
    supergraph = supergraph.replace(`http://127.0.0.1:${port}/graphql`, config.subgraphUrls[name as keyof typeof SUPERGRAPH_PORTS]);
  }
  const authenticate = createAuthenticator(config);
  const secret = config.internalSecret;
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
async function growCards(mongo: Mongo, count: number): Promise<void> {
  type Stored = { _id: string; [member: string]: unknown };
  const cards = mongo.db('cards').collection<Stored>('cards');
  const accounts = mongo.db('payments').collection<Stored>('accounts');
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

/** A process's CPU time so far in ms, from Linux's /proc/<pid>/stat (user and system ticks); null where unreadable. */
function processCpuMs(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are the stat file's 14th and 15th fields, in clock ticks of 10 ms on Linux.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

const tier = process.argv[2];
if (tier !== 'stack' && tier !== 'peer') throw new Error('Name the tier: stack or peer.');
const dataDir = mkdtempSync(path.join(tmpdir(), `banking-bench-${tier}-`));
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'development',
  DATA_DIR: dataDir,
  ...EVERY_PORT_FREE,
  // Databases of the benchmark's own (bench/tiers.ts names them), never the application's: they are dropped at the end.
  MONGODB_DB_PREFIX: process.env.MONGODB_DB_PREFIX?.startsWith('bench') ? process.env.MONGODB_DB_PREFIX : `bench${process.pid}_`,
  LOG_LEVEL: 'warn',
  GEOCODER_PRELOAD: 'false',
  // The load generator is one client at one address; the limits would measure themselves.
  RATE_LIMIT_PER_CREDENTIAL: '10000000',
  RATE_LIMIT_PER_ADDRESS: '10000000',
});
const logger = createLogger(config.logLevel);
let stopTier: () => Promise<void>;

if (tier === 'stack') {
  const { mongo, embedded } = await openDatabase(config);
  await seedDemo(mongo);
  const stack = await startStack(config, logger, mongo);
  const subgraphUrls = subgraphUrlsOf(stack.subgraphs);
  const authenticateDirect = createAuthenticator({ ...config, subgraphUrls });
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
    if (url.pathname === '/cpu') {
      // CPU time so far in ms: this process (the services) and the embedded FerretDB (Linux's /proc; null elsewhere).
      const own = process.cpuUsage();
      return answer({ services: (own.user + own.system) / 1000, database: processCpuMs(embedded?.pid) });
    }
    if (url.pathname === '/card-webhook') {
      // Points the demo aggregator's card-authorization webhook at a receiver of the benchmark's own.
      const target = url.searchParams.get('url') ?? '';
      webhookConfigsCollection(mongo.db('cards')).updateOne({ _id: DEMO.aggregatorId }, { $set: { url: target } }).then(() => answer({ ok: true }), (error: unknown) => res.writeHead(500).end(String(error)));
      return;
    }
    if (url.pathname === '/grow-cards') {
      growCards(mongo, Number(url.searchParams.get('count') ?? 100)).then(() => answer({ ok: true }), (error: unknown) => res.writeHead(500).end(String(error)));
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
  console.log(JSON.stringify({ subgraphs: subgraphUrls, gateway: `${stack.gateway.url}/graphql`, rest: stack.restAdapter.url, control: `http://127.0.0.1:${(control.address() as AddressInfo).port}` } satisfies StackAddresses));
  stopTier = async () => {
    control.close();
    await stack.stop();
    // On a MongoDB of the user's own (MONGODB_URI) the benchmark's databases go; the embedded one goes with its folder.
    if (!embedded) for (const name of SUBGRAPH_NAMES) await mongo.db(name).dropDatabase();
    await mongo.close();
    await embedded?.stop();
  };
} else {
  const hive = await startHiveGateway(config);
  console.log(JSON.stringify({ hive: `${hive.url}/graphql` } satisfies PeerAddresses));
  stopTier = async () => {
    hive.server.close();
    await hive.runtime.dispose();
  };
}

const stop = async () => {
  await stopTier();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
