// `npm run bench:soak [-- --seconds N]`: a bounded soak on loopback. Every service runs in this
// process over an embedded FerretDB of its own (as `npm start` runs them); mixed traffic runs
// for N seconds (default 180): end users reading over REST and GraphQL, logging in and out,
// turning a card off and on; a merchant creating, sending and cancelling payment links; 50
// graphql-ws subscribers receiving every card status change. Reports requests, unexpected answers
// (anything but the expected status, or a subscriber missing an event), latencies and the heap
// after a full GC every 10 s; writes bench/soak.result.json.
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { loadConfig } from '../platform/runtime/config.js';
import { DEMO } from '../platform/domain/demo.js';
import { startEmbeddedMongo } from '../platform/mongo/ferretdb.js';
import { createLogger } from '../platform/runtime/logger.js';
import { connectMongo } from '../platform/mongo/mongo.js';
import { EVERY_PORT_FREE, seedDemo, startStack } from '../scripts/stack.js';

const argument = process.argv.indexOf('--seconds');
const SECONDS = argument > 0 ? Number(process.argv[argument + 1]) : Number(process.env.SOAK_SECONDS ?? 180);
const SUBSCRIBERS = 50;
const RESULT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'soak.result.json');
if (!Number.isInteger(SECONDS) || SECONDS < 10) throw new Error('--seconds must be an integer of at least 10');
if (!global.gc) throw new Error('Run with node --expose-gc (npm run bench:soak does).');
const gc = global.gc;

const dataDir = await mkdtemp(path.join(tmpdir(), 'bench-soak-'));
const embedded = await startEmbeddedMongo({ dataDir, ferretdbBin: process.env.FERRETDB_BIN });
const config = loadConfig({
  NODE_ENV: 'test',
  MONGODB_URI: embedded.uri,
  MONGODB_DB_PREFIX: 'soak_',
  LOG_LEVEL: 'error',
  GEOCODER_PRELOAD: 'false',
  ...EVERY_PORT_FREE,
  // One client address carries every user here; the limits themselves are tested elsewhere.
  RATE_LIMIT_PER_CREDENTIAL: '10000000',
  RATE_LIMIT_PER_ADDRESS: '10000000',
  RATE_LIMIT_SENSITIVE: '10000000',
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
  RATE_LIMIT_REQUESTS_PER_CREDENTIAL: '10000000',
  RATE_LIMIT_REQUESTS_PER_ADDRESS: '10000000',
  // Its subscribers are one user on connections of their own.
  WS_MAX_CONNECTIONS_PER_PRINCIPAL: String(SUBSCRIBERS),
  WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: String(SUBSCRIBERS),
});
const mongo = await connectMongo(config.mongodbUri!, config.dbPrefix);
await seedDemo(mongo);
const stack = await startStack(config, createLogger('error'), mongo);
const rest = stack.restAdapter.url;

const latencies = new Map<string, number[]>();
const unexpected = new Map<string, number>();
let running = true;

/** One timed request: counts it, and counts it as unexpected unless `expected` is the status. */
async function call(kind: string, url: string, init: RequestInit, expected = 200): Promise<Response | null> {
  const started = performance.now();
  const response = await fetch(url, init).catch(() => null);
  const body = response ? await response.text() : '';
  const list = latencies.get(kind) ?? [];
  list.push(performance.now() - started);
  latencies.set(kind, list);
  if (response?.status !== expected)
    unexpected.set(
      `${kind} ${response?.status ?? 'network error'}`,
      (unexpected.get(`${kind} ${response?.status ?? 'network error'}`) ?? 0) + 1,
    );
  return response ? new Response(body, { status: response.status }) : null;
}
const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const loop = async (every: number, step: () => Promise<void>) => {
  while (running) {
    const started = performance.now();
    await step();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, every - (performance.now() - started))));
  }
};
const tokenOf = async (response: Response | null) => (await response?.json()) as { token?: string; data?: { token?: string } } | undefined;

const userToken = (await tokenOf(
  await call('login', `${rest}/token`, {
    ...json({ channel: 'internet', userName: DEMO.userName, password: DEMO.password }),
    method: 'PUT',
  }),
))!.token!;
const aggregatorToken = (await tokenOf(
  await call(
    'aggregator token',
    `${rest}/auth/get-token`,
    json({ user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } }),
  ),
))!.data!.token!;
const merchantJwt = (await tokenOf(
  await call(
    'merchant token',
    `${rest}/payment-link/merchant/get-token`,
    json({ svcMerchantId: DEMO.merchantId }, { 'x-svc-token': aggregatorToken }),
  ),
))!.data!.token!;

// Subscribers: each must receive every card status change published after it subscribed.
const wsUrl = `${stack.gateway.url.replace('http', 'ws')}/graphql`;
const received: number[] = new Array<number>(SUBSCRIBERS).fill(0);
const clients: Client[] = [];
let acknowledged = 0;
for (let i = 0; i < SUBSCRIBERS; i += 1) {
  const client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: { token: userToken },
    retryAttempts: 0,
    on: { connected: () => void (acknowledged += 1) },
  });
  clients.push(client);
  client.subscribe(
    { query: 'subscription { cardStatusChanged { SvcCardId status } }' },
    {
      next: () => void (received[i] = received[i]! + 1),
      error: () => void unexpected.set('subscription error', (unexpected.get('subscription error') ?? 0) + 1),
      complete: () => {},
    },
  );
}
while (acknowledged < SUBSCRIBERS) await new Promise((resolve) => setTimeout(resolve, 50));
// A subscription is registered a moment after its acknowledgement: turn the second card (blocked
// in the demo data) on and off until every subscriber has seen a change, then count from zero.
const probeCard = async (onoff: 'on' | 'off') =>
  fetch(`${rest}/cards/${DEMO.cardIds[1]}/${onoff}`, { method: 'POST', headers: { token: userToken } }).then((r) => r.text());
