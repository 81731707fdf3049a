import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { cardsCollection } from '../../subgraphs/cards/src/cards/datasource.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { DEFAULT_PRODUCTION_METRICS_PORT, loadConfig } from '../../platform/runtime/config.js';
import { startMetricsListener } from '../../platform/telemetry/observe.js';
import { startTestStack, type TestStack } from '../support/harness.js';

/** A stored card that breaks the schema (no status): reading it is an unexpected, internal error. */
async function storeBrokenCard(stack: TestStack): Promise<void> {
  const cards = cardsCollection(stack.mongo.db('cards'));
  const card = await cards.findOne({ _id: DEMO.cardIds[0] });
  const { status: _dropped, ...broken } = card!;
  await cards.insertOne({ ...broken, _id: 'broken_card', SvcCardId: 'broken_card', isMain: false } as typeof card & object);
}

/** Checks that an unexpected error answers generically over GraphQL and REST, and is logged in full with its request id. */
async function expectGenericUnexpectedError(stack: TestStack, token: string): Promise<void> {
  const requestId = `req_unexpected_${Date.now()}`;
  const graphql = await stack.graphql<{ me: { cards: unknown } }>(
    '{ me { firstName cards { SvcCardId status } } }',
    {},
    { token, 'x-request-id': requestId },
  );
  expect(graphql.body.data?.me.cards).toBeNull();
  const error = graphql.body.errors?.[0];
  expect(error?.message).toBe('Internal server error');
  expect(error?.extensions?.code).toBe('INTERNAL');
  expect(JSON.stringify(graphql.body)).not.toMatch(/Card\.status|non-nullable|stacktrace|at .*\.js|node_modules|127\.0\.0\.1/);
  const logged = stack.logs.filter((line) => line.requestId === requestId && JSON.stringify(line).includes('Card.status'));
  expect(logged.length, 'the detail is logged with the request id').toBeGreaterThan(0);

  const rest = await stack.rest<{ error: { code: string; message: string } }>('POST', '/cards/broken_card', {
    headers: { token },
    body: { name: 'Renamed' },
  });
  expect(rest.status).toBe(500);
  expect(rest.body.error.message).not.toMatch(/Card\.status|non-nullable|stack/);
}

describe('a development deployment (the default of npm start)', () => {
  let stack: TestStack;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack({ NODE_ENV: 'development', OUTBOX_DIR: path.join(tmpdir(), 'banking-graph-outbox') });
    token = await stack.loginDemo();
    await storeBrokenCard(stack);
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('answers an unexpected error with a generic message and no stack trace too', async () => {
    await expectGenericUnexpectedError(stack, token);
  });
});

describe('a production deployment', () => {
  let stack: TestStack;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack({
      NODE_ENV: 'production',
      INTERNAL_SECRET: 'p'.repeat(40),
      SEED_DEMO: 'true',
      OUTBOX_DIR: path.join(tmpdir(), 'banking-graph-outbox'),
    });
    token = await stack.loginDemo();
    await storeBrokenCard(stack);
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('refuses introspection and serves no GraphQL IDE', async () => {
    const introspection = await stack.graphql('{ __schema { types { name } } }', {}, { token });
    expect(introspection.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(introspection.body.data ?? null).toBeNull();
    expect((await fetch(`${stack.gateway.url}/graphiql`)).status).toBe(404);
    // A misspelt field gets no "Did you mean" hint, which would map the schema field by field.
    const misspelt = await stack.graphql('{ me { firstNam } }', {}, { token });
    expect(misspelt.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(JSON.stringify(misspelt.body)).not.toContain('firstName');
  });

  it('answers an unexpected error with a generic message, no stack trace and no internals, and logs it', async () => {
    await expectGenericUnexpectedError(stack, token);
  });

  it('serves /metrics and /dependencies on the metrics port only, never on a public port', async () => {
    expect(stack.config.metricsPort).toBe(DEFAULT_PRODUCTION_METRICS_PORT);
    for (const service of [stack.gateway, stack.restAdapter, ...Object.values(stack.subgraphs)]) {
      for (const route of ['/metrics', '/dependencies'])
        expect((await fetch(`${service.url}${route}`)).status, `${service.url}${route}`).toBe(404);
    }
    // The process's metrics listener (on a free port here, not 9464) answers both.
    const listener = await startMetricsListener(0, '127.0.0.1', createLogger('silent'));
    try {
      const metrics = await fetch(`${listener.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('http_server_request_duration_seconds');
      const dependencies = await fetch(`${listener.url}/dependencies`);
      expect(dependencies.status).toBe(200);
      expect(await dependencies.json()).toEqual({ user: 'ready', cards: 'ready', payments: 'ready', compliance: 'ready' });
    } finally {
      await listener.close();
    }
    // METRICS_PORT still chooses the port; production has one either way.
    expect(loadConfig({ NODE_ENV: 'production', INTERNAL_SECRET: 'p'.repeat(40), METRICS_PORT: '9100' }).metricsPort).toBe(9100);
  });

  it('refuses a request body over the limit with 413 before reading it whole', async () => {
    const response = await fetch(`${stack.gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"query":"${'x'.repeat(stack.config.bodyLimitBytes)}"}`,
    });
    expect(response.status).toBe(413);
  });
});
