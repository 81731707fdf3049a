import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { start as startGateway, type GatewayService } from '../../gateway/src/index.js';
import { DEMO } from '../../platform/domain/demo.js';
import type { HttpService } from '../../platform/http/server.js';
import { createEventBus, type EventBus } from '../../platform/messaging/event-bus.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { start as startRestAdapter } from '../../rest-adapter/src/index.js';
import { haproxyConfig, HAPROXY_BIN } from '../../scripts/lib/haproxy.js';
import { subgraphUrlsOf } from '../../scripts/stack.js';
import { ensureDebianPackage } from '../support/debian.js';
import { startTestStack, until, type TestStack } from '../support/harness.js';
import { freePort } from '../../platform/mongo/ferretdb.js';
import { configFor } from '../../platform/runtime/config-slices.js';

// Two gateways and two REST adapters behind one HAProxy (Debian's package), as a deployment runs
// replicas behind a load balancer: each replica with its own Redis connection, as a process of
// its own would have, every call between them over HTTP.
const REDIS_URL = 'redis://127.0.0.1:6379';

describe('replicas behind a load balancer', () => {
  let stack: TestStack;
  let secondGateway: GatewayService | undefined;
  let secondAdapter: HttpService | undefined;
  let secondBus: EventBus | undefined;
  let haproxy: ChildProcess | undefined;
  let dir: string | undefined;
  let restUrl: string;
  let graphqlUrl: string;
  const secondLogs: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    await ensureDebianPackage(HAPROXY_BIN, 'haproxy');
    stack = await startTestStack({ REDIS_URL, IN_PROCESS_CALLS: 'none', RATE_LIMIT_PER_CREDENTIAL: '100' });
    const logger = createLogger('info', {}, (line) => secondLogs.push(JSON.parse(line) as Record<string, unknown>));
    secondBus = createEventBus(REDIS_URL, logger, stack.config.dbPrefix);
    const [restPort, graphqlPort] = [await freePort(), await freePort()];
    restUrl = `http://127.0.0.1:${restPort}`;
    graphqlUrl = `http://127.0.0.1:${graphqlPort}/graphql`;
    const gateway = await startGateway({
      config: configFor('gateway', { ...stack.config, subgraphUrls: subgraphUrlsOf(stack.subgraphs) }),
      logger,
      bus: secondBus,
      port: 0,
    });
    secondGateway = gateway;
    const adapter = await startRestAdapter({
      config: configFor('rest-adapter', { ...stack.config, gatewayUrl: graphqlUrl }),
      logger,
      port: 0,
    });
    secondAdapter = adapter;
    dir = await mkdtemp(path.join(tmpdir(), 'banking-graph-haproxy-'));
    const config = path.join(dir, 'haproxy.cfg');
    await writeFile(
      config,
      haproxyConfig([
        {
          name: 'rest',
          port: restPort,
          servers: [stack.restAdapter.port, adapter.port].map((port, i) => ({ name: `adapter${i + 1}`, port })),
        },
        {
          name: 'graphql',
          port: graphqlPort,
          servers: [stack.gateway.port, gateway.port].map((port, i) => ({ name: `gateway${i + 1}`, port })),
        },
      ]),
    );
    haproxy = spawn(HAPROXY_BIN, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let haproxyErrors = '';
    haproxy.stderr?.on('data', (chunk: Buffer) => (haproxyErrors += chunk.toString()));
    haproxy.once('error', (error) => (haproxyErrors += error.message));
    const child = haproxy;
    process.once('exit', () => child.kill('SIGKILL'));
    const throughHaproxy = (url: string) =>
      until(
        () =>
          fetch(url).then(
            (r) => r.status,
            () => 0,
          ),
        (status) => status === 200,
        10_000,
      ).catch((error: unknown) => {
        throw new Error(`HAProxy did not serve ${url}: ${(error as Error).message}; ${haproxyErrors}`);
      });
    await throughHaproxy(`${restUrl}/ready`);
    await throughHaproxy(graphqlUrl.replace('/graphql', '/ready'));
  }, 240_000);
  afterAll(async () => {
    haproxy?.kill('SIGKILL');
    await secondAdapter?.close();
    await secondGateway?.close();
    await secondBus?.close();
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const login = async () => {
    const answer = await fetch(`${restUrl}/token`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' }),
    });
    expect(answer.status).toBe(200);
    return ((await answer.json()) as { token: string }).token;
  };
  const restrictions = (token: string) => fetch(`${restUrl}/restrictions`, { headers: { token } }).then((r) => r.status);
  const servedBy = (logs: Array<Record<string, unknown>>, service: string) =>
    logs.filter((line) => line.service === service && line.msg === 'request' && line.path === '/restrictions').length;

  it('serves one session on every replica, and a logout on one ends it on all', async () => {
    const token = await login();
    const statuses = await Promise.all(Array.from({ length: 20 }, () => restrictions(token)));
    expect(statuses).toEqual(Array.from({ length: 20 }, () => 200));
    expect(servedBy(stack.logs, 'rest-adapter')).toBeGreaterThan(0);
    expect(servedBy(secondLogs, 'rest-adapter')).toBeGreaterThan(0);

    const logout = await fetch(`${restUrl}/token`, { method: 'DELETE', headers: { token } });
    expect(logout.status).toBe(200);
    // Every replica refuses it once the announcement has crossed Redis, and keeps refusing it.
    await until(
      async () => Promise.all(Array.from({ length: 4 }, () => restrictions(token))),
      (seen) => seen.every((status) => status === 401),
      5000,
    );
    expect(await Promise.all(Array.from({ length: 20 }, () => restrictions(token)))).toEqual(Array.from({ length: 20 }, () => 401));
  });

  it('carries a subscription over the load balancer, with events from whichever replica the change went through', async () => {
    const token = await login();
    const SvcCardId = DEMO.cardIds[0];
    const received: unknown[] = [];
    const client = createClient({
      url: graphqlUrl.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { token },
      retryAttempts: 0,
    });
    try {
      client.subscribe(
        { query: 'subscription { cardStatusChanged { SvcCardId status } }' },
        { next: (value) => void received.push(value), error: () => {}, complete: () => {} },
      );
      const deadline = Date.now() + 20_000;
      for (let i = 0; received.length === 0 && Date.now() < deadline; i += 1) {
        await fetch(`${restUrl}/cards/${SvcCardId}/${i % 2 === 0 ? 'off' : 'on'}`, { method: 'POST', headers: { token } });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await fetch(`${restUrl}/cards/${SvcCardId}/on`, { method: 'POST', headers: { token } });
      expect(JSON.stringify(received[0])).toContain(SvcCardId);
    } finally {
      await client.dispose();
    }
  });

  it("ends a logged-out session's subscriptions on both replicas as the logout is answered, and delivers them nothing after it", async () => {
    const token = await login();
    const before = [stack.gateway.subscribers(), secondGateway!.subscribers()] as const;
    // Six sockets through the load balancer, which deals them to both gateways in turn.
    const clients = Array.from({ length: 6 }, () =>
      createClient({
        url: graphqlUrl.replace('http', 'ws'),
        webSocketImpl: WebSocket,
        connectionParams: { token },
        retryAttempts: 0,
        lazy: false,
        onNonLazyError: () => {},
      }),
    );
    const closes = clients.map(
      (client) =>
        new Promise<{ code: number; at: number }>((resolve) =>
          client.on('closed', (event) => resolve({ code: (event as { code: number }).code, at: performance.now() })),
        ),
    );
    const deliveries: number[] = [];
    try {
      for (const client of clients)
        client.subscribe(
          { query: 'subscription { cardStatusChanged { SvcCardId status } }' },
          { next: () => void deliveries.push(performance.now()), error: () => {}, complete: () => {} },
        );
      const registered = await until(
        async () => ({ first: stack.gateway.subscribers() - before[0], second: secondGateway!.subscribers() - before[1] }),
        ({ first, second }) => first + second === clients.length,
        10_000,
      );
      expect(registered.first > 0 && registered.second > 0).toBe(true);
      const other = await login();
      const logout = await fetch(`${restUrl}/token`, { method: 'DELETE', headers: { token } });
      const answered = performance.now();
      expect(logout.status).toBe(200);
      // Changes right after the logout, through another session of the same user: events its subscriptions would have carried.
      for (const onoff of ['off', 'on'])
        expect((await fetch(`${restUrl}/cards/${DEMO.cardIds[0]}/${onoff}`, { method: 'POST', headers: { token: other } })).status).toBe(
          200,
        );
      const closed = await Promise.all(closes);
      expect(closed.map((close) => close.code)).toEqual(clients.map(() => 4401));
      // Closed by the announcement, not by the periodic recheck (a minute).
      expect(Math.max(...closed.map((close) => close.at - answered))).toBeLessThan(5_000);
      expect(deliveries.filter((at) => at > answered)).toEqual([]);
    } finally {
      for (const client of clients) await client.dispose();
    }
  });

  const graphql = (token: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    fetch(graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', token, ...headers },
      body: JSON.stringify({ query, variables }),
    });
  /** Which gateway answered each request, by the request id it echoed: 1 for the stack's, 2 for the second. */
  const gatewayOf = (answer: Response) => {
    const requestId = answer.headers.get('x-request-id');
    const answered = (logs: Array<Record<string, unknown>>) =>
      logs.some((line) => line.service === 'gateway' && line.msg === 'request' && line.requestId === requestId);
    return answered(stack.logs) ? 1 : answered(secondLogs) ? 2 : 0;
  };

  it('counts a rate limit across both gateways', async () => {
    // A user of its own: the limit counts each root field per user.
    const token = await stack.issueUserToken(DEMO.friendUserId);
    const answers = await Promise.all(Array.from({ length: 100 }, () => graphql(token, '{ me { firstName } }')));
    expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
    expect(new Set(answers.map(gatewayOf))).toEqual(new Set([1, 2]));
    // The 101st of this user and field is refused, whichever gateway it reaches.
    const refused = await Promise.all([graphql(token, '{ me { firstName } }'), graphql(token, '{ me { firstName } }')]);
    expect(refused.map((answer) => answer.status)).toEqual([429, 429]);
    expect(new Set(refused.map(gatewayOf))).toEqual(new Set([1, 2]));
  });

  it('replays an Idempotency-Key on the other gateway', async () => {
    const token = await login();
    const MODIFY =
      'mutation ($id: ID!, $input: BeneficiaryInput!) { modifyBeneficiary(SvcBeneficiaryId: $id, input: $input) { undo { id } } }';
    const variables = { id: 'demo_beneficiary_2', input: { name: 'Sam Replica' } };
    const first = await graphql(token, MODIFY, variables, { 'idempotency-key': 'replica-key-1' });
    const again = await graphql(token, MODIFY, variables, { 'idempotency-key': 'replica-key-1' });
    // HAProxy's round robin sent one to each gateway.
    expect(new Set([gatewayOf(first), gatewayOf(again)])).toEqual(new Set([1, 2]));
    expect(first.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const undoOf = async (answer: Response) =>
      ((await answer.json()) as { data: { modifyBeneficiary: { undo: { id: string } } } }).data.modifyBeneficiary.undo.id;
    expect(await undoOf(again)).toBe(await undoOf(first));
  });

  it('takes a draining gateway out of rotation before it closes: no request fails', async () => {
    const token = await login();
    const query = () =>
      fetch(graphqlUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', token },
        body: JSON.stringify({ query: '{ alerts { name } }' }),
      }).then(
        (r) => r.status,
        () => 0,
      );
    const statuses: number[] = [];
    const run = { sending: true };
    const load = (async () => {
      // Paced, so that the load stays under the rate limit this stack counts.
      while (run.sending) {
        statuses.push(await query());
        await new Promise((resolve) => setTimeout(resolve, 60));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await secondGateway!.drain(4000);
    await secondGateway!.close();
    secondGateway = undefined;
    await new Promise((resolve) => setTimeout(resolve, 500));
    run.sending = false;
    await load;
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });
});
