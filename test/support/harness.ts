import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { backgroundAuditTrail } from '../../platform/messaging/audit.js';
import { outboxCollection } from '../../platform/messaging/outbox.js';
import { loadConfig, type Config } from '../../platform/runtime/config.js';
import { createLogger, type Logger } from '../../platform/runtime/logger.js';
import { connectMongo, type Mongo } from '../../platform/mongo/mongo.js';
import { EVERY_PORT_FREE, seedDemo, startStack, type Stack } from '../../scripts/stack.js';
import { announceThrough, Sessions, type SessionSubject } from '../../subgraphs/user/src/auth/sessions.js';
import { authCollections } from '../../subgraphs/user/src/auth/datasource.js';
import { OfflineGeocoder } from '../../subgraphs/user/src/geocode/offline.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { contractChecker } from './contract.js';

/** A JSON response as a test reads it. */
export interface JsonResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** A GraphQL response body. */
export interface GraphQLBody<TData = Record<string, unknown>> {
  data?: TData | null;
  errors?: Array<{ message: string; extensions?: { code?: string; field?: string } }>;
}

/** A whole stack on free ports over its own databases, with helpers to call it. */
export interface TestStack extends Stack {
  /** Log lines every service wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  /** Calls the REST adapter with a JSON body; every answer is checked against the OpenAPI document. */
  rest<T = Record<string, unknown>>(
    method: string,
    path: string,
    options?: { headers?: Record<string, string>; body?: unknown; rawBody?: string },
  ): Promise<JsonResponse<T>>;
  /** Calls the REST adapter with any body (multipart, none); the answer is checked against the OpenAPI document. */
  restFetch(path: string, init?: RequestInit): Promise<Response>;
  graphql<TData = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<JsonResponse<GraphQLBody<TData>>>;
  /** Logs the demo user in over the internet channel and returns the token. */
  loginDemo(): Promise<string>;
  /** A token for any session subject, issued directly in the database as the user subgraph issues them (audited as the service `test`). */
  issueToken(subject: SessionSubject, lifetimeSeconds?: number): Promise<string>;
  /** An end-user token for any stored user (internet channel), issued the same way. */
  issueUserToken(SvcUserId: string, lifetimeSeconds?: number): Promise<string>;
  /** Waits until every audit record stored so far has reached the audit log (each subgraph forwards its own, through its outbox). */
  auditForwarded(): Promise<void>;
}

/**
 * Starts the four subgraphs, the gateway and the REST adapter on free loopback ports, over
 * fresh databases (a random prefix) on the run's database server, with the demo data loaded.
 */
export async function startTestStack(env: Record<string, string> = {}): Promise<TestStack> {
  const config: Config = loadConfig({
    NODE_ENV: 'test',
    MONGODB_URI: inject('mongodbUri'),
    MONGODB_DB_PREFIX: `t${randomBytes(4).toString('hex')}_`,
    ...EVERY_PORT_FREE,
    LOG_LEVEL: 'info',
    // Tests that geocode pass GEOCODER_PRELOAD=true (the indexes are built before they start); the others need not pay for them.
    GEOCODER_PRELOAD: 'false',
    // The suites log in and call from one address far more often than a client would;
    // test/gateway/rate-limits.e2e.ts checks the limits themselves with small values.
    RATE_LIMIT_PER_CREDENTIAL: '1000000',
    RATE_LIMIT_PER_ADDRESS: '1000000',
    RATE_LIMIT_SENSITIVE: '1000000',
    RATE_LIMIT_REQUESTS_PER_CREDENTIAL: '1000000',
    RATE_LIMIT_REQUESTS_PER_ADDRESS: '1000000',
    ...env,
  });
  const logs: Array<Record<string, unknown>> = [];
  const logger: Logger = createLogger(config.logLevel, {}, (line) => {
    logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  const mongo: Mongo = await connectMongo(config.mongodbUri!, config.dbPrefix);
  await seedDemo(mongo);
  const stack = await startStack(config, logger, mongo);
  // Built here, before any request: built by a request instead, the build (seconds on a busy machine) stalls
  // the event loop long enough for another request's session read beside it to time out.
  if (config.geocoderPreload) await new OfflineGeocoder().warmUp();

  const json = async <T>(response: Response): Promise<JsonResponse<T>> => {
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: (text === '' ? null : JSON.parse(text)) as T };
  };
  /** Fetches from the adapter and checks the answer against the contract before the test sees it. */
  const restFetch = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const response = await fetch(`${stack.restAdapter.url}${path}`, init);
    const text = await response.text();
    contractChecker().check(init.method ?? 'GET', path, response.status, response.headers, text);
    return new Response(text === '' ? null : text, { status: response.status, headers: response.headers });
  };
  const testStack: TestStack = {
    ...stack,
    logs,
    rest: async (method, path, options = {}) =>
      json(
        await restFetch(path, {
          method,
          headers: { 'content-type': 'application/json', ...options.headers },
          body: options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
        }),
      ),
    restFetch,
    graphql: async (query, variables, headers = {}) =>
      json(
        await fetch(`${stack.gateway.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ query, variables }),
        }),
      ),
    loginDemo: async () => {
      const response = await testStack.rest<{ token: string }>('PUT', '/token', {
        body: { channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' },
      });
      if (response.status !== 200) throw new Error(`demo login failed: ${response.status} ${JSON.stringify(response.body)}`);
      return response.body.token;
    },
    issueToken: async (subject, lifetimeSeconds = 600) => {
      const audit = backgroundAuditTrail(mongo.db('user'), logger, { kind: 'service', service: 'test' });
      const sessions = new Sessions(
        authCollections(mongo.db('user')).sessions,
        usersCollection(mongo.db('user')),
        audit,
        announceThrough(mongo.db('user')),
      );
      return (await sessions.issue(subject, lifetimeSeconds)).token;
    },
    issueUserToken: (SvcUserId, lifetimeSeconds) => testStack.issueToken({ kind: 'user', SvcUserId, channel: 'internet' }, lifetimeSeconds),
    auditForwarded: async () => {
      const pending = () =>
        Promise.all(
          (['user', 'cards', 'payments'] as const).map((name) =>
            outboxCollection(mongo.db(name)).countDocuments({ type: 'audit.recorded', dtsForwarded: null }),
          ),
        );
      await until(pending, (counts) => counts.every((count) => count === 0));
    },
    stop: async () => {
      await stack.stop();
      for (const name of ['user', 'cards', 'payments', 'compliance'] as const) await mongo.db(name).dropDatabase();
      await mongo.close();
    },
  };
  return testStack;
}

/** Polls `read` until `done` holds and returns that value; fails after `timeoutMs` with the last value seen. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in time: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Turns a card off and on (through the REST adapter) until `arrived()` holds, and leaves it on: a
 * subscription is registered a moment after its acknowledgement, longer on a loaded machine, so
 * a test waits for a change to reach it rather than for a fixed time.
 */
export async function toggleCardUntil(
  stack: TestStack,
  token: string,
  SvcCardId: string,
  arrived: () => boolean,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; !arrived() && Date.now() < deadline; i += 1) {
    await stack.rest('POST', `/cards/${SvcCardId}/${i % 2 === 0 ? 'off' : 'on'}`, { headers: { token } });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stack.rest('POST', `/cards/${SvcCardId}/on`, { headers: { token } });
}
