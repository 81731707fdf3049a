import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { start as startGateway } from '../../gateway/src/index.js';
import { loadConfig } from '../../platform/runtime/config.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { configFor } from '../../platform/runtime/config-slices.js';
import { subgraphUrlsOf } from '../../scripts/stack.js';
import { startTestStack, type TestStack } from '../support/harness.js';

const ALLOWED = 'https://app.bank.example';

describe('browsers on other origins', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ CORS_ORIGINS: `${ALLOWED},http://localhost:*` });
  });
  afterAll(async () => {
    await stack.stop();
  });

  const preflight = (url: string, origin: string) =>
    fetch(url, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type, token, idempotency-key' },
    });

  it('answers a preflight from an allowed origin on the REST adapter and the gateway, credentials headers allowed', async () => {
    for (const url of [`${stack.restAdapter.url}/token`, `${stack.gateway.url}/graphql`]) {
      for (const origin of [ALLOWED, 'http://localhost:5173']) {
        const answer = await preflight(url, origin);
        expect(answer.status, url).toBe(204);
        expect(answer.headers.get('access-control-allow-origin')).toBe(origin);
        expect(answer.headers.get('access-control-allow-credentials')).toBe('true');
        expect(answer.headers.get('access-control-allow-headers')).toBe('content-type, token, idempotency-key');
        expect(answer.headers.get('access-control-allow-methods')).toContain('PUT');
      }
    }
  });

  it('refuses a preflight from any other origin, and names no origin on its answers', async () => {
    for (const origin of ['https://evil.example', 'https://app.bank.example.evil.example', 'http://localhost.evil.example:80']) {
      const answer = await preflight(`${stack.restAdapter.url}/token`, origin);
      expect(answer.status, origin).toBe(403);
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    }
    const login = await fetch(`${stack.restAdapter.url}/token`, {
      method: 'PUT',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' }),
    });
    expect(login.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets an allowed origin read the answer of a login, and the request id', async () => {
    const login = await fetch(`${stack.restAdapter.url}/token`, {
      method: 'PUT',
      headers: { origin: ALLOWED, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' }),
    });
    expect(login.status).toBe(200);
    expect(login.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(login.headers.get('access-control-expose-headers')).toContain('x-request-id');
    // The gateway's replay marker, readable by the browser that sent an Idempotency-Key.
    expect(login.headers.get('access-control-expose-headers')).toContain('idempotent-replayed');
    expect(login.headers.get('vary')).toContain('Origin');
  });

  it('allows no origin in production unless configured, and refuses an origin that is not one', () => {
    const secret = { INTERNAL_SECRET: 's'.repeat(40) };
    expect(loadConfig({ NODE_ENV: 'production', ...secret }).corsOrigins).toEqual([]);
    expect(loadConfig({ NODE_ENV: 'development' }).corsOrigins).toEqual(['http://localhost:*', 'http://127.0.0.1:*']);
    expect(() => loadConfig({ NODE_ENV: 'production', ...secret, CORS_ORIGINS: '*' })).toThrow(/CORS_ORIGINS must list origins/);
    // Browsers send origins in lower case.
    expect(loadConfig({ NODE_ENV: 'production', ...secret, CORS_ORIGINS: 'HTTPS://App.Bank.Example' }).corsOrigins).toEqual([ALLOWED]);
  });

  it('drains: not ready at once while it still answers, and closes graphql-ws sockets with 1012 so clients reconnect elsewhere', async () => {
    const gateway = await startGateway({
      config: configFor('gateway', { ...stack.config, subgraphUrls: subgraphUrlsOf(stack.subgraphs) }),
      logger: createLogger('silent'),
      bus: stack.bus,
      port: 0,
    });
    const token = await stack.loginDemo();
    let connected!: () => void;
    const opened = new Promise<void>((resolve) => (connected = resolve));
    let closedWith!: (code: number) => void;
    const closed = new Promise<number>((resolve) => (closedWith = resolve));
    const client = createClient({
      url: `${gateway.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { token },
      retryAttempts: 0,
      on: { connected: () => connected(), closed: (event) => closedWith((event as { code: number }).code) },
    });
    try {
      client.subscribe(
        { query: 'subscription { cardStatusChanged { SvcCardId } }' },
        { next: () => {}, error: () => {}, complete: () => {} },
      );
      await opened;
      expect((await fetch(`${gateway.url}/ready`)).status).toBe(200);
      const draining = gateway.drain(1000);
      expect((await fetch(`${gateway.url}/ready`)).status).toBe(503);
      expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
      const answer = await fetch(`${gateway.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', token },
        body: JSON.stringify({ query: '{ me { SvcUserId } }' }),
      });
      expect(answer.status).toBe(200);
      await draining;
    } finally {
      await gateway.close();
    }
    expect(await closed).toBe(1012);
    await client.dispose();
  });
});
