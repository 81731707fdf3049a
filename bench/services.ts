// The services under benchmark, each tier in its own process (the load generator runs in another):
//   `services.ts stack`: the four subgraphs on the embedded database (or MONGODB_URI) with the
//     demo data, and a control endpoint (database command counts, requests that reached the
//     subgraphs, the benchmark's population of users and sessions, growing the card list, the
//     demo aggregator's card webhook, a signed principal for calling a subgraph directly). Without
//     BENCH_SEPARATE_GATEWAY it also runs our gateway and REST adapter, as `npm start` does;
//   `services.ts gateway`: our gateway and REST adapter over the stack's subgraphs, as a
//     deployment runs them, apart from the subgraphs;
//   `services.ts peer default` and `services.ts peer router`: GraphQL Hive Gateway over the same
//     supergraph and the stack's subgraphs, with the same authentication, each in a process of its
//     own: `default` on its default runtime, `router` on its Router Runtime
//     (@graphql-hive/router-runtime, Hive Router's Rust query planner as a native addon). Both on
//     their own defaults otherwise.
// bench/tiers.ts passes them all the same INTERNAL_SECRET and MONGODB_DB_PREFIX, and the gateways
// the subgraphs' addresses. Each prints one JSON line with its addresses, then serves until SIGTERM.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import v8 from 'node:v8';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAuthenticator } from '../gateway/src/authenticate.js';
import { SUBGRAPH_NAMES, type Config } from '../platform/runtime/config.js';
import { configFor } from '../platform/runtime/config-slices.js';
import { DEMO } from '../platform/domain/demo.js';
import { minor } from '../platform/money/money.js';
import { createLogger } from '../platform/runtime/logger.js';
import type { Mongo } from '../platform/mongo/mongo.js';
import { PRINCIPAL_HEADER, signPrincipal } from '../platform/security/signed-headers.js';
import { type Principal } from '../platform/contracts/principal.js';
import { SUPERGRAPH_PATH } from '../schema/compose.js';
import { webhookConfigsCollection } from '../subgraphs/cards/src/webhooks/datasource.js';
import { cardMessagesCollection } from '../subgraphs/cards/src/authorization/datasource.js';
import { cardsCollection } from '../subgraphs/cards/src/cards/datasource.js';
import { accountsCollection } from '../subgraphs/payments/src/accounts/datasource.js';
import { transactionsCollection } from '../subgraphs/payments/src/accounts/transactions-datasource.js';
import { start as startGateway, type GatewayService } from '../gateway/src/index.js';
import { createEventBus } from '../platform/messaging/event-bus.js';
import { sha256 } from '../platform/security/secrets.js';
import { start as startRestAdapter } from '../rest-adapter/src/index.js';
import {
  EVERY_PORT_FREE,
  loadConfig,
  openDatabase,
  seedDemo,
  startStack,
  startSubgraphs,
  subgraphUrlsOf,
  transportsOf,
} from '../scripts/stack.js';
import { seedPopulation, type BenchUser } from './population.js';

/** What the gateway tier prints, and the stack tier where it runs the gateway itself. */
export interface GatewayAddresses {
  gateway: string;
  rest: string;
  /** Where the gateway's subgraph fetch counts are read (`/fetches`). */
  gatewayControl: string;
}

/**
 * Of the accounts below the overdraft floor, those whose approved advices (0220: sales the network
 * has made, held without the balance condition) do not account for the shortfall: an account that
 * would be at or above the floor without them went below it by something else.
 */
async function belowBeyondAdvices(mongo: Mongo, below: Array<{ _id: string; availableBalance: number }>, floor: number): Promise<number> {
  if (below.length === 0) return 0;
  const cards = await cardsCollection(mongo.db('cards'))
    .find({ SvcAccountId: { $in: below.map((account) => account._id) } }, { projection: { _id: 1, SvcAccountId: 1 } })
    .toArray();
  const accountOfCard = new Map(cards.map((card) => [card._id, card.SvcAccountId]));
  const advices = await cardMessagesCollection(mongo.db('cards'))
    .find(
      { messageType: '0220', responseCode: '00', SvcCardId: { $in: [...accountOfCard.keys()] } },
      { projection: { SvcCardId: 1, amount: 1 } },
    )
    .toArray();
  const advised = new Map<string, number>();
  for (const advice of advices) {
    const account = accountOfCard.get(advice.SvcCardId);
    if (account !== undefined) advised.set(account, (advised.get(account) ?? 0) + advice.amount);
  }
  return below.filter((account) => account.availableBalance + (advised.get(account._id) ?? 0) < floor).length;
}

