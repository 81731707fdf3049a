import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAuthenticator } from '../../gateway/src/authenticate.js';
import { loadConfig } from '../../platform/runtime/config.js';
import { InProcessBus, RedisBus, type BusEvent, type EventBus } from '../../platform/messaging/event-bus.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { SESSION_RESOLVE_PATH, type Principal, type ResolvedSession } from '../../platform/contracts/principal.js';
import { SESSIONS_ENDED, type SessionsEnded } from '../../platform/contracts/events.js';

const SECRET = 's'.repeat(40);
const USER: Principal = { kind: 'user', userId: 'usr_1', sessionId: 'ses_1', channel: 'internet' };
const AGGREGATOR: Principal = { kind: 'aggregator', svcAggregatorId: 'agg_1', login: 'ops@agg', sessionId: 'ses_2', tokenType: 'base' };

describe("the gateway's memory of live sessions", () => {
  let server: http.Server;
  let base: string;
  const sessions = new Map<string, ResolvedSession>();
  let reads = 0;
  /** Held reads: each read waits for `release` when set. */
  let hold: Promise<void> | null = null;

  beforeAll(async () => {
    // A stand-in for the user subgraph's session route: answers what `sessions` says, and counts the reads.
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url !== SESSION_RESOLVE_PATH) return void res.writeHead(404).end();
        reads += 1;
        const { token } = JSON.parse(body) as { token: string };
        const answer = sessions.get(token) ?? { principal: null };
        void (hold ?? Promise.resolve()).then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(() => {
    sessions.clear();
    reads = 0;
    hold = null;
    vi.useRealTimers();
  });

  const config = (sessionCacheSeconds = 30) => {
    const loaded = loadConfig({ INTERNAL_SECRET: SECRET, SESSION_CACHE_SECONDS: String(sessionCacheSeconds), IN_PROCESS_CALLS: 'none' });
    return { ...loaded, subgraphUrls: { ...loaded.subgraphUrls, user: `${base}/graphql` } };
  };
  const live = (token: string, principal: Principal, lifetimeMs = 3_600_000) =>
    sessions.set(token, { principal, dtsExpiry: new Date(Date.now() + lifetimeMs).toISOString() });
  const announce = (bus: EventBus, ended: SessionsEnded) =>
    bus.publish({
      id: `evt_${Math.random()}`,
      type: SESSIONS_ENDED,
      audience: {},
      payload: ended,
      dtsCreated: new Date().toISOString(),
    } satisfies BusEvent);
  const refused = (promise: Promise<unknown>) => expect(promise).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });

  it('answers a session found live from memory, then reads it again once its end is announced', async () => {
    const bus = new InProcessBus();
    const authenticate = createAuthenticator(config(), bus);
    live('tok-user', USER);
    expect(await authenticate({ token: 'tok-user' }, 'r1')).toEqual(USER);
    expect(await authenticate({ token: 'tok-user' }, 'r2')).toEqual(USER);
    expect(await authenticate.early({ token: 'tok-user' }, 'r3')).toEqual({ principal: USER, confirmed: null });
    expect(reads).toBe(1);
    sessions.delete('tok-user');
    await announce(bus, { sessionId: 'ses_1' });
    await refused(authenticate({ token: 'tok-user' }, 'r4'));
    expect(reads).toBe(2);
  });

  it('ends every session of a blocked user and of an aggregator user whose tokens were revoked, and no other', async () => {
    const bus = new InProcessBus();
    const authenticate = createAuthenticator(config(), bus);
    const other: Principal = { ...USER, userId: 'usr_2', sessionId: 'ses_3' };
    live('tok-user', USER);
    live('tok-aggregator', AGGREGATOR);
    live('tok-other', other);
    for (const [header, token] of [
      ['token', 'tok-user'],
      ['x-svc-token', 'tok-aggregator'],
      ['token', 'tok-other'],
    ] as const)
      await authenticate({ [header]: token }, 'r');
    expect(reads).toBe(3);
    await announce(bus, { SvcUserId: 'usr_1' });
    await announce(bus, { aggregatorLogin: 'ops@agg' });
    await authenticate({ token: 'tok-user' }, 'r');
    await authenticate({ 'x-svc-token': 'tok-aggregator' }, 'r');
    await authenticate({ token: 'tok-other' }, 'r');
    expect(reads).toBe(5);
  });

  it("reads again past the session's expiry and past SESSION_CACHE_SECONDS, whichever comes first, and a clock set back stretches neither", async () => {
    vi.useFakeTimers({ toFake: ['Date', 'performance'] });
    const bus = new InProcessBus();
    const authenticate = createAuthenticator(config(2), bus);
    live('tok-short', USER, 500);
    live('tok-long', AGGREGATOR);
    await authenticate({ token: 'tok-short' }, 'r');
    await authenticate({ 'x-svc-token': 'tok-long' }, 'r');
    vi.advanceTimersByTime(400);
    await authenticate({ token: 'tok-short' }, 'r');
    await authenticate({ 'x-svc-token': 'tok-long' }, 'r');
    expect(reads).toBe(2);
    vi.advanceTimersByTime(200);
    sessions.delete('tok-short');
    await refused(authenticate({ token: 'tok-short' }, 'r'));
    expect(reads).toBe(3);
    // The wall clock set back an hour: the memory's own age still counts on the monotonic clock.
    vi.setSystemTime(Date.now() - 3_600_000);
    vi.advanceTimersByTime(1500);
    await authenticate({ 'x-svc-token': 'tok-long' }, 'r');
    expect(reads).toBe(4);
  });

  it("forgets the caller's own session when told to (an operation that ends it has run), and stops listening when closed", async () => {
    const bus = new InProcessBus();
    const authenticate = createAuthenticator(config(), bus);
    live('tok-user', USER);
    live('tok-other', { ...USER, userId: 'usr_2', sessionId: 'ses_3' });
    await authenticate({ token: 'tok-user' }, 'r');
    await authenticate({ token: 'tok-other' }, 'r');
    authenticate.forget({ token: 'tok-user' });
    await authenticate({ token: 'tok-user' }, 'r');
    await authenticate({ token: 'tok-other' }, 'r');
    expect(reads).toBe(3);
    authenticate.close();
    await announce(bus, { SvcUserId: 'usr_2' });
    await authenticate({ token: 'tok-other' }, 'r');
    expect(reads).toBe(3);
  });

  it('reads every time without a bus, with SESSION_CACHE_SECONDS=0, and while the bus may be missing events', async () => {
    live('tok-user', USER);
    const withoutBus = createAuthenticator(config());
    const turnedOff = createAuthenticator(config(0), new InProcessBus());
    let continuity: number | null = null;
    const away: EventBus = {
      publish: async () => {},
      subscribe: () => () => {},
      close: async () => {},
      continuity: () => continuity,
      ready: async () => {},
      position: () => null,
      read: async () => null,
    };
    const whileAway = createAuthenticator(config(), away);
    for (const authenticate of [withoutBus, turnedOff, whileAway]) {
      await authenticate({ token: 'tok-user' }, 'r');
      await authenticate({ token: 'tok-user' }, 'r');
    }
    expect(reads).toBe(6);
    // Back: kept under this continuity, and read again once it changes (events may have been missed in between).
    continuity = 1;
    await whileAway({ token: 'tok-user' }, 'r');
    await whileAway({ token: 'tok-user' }, 'r');
    expect(reads).toBe(7);
    continuity = 2;
    await whileAway({ token: 'tok-user' }, 'r');
    expect(reads).toBe(8);
  });

  it('does not keep a session whose read an announcement overtook', async () => {
    const bus = new InProcessBus();
    const authenticate = createAuthenticator(config(), bus);
    live('tok-user', USER);
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const reading = authenticate({ token: 'tok-user' }, 'r1');
    await vi.waitFor(() => expect(reads).toBe(1));
    // Revoked after the store answered "live", announced before the answer arrived.
    sessions.delete('tok-user');
    await announce(bus, { sessionId: 'ses_1' });
    release();
    expect(await reading).toEqual(USER);
    hold = null;
    await refused(authenticate({ token: 'tok-user' }, 'r2'));
    expect(reads).toBe(2);
  });

  it('over Redis: holds sessions across a reconnection that lost nothing, and applies what was announced while away', async () => {
    const logger = createLogger('silent');
    const channel = `test-sessions-${Date.now()}-${Math.random()}`;
    const gatewayBus = new RedisBus('redis://127.0.0.1:6379', logger, channel);
    const userBus = new RedisBus('redis://127.0.0.1:6379', logger, channel);
    const admin = new Redis('redis://127.0.0.1:6379');
    /** Cuts the gateway's reader connection (only this bus's: other suites share the Redis). */
    const cutReader = async () => {
      const id = await vi.waitFor(async () => {
        const clients = (await admin.client('LIST')) as string;
        const found = /id=(\d+) /.exec(clients.split('\n').find((line) => line.includes(`name=${channel}:reader `)) ?? '')?.[1];
        expect(found).toBeDefined();
        return found!;
      });
      await admin.client('KILL', 'ID', id);
      // Held as behind from when the reader notices, until it has caught up.
      await vi.waitFor(() => expect(gatewayBus.continuity()).toBeNull(), { interval: 2 });
    };
    try {
      const authenticate = createAuthenticator(config(), gatewayBus);
      await vi.waitFor(() => expect(gatewayBus.continuity()).not.toBeNull());
      live('tok-user', USER);
      await authenticate({ token: 'tok-user' }, 'r');
      await authenticate({ token: 'tok-user' }, 'r');
      expect(reads).toBe(1);
      // An announcement from another process ends it.
      await announce(userBus, { sessionId: 'ses_1' });
      await vi.waitFor(async () => {
        await authenticate({ token: 'tok-user' }, 'r');
        expect(reads).toBeGreaterThan(1);
      });
      const before = gatewayBus.continuity();
      const readsBefore = reads;
      await authenticate({ token: 'tok-user' }, 'r');
      expect(reads).toBe(readsBefore);
      // The reader's connection is cut and nothing is announced meanwhile: once it is back under the same number, memory still answers.
      await cutReader();
      await vi.waitFor(() => expect(gatewayBus.continuity()).toBe(before), { timeout: 10_000 });
      await authenticate({ token: 'tok-user' }, 'r');
      expect(reads).toBe(readsBefore);
      // Cut again, and the session ended while the reader is away: read on its return, the announcement still ends it.
      await cutReader();
      await announce(userBus, { sessionId: 'ses_1' });
      await vi.waitFor(() => expect(gatewayBus.continuity()).toBe(before), { timeout: 10_000 });
      await authenticate({ token: 'tok-user' }, 'r');
      await authenticate({ token: 'tok-user' }, 'r');
      expect(reads).toBe(readsBefore + 1);
    } finally {
      admin.disconnect();
      await gatewayBus.close();
      await userBus.close();
    }
  });
});
