import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../support/harness.js';

interface LoginBody {
  success: boolean;
  userId: string;
  SvcUserId: string;
  token: string;
  segment: string | null;
  postOnboardingStepsRequired: string | null;
  dtsExpiry: string;
  isLocalSavingAllowed: boolean;
}
interface ErrorBody {
  success: false;
  error: { code: string; message: string; field?: string };
  requestId: string;
}

const demoLogin = { channel: 'internet', userName: 'demo.user', password: 'Demo#Pass2026' };
const OPERATOR_KEY = 'operator-key-for-the-login-tests-0123456789';

describe('PUT /token and DELETE /token', () => {
  let stack: TestStack;
  const sessionCount = () => stack.mongo.db('user').collection('sessions').countDocuments();
  /** Blocks or unblocks the demo user as the bank's operator does. */
  const setDemoUserActive = async (isActive: boolean) => {
    const answer = await stack.graphql<{ setUserActive: { SvcUserId: string } }>(
      'mutation ($SvcUserId: ID!, $isActive: Boolean!) { setUserActive(SvcUserId: $SvcUserId, isActive: $isActive) { SvcUserId } }',
      { SvcUserId: 'demo_user_1', isActive },
      { 'x-service-key': OPERATOR_KEY },
    );
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data?.setUserActive.SvcUserId).toBe('demo_user_1');
  };

  beforeAll(async () => {
    stack = await startTestStack({
      LOGIN_MAX_FAILURES: '3',
      LOCK_PERIOD_SECONDS: '2',
      TOKEN_LIFETIME_SECONDS: '7200',
      SERVICE_KEYS: `operator=${OPERATOR_KEY}`,
    });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('logs the demo user in over the internet channel with every field of the login response', async () => {
    const before = Date.now();
    const response = await stack.rest<LoginBody>('PUT', '/token', { body: demoLogin });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual([
      'SvcUserId',
      'dtsExpiry',
      'isLocalSavingAllowed',
      'postOnboardingStepsRequired',
      'segment',
      'success',
      'token',
      'userId',
    ]);
    expect(response.body).toMatchObject({
      success: true,
      userId: 'demo_user_1',
      SvcUserId: 'demo_user_1',
      segment: 'retail',
      isLocalSavingAllowed: false,
    });
    expect(response.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // dtsExpiry is the configured lifetime (7200 s) after issue.
    const expiry = Date.parse(response.body.dtsExpiry);
    expect(expiry).toBeGreaterThanOrEqual(before + 7200_000 - 1000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 7200_000 + 1000);
  });

  it('accepts device details with any member names (they are read, not stored): android system properties are dotted', async () => {
    const response = await stack.rest<{ token: string }>('PUT', '/token', {
      body: { ...demoLogin, specifics: { 'ro.product.model': 'Pixel 8', $source: 'app' }, deviceData: { 'os.version': '14' } },
    });
    expect(response.status).toBe(200);
    expect(response.body.token).toMatch(/.+/);
  });

  it('stores only the hash of the token', async () => {
    const { body } = await stack.rest<LoginBody>('PUT', '/token', { body: demoLogin });
    const sessions = await stack.mongo.db('user').collection('sessions').find({}).toArray();
    const stored = JSON.stringify(sessions);
    expect(stored).not.toContain(body.token);
    expect(sessions.some((session) => /^[0-9a-f]{64}$/.test(String(session.tokenHash)))).toBe(true);
  });

  it('logs in over the test channel with the demo device tag', async () => {
    const response = await stack.rest<LoginBody>('PUT', '/token', {
      body: { channel: 'test', deviceTag: 'demo-device-1', deviceData: { model: 'x' } },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, SvcUserId: 'demo_user_1', isLocalSavingAllowed: true });
  });

  it.each([
    ['a body that is not JSON', { rawBody: '{"channel": "internet",' }, 400, 'BAD_REQUEST', undefined],
    ['a body that is a JSON array', { body: [demoLogin] }, 400, 'BAD_REQUEST', undefined],
    ['a property of the wrong type', { body: { ...demoLogin, userName: 42 } }, 400, 'BAD_REQUEST', 'userName'],
    ['a body without channel', { body: { userName: 'demo.user', password: 'x' } }, 404, 'REQUIRED_ELEMENT_MISSING', 'channel'],
    ['an unknown channel', { body: { channel: 'carrier-pigeon' } }, 500, 'INVALID_CHANNEL', 'channel'],
    [
      'an internet login without password',
      { body: { channel: 'internet', userName: 'demo.user' } },
      401,
      'CHANNEL_PROPERTY_MISSING',
      'password',
    ],
    ['a test login without deviceTag', { body: { channel: 'test' } }, 401, 'CHANNEL_PROPERTY_MISSING', 'deviceTag'],
    [
      'a device login with a badly formatted dtsValueString',
      { body: { channel: 'mobile', deviceTag: 'd1', dtsValueString: 'yesterday', cryptotext: 'c' } },
      401,
      'INVALID_TIMESTAMP',
      'dtsValueString',
    ],
    ['a wrong password', { body: { ...demoLogin, userName: 'other.user', password: 'wrong' } }, 401, 'UNAUTHENTICATED', undefined],
    ['an unknown device tag', { body: { channel: 'test', deviceTag: 'no-such-device' } }, 401, 'UNAUTHENTICATED', undefined],
    [
      'a service channel from an end user',
      { body: { channel: 'statementGenerator', userId: 'demo_user_1' } },
      404,
      'CHANNEL_NOT_PERMITTED',
      'channel',
    ],
  ] as const)('refuses %s with the documented status and writes nothing', async (_name, request, status, code, field) => {
    const before = await sessionCount();
    const response = await stack.rest<ErrorBody>('PUT', '/token', request);
    expect(response.status).toBe(status);
    expect(response.body.success).toBe(false);
    expect(response.body.error.code).toBe(code);
    expect(response.body.error.message).not.toBe('');
    if (field) expect(response.body.error.field).toBe(field);
    expect(response.body.requestId).toBe(response.headers.get('x-request-id'));
    expect(await sessionCount()).toBe(before);
  });

  it('locks the actor after repeated failures, refuses even the right password while locked, and lets it in once the period passes', async () => {
    const wrong = { ...demoLogin, userName: 'demo.user', password: 'not-the-password' };
    for (let i = 0; i < 3; i += 1) {
      const response = await stack.rest<ErrorBody>('PUT', '/token', { body: wrong });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('UNAUTHENTICATED');
    }
    const locked = await stack.rest<ErrorBody>('PUT', '/token', { body: demoLogin });
    expect(locked.status).toBe(401);
    expect(locked.body.error.code).toBe('ACTOR_LOCKED');
    await new Promise((resolve) => setTimeout(resolve, 2200));
    const after = await stack.rest<LoginBody>('PUT', '/token', { body: demoLogin });
    expect(after.status).toBe(200);
  });

  it('makes the token unusable for REST and GraphQL alike after DELETE /token', async () => {
    const token = await stack.loginDemo();
    const me = await stack.graphql<{ me: { SvcUserId: string } }>('{ me { SvcUserId } }', {}, { token });
    expect(me.status).toBe(200);
    expect(me.body.data?.me.SvcUserId).toBe('demo_user_1');

    const logout = await stack.rest('DELETE', '/token', { headers: { token } });
    expect(logout.status).toBe(200);
    expect(logout.body).toEqual({ success: true });

    const again = await stack.rest<ErrorBody>('DELETE', '/token', { headers: { token } });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('UNAUTHENTICATED');
    const graph = await stack.graphql('{ me { SvcUserId } }', {}, { token });
    expect(graph.status).toBe(401);
    assert(graph.body.errors);
    expect(graph.body.errors[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('refuses a used token at once when its user is blocked, takes it again when unblocked, and refuses it at once after logout', async () => {
    const token = await stack.loginDemo();
    const me = () => stack.graphql<{ me: { SvcUserId: string } }>('{ me { SvcUserId } }', {}, { token });
    // Used twice first: the gateway holds this session as live, and the user subgraph knows whose it is.
    expect((await me()).status).toBe(200);
    expect((await me()).status).toBe(200);
    await setDemoUserActive(false);
    try {
      expect((await me()).status).toBe(401);
    } finally {
      await setDemoUserActive(true);
    }
    expect((await me()).status).toBe(200);
    expect((await stack.rest('DELETE', '/token', { headers: { token } })).status).toBe(200);
    expect((await me()).status).toBe(401);
  });

  it('lets no answer of a used token out once its session ends, and runs no change with it, though the gateway knows whose it is', async () => {
    const token = await stack.loginDemo();
    const profile = () => stack.graphql<{ me: { SvcUserId: string; email: string } }>('{ me { SvcUserId email } }', {}, { token });
    expect((await profile()).status).toBe(200);
    const cards = stack.mongo.db('cards').collection<{ _id: string; name: string | null }>('cards');
    const before = await cards.findOne({ _id: 'demo_card_1' });
    await setDemoUserActive(false);
    try {
      // A change waits for the session: refused, and nothing is written.
      const renamed = await stack.rest<ErrorBody>('POST', '/cards/demo_card_1', {
        headers: { token },
        body: { name: 'not while blocked' },
      });
      expect(renamed.status).toBe(401);
      expect(renamed.body.error.code).toBe('UNAUTHENTICATED');
      expect(await cards.findOne({ _id: 'demo_card_1' })).toEqual(before);
    } finally {
      await setDemoUserActive(true);
    }
    // Known again (a refusal makes the gateway forget whose a token is), then blocked again: the gateway still knows whose it is, but no longer holds it as live.
    expect((await profile()).status).toBe(200);
    await setDemoUserActive(false);
    try {
      // A query runs while the session is read, but its answer is held and replaced by the refusal.
      const read = await profile();
      expect(read.status).toBe(401);
      expect(read.body.data).toBeUndefined();
      expect(JSON.stringify(read.body)).not.toContain('dana.demo@example.com');
      expect(read.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    } finally {
      await setDemoUserActive(true);
    }
    expect((await stack.rest('DELETE', '/token', { headers: { token } })).status).toBe(200);
    const afterLogout = await stack.rest<ErrorBody>('GET', '/restrictions', { headers: { token } });
    expect(afterLogout.status).toBe(401);
    expect(afterLogout.body.error.code).toBe('UNAUTHENTICATED');
    expect(JSON.stringify(afterLogout.body)).not.toContain('restrictionName');
  });

  it('answers DELETE /token without a token with 500, as the spec documents', async () => {
    const response = await stack.rest<ErrorBody>('DELETE', '/token');
    expect(response.status).toBe(500);
    expect(response.body.error).toMatchObject({ code: 'TOKEN_MISSING', field: 'token' });
  });

  it('logs in over GraphQL with the same rules as REST', async () => {
    const mutation = 'mutation ($input: LoginInput!) { login(input: $input) { SvcUserId token } }';
    const ok = await stack.graphql<{ login: { SvcUserId: string; token: string } }>(mutation, { input: demoLogin });
    expect(ok.body.data?.login.SvcUserId).toBe('demo_user_1');
    const missing = await stack.graphql(mutation, { input: { channel: 'internet', userName: 'demo.user' } });
    assert(missing.body.errors);
    expect(missing.body.errors[0]?.extensions).toMatchObject({ code: 'CHANNEL_PROPERTY_MISSING', field: 'password' });
  });

  it('never writes a password or a token to the logs', async () => {
    const { body } = await stack.rest<LoginBody>('PUT', '/token', { body: demoLogin });
    await stack.rest('DELETE', '/token', { headers: { token: body.token } });
    const text = JSON.stringify(stack.logs);
    expect(stack.logs.length).toBeGreaterThan(0);
    expect(text).not.toContain('Demo#Pass2026');
    expect(text).not.toContain(body.token);
  });
});

describe('the test channel in production', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({
      NODE_ENV: 'production',
      INTERNAL_SECRET: 'p'.repeat(40),
      SEED_DEMO: 'true',
      OUTBOX_DIR: path.join(tmpdir(), 'banking-graph-outbox'),
    });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('is off unless configuration enables it', async () => {
    const response = await stack.rest<ErrorBody>('PUT', '/token', { body: { channel: 'test', deviceTag: 'demo-device-1' } });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('CHANNEL_NOT_PERMITTED');
  });
});