/** What the stack tier prints. */
export interface StackAddresses extends Partial<GatewayAddresses> {
  subgraphs: Config['subgraphUrls'];
  control: string;
}

/** What the peer tiers print between them: `hive` the default runtime's, `hiveRouter` the Router Runtime's. */
export interface PeerAddresses {
  hive: string;
  hiveRouter: string;
}

/** Which runtime a peer tier runs: Hive Gateway's default one, or its Router Runtime. */
export type PeerRuntime = 'default' | 'router';

/** The address each peer runtime prints under. */
const PEER_ADDRESS_KEYS = { default: 'hive', router: 'hiveRouter' } as const satisfies Record<PeerRuntime, keyof PeerAddresses>;

/** The part of Hive Gateway's API this file uses. */
interface HiveRuntime {
  (req: http.IncomingMessage, res: http.ServerResponse): void;
  dispose(): Promise<void> | void;
}
/** The part of a subgraph execution request this file reads and sets. */
interface HiveExecutionRequest {
  context?: unknown;
  extensions?: Record<string, unknown>;
}
type HivePlugin = {
  onContextBuilding(payload: { context: unknown; extendContext: (extension: { principal: Principal }) => void }): Promise<void>;
  onSubgraphExecute(payload: {
    executionRequest: HiveExecutionRequest;
    setExecutionRequest: (request: HiveExecutionRequest) => void;
  }): void;
};
/** The Router Runtime's handler, passed through to Hive Gateway unread. */
type UnifiedGraphHandler = (options: never) => unknown;

/** The ports the committed supergraph names, by subgraph. */
const SUPERGRAPH_PORTS = { user: 4001, cards: 4002, payments: 4003, compliance: 4004 } as const;

/**
 * Hive Gateway on the runtime `runtimeName` names over the subgraphs, authenticating each request
 * as our gateway does (with its memory of live sessions where Redis carries the user subgraph's
 * announcements) and forwarding the same signed principal.
 */
async function startHiveGateway(config: Config, runtimeName: PeerRuntime) {
  // Loaded by names TypeScript does not follow: their types reference the DOM library (through
  // @whatwg-node/fetch), which would change Node's Buffer and Blob types for the whole project.
  const HIVE_GATEWAY = '@graphql-hive/gateway';
  const ROUTER_RUNTIME = '@graphql-hive/router-runtime';
  const { createGatewayRuntime } = (await import(HIVE_GATEWAY)) as {
    createGatewayRuntime: (options: {
      supergraph: string;
      logging: boolean;
      graphqlEndpoint: string;
      landingPage: boolean;
      unifiedGraphHandler?: UnifiedGraphHandler;
      plugins: () => HivePlugin[];
    }) => HiveRuntime;
  };
  const unifiedGraphHandler =
    runtimeName === 'router'
      ? ((await import(ROUTER_RUNTIME)) as { unifiedGraphHandler: UnifiedGraphHandler }).unifiedGraphHandler
      : undefined;
  let supergraph = readFileSync(SUPERGRAPH_PATH, 'utf8');
  for (const [name, port] of Object.entries(SUPERGRAPH_PORTS)) {
    supergraph = supergraph.replace(`http://127.0.0.1:${port}/graphql`, config.subgraphUrls[name as keyof typeof SUPERGRAPH_PORTS]);
  }
  const sessionEvents = config.redisUrl
    ? createEventBus(config.redisUrl, createLogger(config.logLevel), config.dbPrefix, config.eventRetention)
    : undefined;
  const authenticate = createAuthenticator(config, sessionEvents);
  const secret = config.internalSecret;
  const runtime = createGatewayRuntime({
    supergraph,
    logging: false,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    ...(unifiedGraphHandler ? { unifiedGraphHandler } : {}),
    plugins: () => [
      {
        onContextBuilding: async ({ context, extendContext }) => {
          const request = (context as { request: Request }).request;
          extendContext({ principal: await authenticate(Object.fromEntries(request.headers), 'hive') });
        },
        // The principal goes in the subgraph request's own headers (`extensions.headers`), which Hive's in-flight
        // deduplication keys on. Set in onFetch instead, after that key is taken, concurrent requests of different
        // users for the same query shared one answer: most users got another user's data.
        onSubgraphExecute: ({ executionRequest, setExecutionRequest }) => {
          const principal = (executionRequest.context as { principal?: Principal } | undefined)?.principal;
          if (!principal) return;
          const extensions = executionRequest.extensions ?? {};
          const headers = {
            ...(extensions.headers as Record<string, string> | undefined),
            [PRINCIPAL_HEADER]: signPrincipal(principal, secret),
          };
          setExecutionRequest({ ...executionRequest, extensions: { ...extensions, headers } });
        },
      },
    ],
  });
  const server = http.createServer(runtime);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, runtime, sessionEvents };
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

