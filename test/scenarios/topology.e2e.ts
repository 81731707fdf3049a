import { randomBytes } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { DEMO } from '../../platform/domain/demo.js';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';
import { SUBGRAPH_NAMES } from '../../platform/runtime/config.js';
import { GATEWAYS, startCluster, type Cluster, type Gateway } from '../../scripts/lib/cluster.js';
import { HAPROXY_BIN, HAPROXY_CHECKS } from '../../scripts/lib/haproxy.js';
import { backoffDelay } from '../../scripts/lib/supervisor.js';
import { seedDemo } from '../../scripts/stack.js';
import { comparePositions, createEventBus } from '../../platform/messaging/event-bus.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { ensureDebianPackage } from '../support/debian.js';
import { until } from '../support/harness.js';
import { resumingSubscriber, type ResumingSubscriber, type SubscriptionTransport } from '../support/resuming-subscribers.js';

// The replicas topology as processes (scripts/lib/cluster.ts, as `npm run start:cluster` runs it):
// each subgraph, two gateways and two REST adapters on their own, behind Debian's HAProxy, over the
// run's database and this machine's Redis. test/scenarios/replicas.e2e.ts covers the same
// guarantees with the replicas in one process.
const REDIS_URL = 'redis://127.0.0.1:6379';
/** Short, to keep restarts short; longer than HAProxy needs to take a not-ready gateway out (3 checks 200 ms apart). */
const DRAIN_SECONDS = 2;
/** The strict limit of the sensitive fields, per address, counted in Redis by both gateways. */
const SENSITIVE_LIMIT = 10;
/** Concurrent REST clients of the load; each has at most one request in flight. */
const LOAD_CLIENTS = 3;
/** The realtime run: subscribers split across the three transports, events a second, for how long. */
const REALTIME_SUBSCRIBERS = Number(process.env.REALTIME_SUBSCRIBERS ?? 200);
const REALTIME_RATE = 50;
const REALTIME_SECONDS = Number(process.env.REALTIME_SECONDS ?? 60);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One request of the load: what it was, when it was sent and answered (ms since the load started), and why it failed if it did (not a 2xx). */
interface LoadRequest {
  what: 'write' | 'read';
  sentAt: number;
  doneAt: number;
  failure?: string;
}

/** What a load run did: its requests, and the ids of the writes that were acknowledged (answered 2xx). */
interface LoadReport {
  requests: LoadRequest[];
  acknowledged: string[];
  startedAt: number;
}