for (let i = 0; received.some((count) => count === 0); i += 1) {
  if (i > 120) throw new Error('The subscribers did not all receive a card change within 30 s.');
  await probeCard(i % 2 === 0 ? 'on' : 'off');
  await new Promise((resolve) => setTimeout(resolve, 250));
}
await probeCard('off');
await new Promise((resolve) => setTimeout(resolve, 1000));
received.fill(0);

const memory: Array<{ second: number; heapUsedMiB: number; rssMiB: number }> = [];
const sampleMemory = (second: number) => {
  gc();
  const { heapUsed, rss } = process.memoryUsage();
  memory.push({ second, heapUsedMiB: Math.round((heapUsed / 2 ** 20) * 10) / 10, rssMiB: Math.round((rss / 2 ** 20) * 10) / 10 });
};
const startedAt = Date.now();
sampleMemory(0);
const sampler = setInterval(() => sampleMemory(Math.round((Date.now() - startedAt) / 1000)), 10_000);

let statusChanges = 0;
// The probe left the second card blocked: the first toggle turns it on, and each one after changes it.
let cardOn = false;
const workers = [
  ...Array.from({ length: 3 }, (_, n) =>
    loop(50, async () => {
      const which = Math.floor(Math.random() * 3);
      if (which === 0) await call('REST GET /restrictions', `${rest}/restrictions`, { headers: { token: userToken } });
      else if (which === 1)
        await call('REST GET /accounts/:id/transactions/latest', `${rest}/accounts/${DEMO.accountId}/transactions/latest`, {
          headers: { token: userToken },
        });
      else
        await call(
          'GraphQL me (four subgraphs)',
          `${stack.gateway.url}/graphql`,
          json(
            {
              query:
                '{ me { firstName cards { SvcCardId status } accounts { balance } beneficiaries { name } restrictions { restrictionName } } }',
              variables: { n },
            },
            { token: userToken },
          ),
        );
    }),
  ),
  loop(250, async () => {
    cardOn = !cardOn;
    const response = await call('REST POST /cards/:id/:onoff', `${rest}/cards/${DEMO.cardIds[1]}/${cardOn ? 'on' : 'off'}`, {
      method: 'POST',
      headers: { token: userToken },
    });
    if (response?.status === 200) statusChanges += 1;
  }),
  loop(300, async () => {
    const token = await tokenOf(
      await call('REST PUT /token (login)', `${rest}/token`, {
        ...json({ channel: 'internet', userName: DEMO.userName, password: DEMO.password }),
        method: 'PUT',
      }),
    );
    if (token?.token) await call('REST DELETE /token (logout)', `${rest}/token`, { method: 'DELETE', headers: { token: token.token } });
  }),
  loop(300, async () => {
    const merchant = { 'x-svc-jwtoken': merchantJwt };
    const created = (await (
      await call(
        'REST create payment link',
        `${rest}/public/merchant/payment/create`,
        json(
          {
            amount: 12.5,
            currency: 'USD',
            payerName: 'Soak Payer',
            fields: [{ index: 0, code: 'email', label: 'Email', value: 'soak@example.com' }],
          },
          merchant,
        ),
      )
    )?.json()) as { data?: { svcTransactionId: string } } | undefined;
    const id = created?.data?.svcTransactionId;
    if (!id) return;
    await call('REST send payment link', `${rest}/public/merchant/payment/send`, json({ svcTransactionId: id }, merchant));
    await call('REST cancel payment link', `${rest}/public/merchant/payment/cancel`, json({ svcTransactionId: id }, merchant));
  }),
];
await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
running = false;
await Promise.all(workers);
clearInterval(sampler);
// Events still on their way: a few seconds to arrive.
const deadline = Date.now() + 10_000;
while (Date.now() < deadline && received.some((count) => count < statusChanges)) await new Promise((resolve) => setTimeout(resolve, 100));
sampleMemory(Math.round((Date.now() - startedAt) / 1000));
const missed = received.reduce((sum, count) => sum + Math.max(0, statusChanges - count), 0);
if (missed > 0) unexpected.set('subscription events missed', missed);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
};
const requests = Object.fromEntries(
  [...latencies].map(([kind, values]) => [kind, { count: values.length, p50Ms: percentile(values, 50), p99Ms: percentile(values, 99) }]),
);
const afterWarmUp = memory.find((m) => m.second >= 30) ?? memory[0]!;
const last = memory.at(-1)!;
const result = {
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  },
  seconds: SECONDS,
  subscribers: SUBSCRIBERS,
  totalRequests: [...latencies.values()].reduce((sum, values) => sum + values.length, 0),
  unexpected: Object.fromEntries(unexpected),
  cardStatusChanges: statusChanges,
  subscriptionEventsReceived: received.reduce((sum, count) => sum + count, 0),
  subscriptionEventsExpected: statusChanges * SUBSCRIBERS,
  requests,
  memory,
  heapGrowthAfterWarmUpMiB: Math.round((last.heapUsedMiB - afterWarmUp.heapUsedMiB) * 10) / 10,
};
writeFileSync(RESULT, `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify({ ...result, memory: `${memory.length} samples, see ${path.relative(process.cwd(), RESULT)}` }, null, 2));

await Promise.all(
  clients.map(async (client) => {
    await client.dispose();
  }),
);
await stack.stop();
await mongo.close();
await embedded.stop();
await rm(dataDir, { recursive: true, force: true });
process.exit(unexpected.size === 0 ? 0 : 1);