/** The delay from each decided card message that moves money to its transaction in payments, in ms (null: not recorded yet). */
async function cardVisibility(mongo: Mongo, since: Date): Promise<Array<number | null>> {
  const decided = await cardMessagesCollection(mongo.db('cards'))
    .find({ dtsCreated: { $gte: since }, transactionId: { $ne: null } }, { projection: { transactionId: 1, dtsCreated: 1 } })
    .toArray();
  const recorded = new Map<string, Date>();
  const ids = decided.map((message) => message.transactionId!);
  for (let i = 0; i < ids.length; i += 1000) {
    const page = await transactionsCollection(mongo.db('payments'))
      .find({ _id: { $in: ids.slice(i, i + 1000) } }, { projection: { dtsRecorded: 1 } })
      .toArray();
    for (const transaction of page) if (transaction.dtsRecorded) recorded.set(transaction._id, transaction.dtsRecorded);
  }
  return decided.map((message) => {
    const at = recorded.get(message.transactionId!);
    return at ? at.getTime() - message.dtsCreated.getTime() : null;
  });
}

/** Adds `count` more live sessions, spread over the population's users, and returns their tokens. */
async function addSessions(mongo: Mongo, users: readonly BenchUser[], count: number): Promise<Array<{ token: string }>> {
  const tokens: Array<{ token: string }> = [];
  const now = Date.now();
  const sessions = [];
  for (let i = 0; i < count; i += 1) {
    const token = randomBytes(32).toString('base64url');
    const user = users[i % users.length]!;
    tokens.push({ token });
    sessions.push({
      _id: `bench_extra_session_${now}_${i}`,
      tokenHash: sha256(token),
      kind: 'user',
      SvcUserId: user.SvcUserId,
      prospectId: null,
      deviceTag: null,
      svcAggregatorId: null,
      login: null,
      tokenType: null,
      channel: 'internet',
      dtsCreated: new Date(now),
      dtsExpiry: new Date(now + 24 * 3600 * 1000),
      dtsRevoked: null,
    });
  }
  if (sessions.length) await mongo.db('user').collection<{ _id: string }>('sessions').insertMany(sessions);
  return tokens;
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
if (tier !== 'stack' && tier !== 'gateway' && tier !== 'peer') throw new Error('Name the tier: stack, gateway, or peer with its runtime.');
const peerRuntime = process.argv[3];
if (tier === 'peer' && peerRuntime !== 'default' && peerRuntime !== 'router')
  throw new Error("Name the peer's runtime: default or router.");
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
  RATE_LIMIT_REQUESTS_PER_CREDENTIAL: '10000000',
  RATE_LIMIT_REQUESTS_PER_ADDRESS: '10000000',
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
});
const logger = createLogger(config.logLevel);
let stopTier: () => Promise<void>;

/** The control routes of the tier that runs our gateway: its subgraph fetch counts, and its memory by V8's heap spaces (after a full collection where `--expose-gc` allows one). */
function gatewayControl(gateway: GatewayService): (req: http.IncomingMessage, res: http.ServerResponse) => boolean {
  return (req, res) => {
    if (req.url === '/memory') {
      (globalThis as { gc?: () => void }).gc?.();
      const spaces = Object.fromEntries(
        v8.getHeapSpaceStatistics().map((space) => [space.space_name, Math.round(space.space_used_size / 1048576)]),
      );
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...process.memoryUsage(), spacesMiB: spaces }));
      return true;
    }
    if (req.url !== '/fetches') return false;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ ...gateway.subgraphFetches(), sessions: gateway.sessionLookups() }));
    return true;
  };
}