describe('replicas as processes behind HAProxy', () => {
  let cluster: Cluster | undefined;
  let mongo: Mongo | undefined;
  const unexpectedExits: string[] = [];
  /** When each member last exited unasked (performance.now()). */
  const exitedAt = new Map<string, number>();
  /** The cluster's own log lines: its supervision of the processes. */
  const clusterLog: Array<Record<string, unknown>> = [];
  const prefix = `topo${randomBytes(4).toString('hex')}_`;
  let userToken: string;
  let merchantJwt: string;

  const running = () => {
    if (!cluster) throw new Error('the cluster did not start');
    return cluster;
  };
  /** What a test left going (its load, its subscribers), ended in afterAll should the test have timed out. */
  const leftGoing = new Set<() => Promise<unknown>>();
  const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
  const graphql = (url: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    post(url, { query, variables }, headers);
  /** A gateway's own GraphQL endpoint, past HAProxy. */
  const direct = (gateway: Gateway) => `${running().urls[gateway]}/graphql`;
  const statusOf = (answer: Promise<Response>) =>
    answer.then(
      async (response) => {
        await response.arrayBuffer();
        return response.status;
      },
      () => 0,
    );
  const login = async (restUrl: string) => {
    const answer = await fetch(`${restUrl}/token`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'internet', userName: DEMO.userName, password: DEMO.password }),
    });
    expect(answer.status).toBe(200);
    return ((await answer.json()) as { token: string }).token;
  };
  const CREATE_LINK = 'mutation ($input: PaymentLinkInput!) { createPaymentLink(input: $input) { svcTransactionId } }';

  beforeAll(async () => {
    await ensureDebianPackage(HAPROXY_BIN, 'haproxy');
    const mongodbUri = inject('mongodbUri');
    mongo = await connectMongo(mongodbUri, prefix);
    await seedDemo(mongo);
    const started = performance.now();
    cluster = await startCluster({
      env: {
        // Not `test`: the processes run as a user's would (shutdown.e2e.ts does the same).
        NODE_ENV: 'development',
        LOG_LEVEL: 'info',
        MONGODB_URI: mongodbUri,
        MONGODB_DB_PREFIX: prefix,
        REDIS_URL,
        INTERNAL_SECRET: randomBytes(32).toString('hex'),
        JWT_SECRET: randomBytes(32).toString('hex'),
        DRAIN_SECONDS: String(DRAIN_SECONDS),
        GEOCODER_PRELOAD: 'false',
        // The load writes far more than a client would; the sensitive limit stays strict, to be counted.
        RATE_LIMIT_PER_CREDENTIAL: '1000000',
        RATE_LIMIT_PER_ADDRESS: '1000000',
        RATE_LIMIT_REQUESTS_PER_CREDENTIAL: '1000000',
        RATE_LIMIT_REQUESTS_PER_ADDRESS: '1000000',
        RATE_LIMIT_SENSITIVE: String(SENSITIVE_LIMIT),
        // The shortest retention: the keys this run leaves in the machine's Redis go within a minute.
        IDEMPOTENCY_KEY_TTL_SECONDS: '60',
        // Every realtime subscriber is the demo user, from this machine's one address, through HAProxy.
        WS_MAX_CONNECTIONS_PER_PRINCIPAL: String(4 * REALTIME_SUBSCRIBERS),
        WS_MAX_CONNECTIONS_PER_ADDRESS: String(4 * REALTIME_SUBSCRIBERS),
        WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: String(4 * REALTIME_SUBSCRIBERS),
        WS_SUBSCRIBE_RATE_PER_PRINCIPAL: String(100 * REALTIME_SUBSCRIBERS),
      },
      // Eight processes loading every service on two shared cores: slow beside other test files.
      readyTimeoutMs: 180_000,
      onLine: (who, line) => {
        if (who === 'cluster') clusterLog.push(JSON.parse(line) as Record<string, unknown>);
      },
      onUnexpectedExit: (member, how, tail) => {
        exitedAt.set(member, performance.now());
        unexpectedExits.push(`${member} ${how}`);
        process.stderr.write(`\n${member} ${how} without being stopped:\n${tail}\n`);
      },
    });
    process.stderr.write(`topology: 8 processes and HAProxy ready in ${Math.round(performance.now() - started)} ms\n`);
    const { restUrl } = cluster;
    userToken = await login(restUrl);
    const aggregator = await post(`${restUrl}/auth/get-token`, {
      user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword },
    });
    expect(aggregator.status).toBe(200);
    const aggregatorToken = ((await aggregator.json()) as { data: { token: string } }).data.token;
    const merchant = await post(
      `${restUrl}/payment-link/merchant/get-token`,
      { svcMerchantId: DEMO.merchantId },
      { 'x-svc-token': aggregatorToken },
    );
    expect(merchant.status).toBe(200);
    merchantJwt = ((await merchant.json()) as { data: { token: string } }).data.token;
  }, 300_000);

  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => {
      if (cluster) process.stderr.write(`\n${cluster.tail(30)}\n`);
    });
  });
  afterEach(() => {
    // A process that died on its own fails the test it died in (its tail is printed when it happens).
    expect(unexpectedExits.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    for (const end of leftGoing) await end();
    await cluster?.close();
    if (mongo) {
      for (const name of SUBGRAPH_NAMES) await mongo.db(name).dropDatabase();
      await mongo.close();
    }
  }, 60_000);

  /**
   * `LOAD_CLIENTS` clients, each in a loop through HAProxy's REST front: create a payment link
   * (with an Idempotency-Key of its own, as a client that may retry would), then read the user's
   * restrictions. Nothing is retried: every non-2xx answer or network error is a failure.
   */
  const startLoad = () => {
    const report: LoadReport = { requests: [], acknowledged: [], startedAt: performance.now() };
    const run = { going: true };
    const { restUrl } = running();
    const runId = randomBytes(3).toString('hex');
    const now = () => performance.now() - report.startedAt;
    /** Sends one request; `check` answers why a response is a failure, or null. */
    const send = async (
      what: LoadRequest['what'],
      request: () => Promise<Response>,
      check: (response: Response, text: string) => string | null,
    ) => {
      const sentAt = now();
      let failure: string | null;
      try {
        const response = await request();
        failure = check(response, await response.text());
      } catch (error) {
        failure = (error as Error).message;
      }
      report.requests.push({ what, sentAt, doneAt: now(), ...(failure === null ? {} : { failure }) });
    };
    const client = async (n: number) => {
      for (let i = 0; run.going; i += 1) {
        const key = `load-${runId}-${n}-${i}`;
        await send(
          'write',
          () =>
            post(
              `${restUrl}/public/merchant/payment/create`,
              { amount: 1 + (i % 100), currency: 'USD', invoiceNumber: key },
              { 'x-svc-jwtoken': merchantJwt, 'idempotency-key': key },
            ),
          (response, text) => {
            const id = response.ok ? (JSON.parse(text) as { data?: { svcTransactionId?: string } }).data?.svcTransactionId : undefined;
            if (!id) return `${response.status} ${text}`;
            report.acknowledged.push(id);
            return null;
          },
        );
        await send(
          'read',
          () => fetch(`${restUrl}/restrictions`, { headers: { token: userToken }, signal: AbortSignal.timeout(15_000) }),
          (response, text) => (response.ok ? null : `${response.status} ${text}`),
        );
        // Paced: steady traffic that leaves the two cores room to restart a gateway.
        await sleep(200);
      }
    };
    const clients = Array.from({ length: LOAD_CLIENTS }, (_, n) => client(n));
    const stop = async () => {
      run.going = false;
      await Promise.all(clients);
      leftGoing.delete(stop);
      return report;
    };
    leftGoing.add(stop);
    return { stop };
  };
  const failuresOf = (report: LoadReport) => report.requests.filter((request) => request.failure !== undefined);
  /** HAProxy's connection retries and redispatches away from each gateway so far. */
  const retriesAway = async () =>
    Promise.all(
      GATEWAYS.map(async (gateway) => {
        const state = await running().balancerState(gateway);
        return state.retries + state.redispatches;
      }),
    );

  /** Every acknowledged write, read back through HAProxy's GraphQL front: the merchant's links, a page of 1000 at a time. */
  const expectReadable = async (acknowledged: string[]) => {
    const stored = new Set<string>();
    for (let skip = 0; ; skip += 1000) {
      const answer = await graphql(
        running().graphqlUrl,
        'query ($skip: Int) { paymentLinks(numberOfRecords: 1000, skipRecords: $skip) { items { svcTransactionId } total { more } } }',
        { skip },
        { 'x-svc-jwtoken': merchantJwt },
      );
      expect(answer.status).toBe(200);
      const page = (
        (await answer.json()) as { data: { paymentLinks: { items: Array<{ svcTransactionId: string }>; total: { more: boolean } } } }
      ).data.paymentLinks;
      for (const { svcTransactionId } of page.items) stored.add(svcTransactionId);
      if (!page.total.more) break;
    }
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  };

  it('delivers to a subscription on one gateway an event caused by a REST call through the other adapter', async () => {
    const SvcCardId = DEMO.cardIds[0];
    const received: unknown[] = [];
    const client = createClient({
      url: direct('gateway-1').replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { token: userToken },
      retryAttempts: 0,
    });
    try {
      client.subscribe(
        { query: 'subscription { cardStatusChanged { SvcCardId status } }' },
        { next: (value) => void received.push(value), error: () => {}, complete: () => {} },
      );
      // The subscription is registered a moment after it is sent: change the card until an event arrives.
      const deadline = Date.now() + 20_000;
      for (let i = 0; received.length === 0 && Date.now() < deadline; i += 1) {
        const answer = await post(
          `${running().urls['rest-adapter-2']}/cards/${SvcCardId}/${i % 2 === 0 ? 'off' : 'on'}`,
          {},
          { token: userToken },
        );
        expect(answer.status).toBe(200);
        await sleep(250);
      }
      expect(await statusOf(post(`${running().urls['rest-adapter-2']}/cards/${SvcCardId}/on`, {}, { token: userToken }))).toBe(200);
      expect(JSON.stringify(received[0])).toContain(SvcCardId);
    } finally {
      await client.dispose();
    }
  });

  it('counts a rate limit across both gateways', async () => {
    const exchange = (gateway: Gateway) =>
      statusOf(graphql(direct(gateway), 'mutation ($link: String) { customerToken(link: $link) { token } }', { link: 'no-such-link' }));
    // Half the limit on each gateway: neither has reached it alone.
    const within: number[] = [];
    for (let i = 0; i < SENSITIVE_LIMIT; i += 1) within.push(await exchange(GATEWAYS[i % 2]!));
    expect(within.filter((status) => status === 429)).toEqual([]);
    expect([await exchange('gateway-1'), await exchange('gateway-2')]).toEqual([429, 429]);
  });

  it('replays an Idempotency-Key on the other gateway', async () => {
    const headers = { 'x-svc-jwtoken': merchantJwt, 'idempotency-key': `topology-${randomBytes(4).toString('hex')}` };
    const variables = { input: { amount: 12, currency: 'USD' } };
    const first = await graphql(direct('gateway-1'), CREATE_LINK, variables, headers);
    const again = await graphql(direct('gateway-2'), CREATE_LINK, variables, headers);
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const idOf = async (answer: Response) =>
      ((await answer.json()) as { data: { createPaymentLink: { svcTransactionId: string } } }).data.createPaymentLink.svcTransactionId;
    expect(await idOf(again)).toBe(await idOf(first));
  });

  it('refuses a session logged out on one gateway on the other, and through both adapters, once the announcement crosses Redis', async () => {
    const token = await login(running().urls['rest-adapter-1']);
    const me = (gateway: Gateway) => statusOf(graphql(direct(gateway), '{ me { firstName } }', {}, { token }));
    // Gateway 2 has the session in memory (SESSION_CACHE_SECONDS): only the announcement over Redis can end it there.
    expect([await me('gateway-2'), await me('gateway-2')]).toEqual([200, 200]);
    const logout = await graphql(direct('gateway-1'), 'mutation { logout }', {}, { token });
    expect(logout.status).toBe(200);
    const loggedOutAt = performance.now();
    const first = await me('gateway-2');
    const refused =
      first === 401
        ? first
        : await until(
            () => me('gateway-2'),
            (status) => status === 401,
            2000,
          );
    process.stderr.write(
      `topology: logout on gateway-1: the next request on gateway-2 got ${first}; refused there ${Math.round(performance.now() - loggedOutAt)} ms after the logout's answer\n`,
    );
    expect(refused).toBe(401);
    const restrictions = (adapter: 'rest-adapter-1' | 'rest-adapter-2') =>
      statusOf(fetch(`${running().urls[adapter]}/restrictions`, { headers: { token } }));
    const after = await Promise.all([
      ...Array.from({ length: 5 }, () => me('gateway-1')),
      ...Array.from({ length: 5 }, () => me('gateway-2')),
      ...Array.from({ length: 5 }, () => restrictions('rest-adapter-1')),
      ...Array.from({ length: 5 }, () => restrictions('rest-adapter-2')),
    ]);
    expect(after).toEqual(Array.from({ length: 20 }, () => 401));
  });

  it('restarts both gateways one after the other under load without failing a request or losing an acknowledged write', async () => {
    const retriedBefore = await retriesAway();
    const load = startLoad();
    await sleep(1000);
    const restarts: string[] = [];
    for (const gateway of GATEWAYS) {
      const since = performance.now();
      // SIGTERM: not ready at once, serving for DRAIN_SECONDS while HAProxy takes it out, then closed.
      expect(await running().stop(gateway)).toBe('exited with 0');
      const stoppedIn = performance.now() - since;
      await running().restart(gateway);
      restarts.push(
        `${gateway} stopped in ${Math.round(stoppedIn)} ms, back in rotation ${Math.round(performance.now() - since)} ms after SIGTERM`,
      );
    }
    await sleep(1000);
    const report = await load.stop();
    const seconds = (performance.now() - report.startedAt) / 1000;
    process.stderr.write(
      `topology: rolling restart: ${restarts.join('; ')}; ${report.requests.length} requests in ${seconds.toFixed(1)} s, ${failuresOf(report).length} failed, ${report.acknowledged.length} writes acknowledged\n`,
    );
    expect(report.requests.length).toBeGreaterThan(100);
    expect(failuresOf(report)).toEqual([]);
    // A drained gateway left rotation before it closed: HAProxy never found its port shut. Its
    // retries to the other gateway would hide a missing drain from the clients, not from this.
    expect(await retriesAway()).toEqual(retriedBefore);
    await expectReadable(report.acknowledged);
  }, 240_000);

  it('fails no request but those in flight on a gateway killed under load, starts it again, and its subscribers reconnect through HAProxy', async () => {
    const { graphqlUrl, restUrl } = running();
    const SvcCardId = DEMO.cardIds[0];
    const SUBSCRIBERS = 4;
    const subscribers = Array.from({ length: SUBSCRIBERS }, () => ({
      received: [] as number[],
      connectedAt: [] as number[],
      closedAt: [] as number[],
      errors: [] as string[],
      client: null as Client | null,
    }));
    for (const subscriber of subscribers) {
      subscriber.client = createClient({
        url: graphqlUrl.replace('http', 'ws'),
        webSocketImpl: WebSocket,
        connectionParams: { token: userToken },
        // A short fixed wait instead of the default backoff (1 s doubling, plus up to 3 s), to keep the test short.
        retryAttempts: 20,
        retryWait: async () => {
          await sleep(250);
        },
        // A balancer that does not send a failed connection elsewhere answers an upgrade 503 until its
        // checks take the dead gateway out, a socket error on which graphql-ws gives up by default (it
        // retries closes only): behind a balancer, retry both.
        shouldRetry: () => true,
        on: {
          connected: () => void subscriber.connectedAt.push(performance.now()),
          closed: () => void subscriber.closedAt.push(performance.now()),
        },
      });
      subscriber.client.subscribe(
        { query: 'subscription { cardStatusChanged { SvcCardId status } }' },
        {
          next: () => void subscriber.received.push(performance.now()),
          error: (error: unknown) => void subscriber.errors.push(String(error)),
          complete: () => {},
        },
      );
    }
    /** Changes the card through HAProxy's REST front until every subscriber has an event received after `since`. */
    const eventsReachEveryone = async (since: number) => {
      const deadline = Date.now() + 20_000;
      for (let i = 0; subscribers.some((s) => !s.received.some((at) => at > since)) && Date.now() < deadline; i += 1) {
        await statusOf(post(`${restUrl}/cards/${SvcCardId}/${i % 2 === 0 ? 'off' : 'on'}`, {}, { token: userToken }));
        await sleep(250);
      }
      await statusOf(post(`${restUrl}/cards/${SvcCardId}/on`, {}, { token: userToken }));
      return subscribers.map((s) => s.received.some((at) => at > since));
    };
    const disposeAll = async () => {
      for (const subscriber of subscribers) await subscriber.client?.dispose();
      leftGoing.delete(disposeAll);
    };
    leftGoing.add(disposeAll);
    try {
      expect(await eventsReachEveryone(0)).toEqual(subscribers.map(() => true));
      // The gateway holding more of the subscribers' connections is the one to kill (round robin shares them out).
      const sessions = await Promise.all(GATEWAYS.map(async (gateway) => (await running().balancerState(gateway)).sessions));
      const victim: Gateway = sessions[0]! >= sessions[1]! ? 'gateway-1' : 'gateway-2';
      expect(Math.max(...sessions)).toBeGreaterThan(0);

      const retriedBefore = await retriesAway();
      const pid = running().pid(victim)!;
      const load = startLoad();
      await sleep(1000);
      // A crash, not a stop: the cluster did not ask for it, so its supervisor starts the gateway again.
      const killedAt = performance.now();
      process.kill(pid, 'SIGKILL');
      await until(
        () => running().balancerState(victim),
        (state) => state.status.startsWith('DOWN'),
        10_000,
      );
      const downAt = performance.now();
      await sleep(3000);
      const report = await load.stop();
      const retried = (await retriesAway()).map((count, i) => count - retriedBefore[i]!);
      const killed = killedAt - report.startedAt;
      // SIGKILL takes effect as the kernel tears the process down, which takes a moment for one this
      // size: until then its port still takes connections (and requests) that it will never answer.
      const died = exitedAt.get(victim)! - report.startedAt;
      const down = downAt - report.startedAt;
      // Sent before the gateway was gone and not answered when it was killed: on the dying gateway, or on the other.
      const inFlight = report.requests.filter((request) => request.sentAt < died && request.doneAt >= killed);
      const sentUntilDown = report.requests.filter((request) => request.sentAt >= died && request.sentAt < down);
      const failures = failuresOf(report);

      const eventsAfterKill = await eventsReachEveryone(killedAt);
      const reconnected = subscribers.filter((s) => s.closedAt.some((at) => at > killedAt));
      const reconnectMs = reconnected.map((s) => (s.connectedAt.find((at) => at > killedAt) ?? Infinity) - killedAt);
      process.stderr.write(
        `topology: SIGKILL of ${victim}: it was gone ${Math.round(died - killed)} ms after the kill, HAProxy took it out ${Math.round(down - killed)} ms after it; ` +
          `${report.requests.length} requests, ${inFlight.length} in flight as it died, ${sentUntilDown.length} sent between its death and HAProxy taking it out, ${failures.length} failed; ` +
          `HAProxy retried ${retried.join(' and ')} connections to ${GATEWAYS.join(' and ')}; ` +
          `${report.acknowledged.length} writes acknowledged; ${reconnected.length} of ${SUBSCRIBERS} subscribers reconnected in ${reconnectMs.map(Math.round).join(', ')} ms\n`,
      );
      if (failures.length > 0)
        process.stderr.write(
          `topology: failures around the kill at ${Math.round(killed)} ms (gone at ${Math.round(died)} ms): ${JSON.stringify(failures)}\n`,
        );
      expect(down - killed).toBeLessThan(HAPROXY_CHECKS.intervalMs * (HAPROXY_CHECKS.fall + 1) + 1000);
      // Until its checks take the dead gateway out HAProxy still picks it, finds its port shut, and
      // sends the request to the other one: only a request the dead gateway had already received
      // may fail (HAProxy cannot know whether it was acted on, so it does not send it again).
      expect(failures.filter((request) => !inFlight.includes(request))).toEqual([]);
      expect(sentUntilDown.length).toBeGreaterThan(0);
      expect(retried[GATEWAYS.indexOf(victim)]).toBeGreaterThan(0);
      expect(report.requests.filter((request) => request.sentAt >= down).length).toBeGreaterThan(20);
      await expectReadable(report.acknowledged);
      expect(subscribers.flatMap((subscriber) => subscriber.errors)).toEqual([]);
      expect(reconnected.length).toBeGreaterThan(0);
      expect(eventsAfterKill).toEqual(subscribers.map(() => true));
      // Reconnected within HAProxy's time to take the dead gateway out and a few retries.
      expect(Math.max(...reconnectMs)).toBeLessThan(HAPROXY_CHECKS.intervalMs * HAPROXY_CHECKS.fall + 5000);

      // The supervisor logged the death and started the gateway again, on its port, back in rotation.
      expect(unexpectedExits.splice(0)).toEqual([`${victim} killed by SIGKILL`]);
      const health = await until(
        () => statusOf(fetch(`${running().urls[victim]}/health`, { signal: AbortSignal.timeout(2000) })),
        (status) => status === 200,
        180_000,
      );
      const healthyAt = performance.now();
      expect(health).toBe(200);
      expect(running().pid(victim)).not.toBe(pid);
      await until(
        () => running().balancerState(victim),
        (state) => state.status === 'UP',
        30_000,
      );
      process.stderr.write(
        `topology: ${victim} answered /health again ${Math.round(healthyAt - killedAt)} ms after the kill, in rotation ${Math.round(performance.now() - killedAt)} ms after it\n`,
      );
      const ofVictim = clusterLog.filter((line) => line.member === victim);
      expect(ofVictim.map(({ level, service, msg, signal, attempt }) => ({ level, service, msg, signal, attempt }))).toEqual([
        { level: 'warn', service: 'cluster', msg: 'member exited', signal: 'SIGKILL', attempt: 1 },
        { level: 'info', service: 'cluster', msg: 'member restarted', signal: undefined, attempt: 1 },
      ]);
      expect(ofVictim[0]).toMatchObject({ code: null, delayMs: backoffDelay(1) });
      expect(ofVictim[1]?.pid).toBe(running().pid(victim));
    } finally {
      await disposeAll();
    }
  }, 300_000);

  it('gives every subscriber of every transport every event it may see exactly once, in log order, across a rolling restart and a SIGKILL', async () => {
    const { graphqlUrl } = running();
    const bus = createEventBus(REDIS_URL, createLogger('silent'), prefix);
    const transports: SubscriptionTransport[] = ['graphql-ws', 'sse', 'multipart'];
    const subscribers: ResumingSubscriber[] = Array.from({ length: REALTIME_SUBSCRIBERS }, (_, i) =>
      resumingSubscriber(
        transports[i % 3]!,
        graphqlUrl,
        { token: userToken },
        'subscription ($after: String) { cardStatusChanged(after: $after) { SvcCardId status } }',
      ),
    );
    const stopSubscribers = async () => {
      for (const subscriber of subscribers) await subscriber.stop();
      leftGoing.delete(stopSubscribers);
    };
    leftGoing.add(stopSubscribers);
    const stopBus = async () => {
      await bus.close();
      leftGoing.delete(stopBus);
    };
    leftGoing.add(stopBus);
    try {
      await until(
        async () => (await Promise.all(GATEWAYS.map((gateway) => running().balancerState(gateway)))).map((state) => state.status),
        (states) => states.every((status) => status === 'UP'),
        30_000,
      );
      // Every subscriber registered: a first event reaches all of them.
      const ids: string[] = [];
      const publishedAt: number[] = [];
      const publish = async (index: number, mine: boolean) => {
        const id = `evt_realtime_${prefix}${index}`;
        // One in five concerns another user: no subscriber may see it.
        await bus.publish({
          id,
          type: 'card.status',
          audience: { SvcUserId: mine ? DEMO.userId : 'someone_else' },
          payload: { SvcCardId: DEMO.cardIds[0], status: 'active', isActive: true },
          dtsCreated: new Date().toISOString(),
        });
        if (mine) {
          ids.push(id);
          publishedAt.push(performance.now());
        }
      };
      for (let i = 0; subscribers.some((subscriber) => subscriber.positions.length === 0); i += 1) {
        if (i === 200) throw new Error(`subscribers without a first event: ${subscribers.filter((s) => s.positions.length === 0).length}`);
        await publish(-1 - i, true);
        await sleep(100);
      }
      // What arrived before now is left out of the count: a subscriber registered after a warm-up event did not miss it.
      await sleep(1000);
      const skip = subscribers.map((subscriber) => subscriber.positions.length);
      const warmUp = ids.length;
      const load = startLoad();
      const events = REALTIME_RATE * REALTIME_SECONDS;
      const started = performance.now();
      let killedAt = 0;
      let victim: Gateway = 'gateway-1';
      const disruptions = (async () => {
        await sleep(3000);
        for (const gateway of GATEWAYS) {
          expect(await running().stop(gateway)).toBe('exited with 0');
          await running().restart(gateway);
        }
        const sessions = await Promise.all(GATEWAYS.map(async (gateway) => (await running().balancerState(gateway)).sessions));
        victim = sessions[0]! >= sessions[1]! ? 'gateway-1' : 'gateway-2';
        killedAt = performance.now();
        process.kill(running().pid(victim)!, 'SIGKILL');
      })();
      for (let i = 0; i < events; i += 1) {
        const wait = started + (i * 1000) / REALTIME_RATE - performance.now();
        if (wait > 0) await sleep(wait);
        await publish(i, i % 5 !== 4);
      }
      await disruptions;
      const report = await load.stop();
      const expected = ids.length - warmUp;
      const counted = (subscriber: ResumingSubscriber) => subscriber.positions.slice(skip[subscribers.indexOf(subscriber)]);
      await until(
        async () => subscribers.filter((subscriber) => counted(subscriber).length < expected).length,
        (behind) => behind === 0,
        120_000,
      ).catch(() => undefined);

      const byTransport = transports.map((transport) => {
        const of = subscribers.filter((subscriber) => subscriber.transport === transport);
        return { transport, subscribers: of.length, complete: of.filter((subscriber) => counted(subscriber).length === expected).length };
      });
      const reference = counted(subscribers.find((subscriber) => counted(subscriber).length === expected) ?? subscribers[0]!);
      const lost = subscribers.map((subscriber) => expected - new Set(counted(subscriber)).size);
      const duplicated = subscribers.map((subscriber) => counted(subscriber).length - new Set(counted(subscriber)).size);
      // Caught up: from each reconnection to having every event published before it.
      const catchUp: number[] = [];
      const catchUpBy = new Map<SubscriptionTransport, number[]>(transports.map((transport) => [transport, []]));
      /** Multipart: caught up by the time the bytes arrived, before Apollo Client handed them over. */
      const bytesCaughtUp: number[] = [];
      const countedPublishedAt = publishedAt.slice(warmUp);
      for (const [n, subscriber] of subscribers.entries()) {
        const receivedAt = subscriber.receivedAt.slice(skip[n]);
        for (const at of subscriber.reconnectedAt.slice(1)) {
          const due = countedPublishedAt.filter((published) => published < at).length;
          const doneAt = receivedAt[due - 1];
          if (doneAt !== undefined && due > 0) {
            catchUp.push(Math.max(0, doneAt - at));
            catchUpBy.get(subscriber.transport)!.push(Math.max(0, doneAt - at));
            const arrived = subscriber.arrivedAt.get(counted(subscriber)[due - 1]!);
            if (arrived !== undefined) bytesCaughtUp.push(Math.max(0, arrived - at));
          }
        }
      }
      catchUp.sort((a, b) => a - b);
      const p = (q: number) => Math.round(catchUp[Math.min(catchUp.length - 1, Math.floor(q * catchUp.length))] ?? 0);
      const died = exitedAt.get(victim)! - report.startedAt;
      const killed = killedAt - report.startedAt;
      const inFlight = report.requests.filter((request) => request.sentAt < died && request.doneAt >= killed);
      const failures = failuresOf(report);
      process.stderr.write(
        `topology: realtime: ${REALTIME_SUBSCRIBERS} subscribers (${byTransport.map((t) => `${t.transport} ${t.complete}/${t.subscribers} complete`).join(', ')}), ` +
          `${expected} events each may see (${events} published at ${REALTIME_RATE}/s, one in five for another user); both gateways restarted, then ${victim} killed; ` +
          `lost ${lost.reduce((a, b) => a + b, 0)}, duplicated ${duplicated.reduce((a, b) => a + b, 0)}; ` +
          `${catchUp.length} reconnections, caught up p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${p(1)} ms; ` +
          `HTTP: ${report.requests.length} requests, ${failures.length} failed, ${inFlight.length} in flight at the kill\n`,
      );
      for (const [transport, times] of catchUpBy) {
        times.sort((a, b) => a - b);
        process.stderr.write(
          `topology: realtime: ${transport}: ${times.length} reconnections, caught up p50 ${Math.round(times[Math.floor(times.length / 2)] ?? 0)} ms, p99 ${Math.round(times[Math.floor(times.length * 0.99)] ?? 0)} ms\n`,
        );
      }
      bytesCaughtUp.sort((a, b) => a - b);
      process.stderr.write(
        `topology: realtime: multipart, by the bytes' arrival: ${bytesCaughtUp.length} reconnections, caught up p50 ${Math.round(bytesCaughtUp[Math.floor(bytesCaughtUp.length / 2)] ?? 0)} ms, p99 ${Math.round(bytesCaughtUp[Math.floor(bytesCaughtUp.length * 0.99)] ?? 0)} ms\n`,
      );
      if (failures.length > 0)
        process.stderr.write(
          `topology: realtime: failures (kill at ${Math.round(killed)} ms, gone at ${Math.round(died)} ms): ${JSON.stringify(failures.slice(0, 12))}\n`,
        );
      expect(subscribers.flatMap((subscriber) => subscriber.errors)).toEqual([]);
      expect(lost.every((count) => count === 0)).toBe(true);
      expect(duplicated.every((count) => count === 0)).toBe(true);
      // Every subscriber has the same events in the same order: the log's.
      for (const subscriber of subscribers) expect(counted(subscriber)).toEqual(reference);
      expect([...reference].sort(comparePositions)).toEqual(reference);
      expect(catchUp.length).toBeGreaterThan(REALTIME_SUBSCRIBERS);
      expect(failures.filter((request) => !inFlight.includes(request))).toEqual([]);
      expect(unexpectedExits.splice(0)).toEqual([`${victim} killed by SIGKILL`]);
      await until(
        () => running().balancerState(victim),
        (state) => state.status === 'UP',
        180_000,
      );
    } finally {
      await stopSubscribers();
      await stopBus();
    }
  }, 600_000);
});
