import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalCounts } from '../../gateway/src/local-counts.js';
import { addressGroup, createHitCounter } from '../../gateway/src/rate-limits.js';
import { DEMO } from '../../platform/domain/demo.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface ErrorBody {
  error?: { code: string; field?: string };
}

describe('rate limits at the gateway', () => {
  let stack: TestStack;
  let token: string;

  beforeAll(async () => {
    stack = await startTestStack({ RATE_LIMIT_PER_CREDENTIAL: '5', RATE_LIMIT_PER_ADDRESS: '12', RATE_LIMIT_SENSITIVE: '3' });
    token = await stack.loginDemo();
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  it('limits a credential per operation, with 429 and Retry-After, and counts each operation apart', async () => {
    const me = () => stack.graphql('{ me { firstName } }', {}, { token });
    for (let i = 0; i < 5; i += 1) expect((await me()).status).toBe(200);
    const refused = await me();
    expect(refused.status).toBe(429);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Another operation of the same credential has its own count.
    expect((await stack.graphql('{ transactionTypes { name } }', {}, { token })).status).toBe(200);
  });

  it('gives the log-in routes a strict limit per address, through the REST adapter as well', async () => {
    // The demo login above was the first; two more wrong passwords, then the fourth is refused whatever it carries.
    for (let i = 0; i < 2; i += 1) {
      const attempt = await stack.rest<ErrorBody>('PUT', '/token', {
        body: { channel: 'internet', userName: `nobody${i}`, password: 'wrong' },
      });
      expect(attempt.status).toBe(401);
    }
    const refused = await stack.rest<ErrorBody>('PUT', '/token', {
      body: { channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' },
    });
    expect(refused.status).toBe(429);
    expect(refused.body.error?.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts every alias, so one request cannot carry many attempts', async () => {
    const other = await stack.graphql<{ aggregatorGetToken: unknown }>(
      `mutation { ${Array.from({ length: 4 }, (_, i) => `t${i}: aggregatorGetToken(input: { login: "nobody", password: "guess${i}" }) { token }`).join(' ')} }`,
    );
    expect(other.status).toBe(429);
    expect(other.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
  });

  it("gives merchant registration the strict limit: another aggregator's merchant ids cannot be probed at length", async () => {
    const rival = await stack.issueToken({
      kind: 'aggregator',
      svcAggregatorId: 'rival_aggregator_org',
      login: 'rival',
      tokenType: 'base',
    });
    const save = (svcMerchantId: string) =>
      stack.graphql(
        'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
        { input: { svcMerchantId, name: 'Rival Cycles' } },
        { 'x-svc-token': rival },
      );
    const probe = await save(DEMO.merchantId);
    expect(probe.body.errors?.[0]).toMatchObject({ extensions: { code: 'CONFLICT', field: 'svcMerchantId' } });
    // The refusal says the id cannot be had, not whose it is.
    expect(JSON.stringify(probe.body)).not.toMatch(new RegExp(`${DEMO.aggregatorId}|taken|Demo`));
    expect((await save('rival_probe_1')).body.errors).toBeUndefined();
    expect((await save('rival_probe_2')).body.errors).toBeUndefined();
    const refused = await save('rival_probe_3');
    expect(refused.status).toBe(429);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
  });

  it('shares counts between gateways through Redis', async () => {
    const namespace = `t${randomBytes(4).toString('hex')}_`;
    const logger = createLogger('silent');
    const first = createHitCounter('redis://127.0.0.1:6379', namespace, logger);
    const second = createHitCounter('redis://127.0.0.1:6379', namespace, logger);
    try {
      expect((await first.hit('k', 5000)).count).toBe(1);
      expect((await second.hit('k', 5000)).count).toBe(2);
      const third = await first.hit('k', 5000);
      expect(third.count).toBe(3);
      expect(third.resetMs).toBeGreaterThan(0);
      expect(third.resetMs).toBeLessThanOrEqual(5000);
      expect((await second.hit('other', 5000)).count).toBe(1);
      // A hit given back is taken off for every gateway.
      await second.refund('k', 5000);
      expect((await first.hit('k', 5000)).count).toBe(3);
      // Several keys in one round trip, each in its own window; a window runs out and starts again.
      const [k, fresh] = await second.hitEach(['k', 'short'], 1000);
      expect(k).toMatchObject({ count: 4 });
      expect(k!.resetMs).toBeGreaterThan(1000);
      expect(fresh).toMatchObject({ count: 1 });
      expect(fresh!.resetMs).toBeLessThanOrEqual(1000);
      await new Promise((resolve) => setTimeout(resolve, 1050));
      expect(await first.hitEach(['short'], 1000)).toMatchObject([{ count: 1 }]);
      // Windows are whole seconds: a shorter one would never expire in Redis, so it is refused.
      await expect(first.hit('k', 300)).rejects.toThrow(/whole seconds/);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("shares each gateway's early counts through Redis within moments, several hits in one command", async () => {
    const namespace = `t${randomBytes(4).toString('hex')}_`;
    const logger = createLogger('silent');
    const first = createLocalCounts(createHitCounter('redis://127.0.0.1:6379', namespace, logger), 10_000, logger);
    const second = createLocalCounts(createHitCounter('redis://127.0.0.1:6379', namespace, logger), 10_000, logger);
    const direct = createHitCounter('redis://127.0.0.1:6379', namespace, logger);
    try {
      expect((await first.hit('k', 5000)).count).toBe(1);
      expect((await first.hit('k', 5000)).count).toBe(2);
      expect((await second.hit('k', 5000)).count).toBe(1);
      await second.refund('k', 5000);
      await second.hit('k', 5000);
      await first.flush();
      await second.flush();
      // Three hits in Redis; the second shared after the first, so only its count has the other's.
      expect((await direct.hit('k', 5000)).count).toBe(4);
      expect((await first.hit('k', 5000)).count).toBe(3);
      expect((await second.hit('k', 5000)).count).toBe(4);
      await first.flush();
      await second.flush();
      expect((await second.hit('k', 5000)).count).toBe(7);
    } finally {
      await first.close();
      await second.close();
      await direct.close();
    }
  });
});

describe('rate limits and ended sessions', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ RATE_LIMIT_PER_CREDENTIAL: '3' });
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  it("gives back the hits of a token whose session has ended, so that it cannot spend its user's limit", async () => {
    const user = await stack.loginDemo();
    const ended = await stack.loginDemo();
    const me = (token: string) => stack.graphql('{ me { firstName } }', {}, { token });
    // Used once, so the gateway knows whose it is and runs its next query while the session is read.
    expect((await me(ended)).status).toBe(200);
    expect((await stack.rest('DELETE', '/token', { headers: { token: ended } })).status).toBe(200);
    for (let i = 0; i < 3; i += 1) expect((await me(ended)).status).toBe(401);
    // One of the user's three `me` is spent; the ended token's attempts spent none.
    expect((await me(user)).status).toBe(200);
    expect((await me(user)).status).toBe(200);
    expect((await me(user)).status).toBe(429);
  });
});

describe('the address a rate limit counts against', () => {
  it('is an IPv4 address itself, and an IPv6 address by its /64, however it is written', () => {
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::ffff:cb00:7107')).toBe('203.0.113.7');
    expect(addressGroup('0:0:0:0:0:ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::FFFF:203.0.113.8')).toBe('203.0.113.8');
    expect(addressGroup('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
    expect(addressGroup('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressGroup('2001:db8:1:3::1')).not.toBe(addressGroup('2001:db8:1:2::1'));
  });
});