/** Listens on a free loopback port; resolves with its address. */
async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

if (tier === 'stack') {
  const { mongo, embedded } = await openDatabase(config);
  await seedDemo(mongo);
  // With BENCH_SEPARATE_GATEWAY the gateway and adapter run in a tier of their own (at GATEWAY_URL); otherwise here, as `npm start` runs them.
  const separate = process.env.BENCH_SEPARATE_GATEWAY === '1';
  const bus = separate ? createEventBus(config.redisUrl, logger, config.dbPrefix, config.eventRetention) : null;
  const stack = separate ? null : await startStack(config, logger, mongo);
  const subgraphs = stack?.subgraphs ?? (await startSubgraphs(config, logger, mongo, bus!));
  const subgraphUrls = subgraphUrlsOf(subgraphs);
  const authenticateDirect = createAuthenticator({ ...config, subgraphUrls });
  // Requests that reach the subgraphs over HTTP (a gateway in this process calls them without it).
  let subgraphRequests = 0;
  for (const service of Object.values(subgraphs)) service.server.on('request', () => (subgraphRequests += 1));
  let population: Promise<BenchUser[]> | null = null;
  const fetchesOf = stack ? gatewayControl(stack.gateway) : () => false;
  const control = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://control');
    const answer = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const answerLater = (work: Promise<unknown>): void => {
      work.then(answer, (error: unknown) => res.writeHead(500).end(String(error)));
    };
    if (fetchesOf(req, res)) return;
    if (url.pathname === '/commands/reset') {
      mongo.commands.reset();
      return answer({ ok: true });
    }
    if (url.pathname === '/commands') {
      const databases = ['user', 'cards', 'payments', 'compliance'] as const;
      return answer(Object.fromEntries(databases.map((name) => [name, mongo.commands.snapshot(mongo.databaseName(name))])));
    }
    if (url.pathname === '/subgraph-requests') return answer({ requests: subgraphRequests });
    if (url.pathname === '/cpu') {
      // CPU time so far in ms: this process (the services) and the embedded FerretDB (Linux's /proc; null elsewhere).
      const own = process.cpuUsage();
      return answer({ services: (own.user + own.system) / 1000, database: processCpuMs(embedded?.pid) });
    }
    if (url.pathname === '/population') {
      // Seeded on the first call: the benchmarks that do not use it do not wait for it.
      population ??= seedPopulation(mongo);
      answerLater(population);
      return;
    }
    if (url.pathname === '/sessions') {
      answerLater(
        (population ??= seedPopulation(mongo)).then((users) => addSessions(mongo, users, Number(url.searchParams.get('count') ?? 0))),
      );
      return;
    }
    if (url.pathname === '/card-webhook') {
      // Points the demo aggregator's card-authorization webhook at a receiver of the benchmark's own.
      const target = url.searchParams.get('url') ?? '';
      answerLater(
        webhookConfigsCollection(mongo.db('cards'))
          .updateOne({ _id: DEMO.aggregatorId }, { $set: { url: target } })
          .then(() => ({ ok: true })),
      );
      return;
    }
    if (url.pathname === '/card-backlog') {
      // Decided card messages not yet carried (read by the outbox sweep's own index, as a find: the embedded database narrows finds, not counts).
      answerLater(
        cardMessagesCollection(mongo.db('cards'))
          .find({ dtsPublished: null }, { projection: { _id: 1 } })
          .toArray()
          .then((pending) => ({ pending: pending.length })),
      );
      return;
    }
    if (url.pathname === '/card-funds') {
      // One account's balances and open holds, and how many accounts have less available than the overdraft limit lets a card take.
      const accounts = accountsCollection(mongo.db('payments'));
      const floor = minor(-config.cardOverdraftLimit * 100);
      answerLater(
        Promise.all([
          accounts.findOne(
            { _id: url.searchParams.get('account') ?? '' },
            { projection: { balance: 1, availableBalance: 1, authorizationHolds: 1, purchaseHolds: 1 } },
          ),
          accounts.find({ availableBalance: { $lt: floor } }, { projection: { _id: 1, availableBalance: 1 } }).toArray(),
        ]).then(async ([account, below]) => ({
          account: account && {
            balance: account.balance,
            availableBalance: account.availableBalance,
            holds: (account.authorizationHolds?.length ?? 0) + (account.purchaseHolds?.length ?? 0),
          },
          accountsBelowOverdraftLimit: below.length,
          accountsBelowBeyondAdvices: await belowBeyondAdvices(mongo, below, floor),
        })),
      );
      return;
    }
    if (url.pathname === '/card-visibility') {
      // For each approved card message that moves money, decided since `since`: how long after its
      // decision was stored its transaction was recorded in payments (null: not yet).
      answerLater(cardVisibility(mongo, new Date(url.searchParams.get('since') ?? 0)));
      return;
    }
    if (url.pathname === '/grow-cards') {
      answerLater(growCards(mongo, Number(url.searchParams.get('count') ?? 100)).then(() => ({ ok: true })));
      return;
    }
    if (url.pathname === '/principal') {
      // A signed principal for calling a subgraph directly, as the gateway would forward it.
      answerLater(
        authenticateDirect({ token: url.searchParams.get('token') ?? '' }, 'bench').then((principal) => ({
          header: PRINCIPAL_HEADER,
          value: signPrincipal(principal, config.internalSecret),
        })),
      );
      return;
    }
    res.writeHead(404).end();
  });
  const controlUrl = await listen(control);
  console.log(
    JSON.stringify({
      subgraphs: subgraphUrls,
      control: controlUrl,
      ...(stack ? { gateway: `${stack.gateway.url}/graphql`, rest: stack.restAdapter.url, gatewayControl: controlUrl } : {}),
    } satisfies StackAddresses),
  );
  stopTier = async () => {
    control.close();
    if (stack) await stack.stop();
    else for (const service of Object.values(subgraphs)) await service.close();
    await bus?.close();
    // On a MongoDB of the user's own (MONGODB_URI) the benchmark's databases go; the embedded one goes with its folder.
    if (!embedded) for (const name of SUBGRAPH_NAMES) await mongo.db(name).dropDatabase();
    await mongo.close();
    await embedded?.stop();
  };
} else if (tier === 'gateway') {
  // Our gateway and REST adapter in a process of their own, over the stack tier's subgraphs (USER_SUBGRAPH_URL and the others), at GATEWAY_PORT.
  // Without Redis this process's bus hears nothing from the subgraphs, so no session may be answered from memory.
  const own = {
    ...config,
    ports: { ...config.ports, gateway: Number(process.env.GATEWAY_PORT) },
    sessionCacheSeconds: config.redisUrl ? config.sessionCacheSeconds : 0,
  };
  const bus = createEventBus(own.redisUrl, logger, own.dbPrefix, own.eventRetention);
  // The adapter beside the gateway in this process calls it as IN_PROCESS_CALLS says (the tiers set `adapter`).
  const transports = transportsOf(own.inProcessCalls);
  const gateway = await startGateway({ config: configFor('gateway', own), logger, bus, transport: transports.gateway });
  const rest = await startRestAdapter({
    config: configFor('rest-adapter', { ...own, gatewayUrl: `${gateway.url}/graphql` }),
    logger,
    transport: transports.adapter,
  });
  const fetchesOf = gatewayControl(gateway);
  const control = http.createServer((req, res) => {
    if (!fetchesOf(req, res)) res.writeHead(404).end();
  });
  console.log(
    JSON.stringify({ gateway: `${gateway.url}/graphql`, rest: rest.url, gatewayControl: await listen(control) } satisfies GatewayAddresses),
  );
  stopTier = async () => {
    control.close();
    await rest.close();
    await gateway.close();
    await bus.close();
  };
} else {
  const runtimeName = peerRuntime as PeerRuntime;
  const hive = await startHiveGateway(config, runtimeName);
  console.log(JSON.stringify({ [PEER_ADDRESS_KEYS[runtimeName]]: `${hive.url}/graphql` } satisfies Partial<PeerAddresses>));
  stopTier = async () => {
    hive.server.close();
    await hive.runtime.dispose();
    await hive.sessionEvents?.close();
  };
}

const stop = async () => {
  await stopTier();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
