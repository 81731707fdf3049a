import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { startTestStack, type TestStack } from '../support/harness.js';

/*
 * Service keys are scoped (SERVICE_KEY_SCOPES): a key opens sessions only over the channels its
 * scope names and only for the users it names, calls only the root fields it names, and never
 * reads a user's data. Each case here was possible with any service key before scopes.
 */

interface LoginAnswer {
  success: boolean;
  SvcUserId?: string;
  token?: string;
  error?: { code: string; field?: string };
}

const STATEMENTS_KEY = 'statements-key-for-the-scope-tests-0123456789';
const CHAT_KEY = 'chat-key-for-the-scope-tests-0123456789abcdef';
const OTHER_CHAT_KEY = 'other-chat-key-for-the-scope-tests-01234567';
const NODE_READER_KEY = 'node-reader-key-for-the-scope-tests-0123456';
const UNSCOPED_KEY = 'unscoped-key-for-the-scope-tests-0123456789ab';
const WIDE_KEY = 'wide-key-for-the-scope-tests-0123456789abcdefgh';
/** The most users a scope may list, each of the longest SvcUserId, the demo user last. */
const WIDE_USERS = [...Array.from({ length: 99 }, (_, i) => `wide_user_${String(i).padStart(26, '0')}`), DEMO.userId];

/** Values of the demo user's that no service key may read. */
const PERSONAL = [DEMO.userId, 'Dana', DEMO.chat.transportUserId];

describe('service keys hold to their scope', () => {
  let stack: TestStack;
  let userB = '';
  const login = (body: Record<string, unknown>, key: string) =>
    stack.rest<LoginAnswer>('PUT', '/token', { body, headers: { 'x-service-key': key } });

  beforeAll(async () => {
    stack = await startTestStack({
      SERVICE_KEYS: [
        `statements=${STATEMENTS_KEY}`,
        `chat=${CHAT_KEY}`,
        `other-chat=${OTHER_CHAT_KEY}`,
        `node-reader=${NODE_READER_KEY}`,
        `unscoped=${UNSCOPED_KEY}`,
        `wide=${WIDE_KEY}`,
      ].join(','),
      SERVICE_KEY_SCOPES: JSON.stringify({
        statements: { channels: ['statementGenerator'], users: [DEMO.userId] },
        chat: { channels: ['chat'], users: '*' },
        'other-chat': { channels: ['chat'], users: ['someone_else'] },
        'node-reader': { fields: ['node'] },
        wide: { channels: ['dicBuilder'], users: WIDE_USERS },
      }),
    });
    // User B onboards as any end user does.
    const prospect = await stack.rest<{ token: string }>('POST', '/prospect/data', {
      body: { deviceTag: 'scope-user-b', preSegment: 'retail', firstName: 'Bea', lastName: 'Other' },
    });
    const registered = await stack.rest<{ SvcUserId: string }>('POST', '/prospect/registration', {
      headers: { token: prospect.body.token },
      body: { deviceTag: 'scope-user-b', preSegment: 'retail', deviceData: { model: 'phone' } },
    });
    expect(registered.status).toBe(200);
    userB = registered.body.SvcUserId;
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('refuses the chat key the dicBuilder and statementGenerator channels, and lets it use chat', async () => {
    for (const channel of ['dicBuilder', 'statementGenerator']) {
      const refused = await login({ channel, userId: DEMO.userId }, CHAT_KEY);
      expect(refused.status).toBe(404);
      expect(refused.body).toMatchObject({ success: false, error: { code: 'CHANNEL_NOT_PERMITTED', field: 'channel' } });
      expect(refused.body.token).toBeUndefined();
    }
    const chat = await login({ channel: 'chat', transport: DEMO.chat.transport, transportUserId: DEMO.chat.transportUserId }, CHAT_KEY);
    expect(chat.status).toBe(200);
    expect(chat.body.SvcUserId).toBe(DEMO.userId);
  });

  it('lets a statements key scoped to user A open a session for A only', async () => {
    const own = await login({ channel: 'statementGenerator', userId: DEMO.userId }, STATEMENTS_KEY);
    expect(own.status).toBe(200);
    expect(own.body.SvcUserId).toBe(DEMO.userId);
    const other = await login({ channel: 'statementGenerator', userId: userB }, STATEMENTS_KEY);
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ success: false, error: { code: 'CHANNEL_NOT_PERMITTED', field: 'userId' } });
    // A user that does not exist answers the same: the refusal says nothing about who exists.
    const nobody = await login({ channel: 'statementGenerator', userId: 'no_such_user' }, STATEMENTS_KEY);
    expect(nobody.status).toBe(404);
    expect(nobody.body.error?.code).toBe('CHANNEL_NOT_PERMITTED');
    // Its scope has one channel: dicBuilder is refused even for its own user, and so is a device channel.
    expect((await login({ channel: 'dicBuilder', userId: DEMO.userId }, STATEMENTS_KEY)).body.error?.code).toBe('CHANNEL_NOT_PERMITTED');
    expect((await login({ channel: 'internet', userName: DEMO.userName, password: DEMO.password }, STATEMENTS_KEY)).body.error?.code).toBe(
      'CHANNEL_NOT_PERMITTED',
    );
  });

  it('carries a scope of the most users it may list through every hop', async () => {
    expect(WIDE_USERS.every((id) => id.length === 36 || id === DEMO.userId)).toBe(true);
    const own = await login({ channel: 'dicBuilder', userId: DEMO.userId }, WIDE_KEY);
    expect(own.status).toBe(200);
    expect(own.body.SvcUserId).toBe(DEMO.userId);
    expect((await login({ channel: 'dicBuilder', userId: userB }, WIDE_KEY)).body.error?.code).toBe('CHANNEL_NOT_PERMITTED');
  });

  it('holds the chat channel to the users of the key', async () => {
    const refused = await login(
      { channel: 'chat', transport: DEMO.chat.transport, transportUserId: DEMO.chat.transportUserId },
      OTHER_CHAT_KEY,
    );
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({ success: false, error: { code: 'CHANNEL_NOT_PERMITTED' } });
    expect(refused.body.token).toBeUndefined();
  });

  it('gives a key without a scope nothing: no channel, no root field', async () => {
    const refused = await login({ channel: 'statementGenerator', userId: DEMO.userId }, UNSCOPED_KEY);
    expect(refused.status).toBe(404);
    expect(refused.body.error?.code).toBe('CHANNEL_NOT_PERMITTED');
    const types = await stack.graphql('{ transactionTypes { name } }', {}, { 'x-service-key': UNSCOPED_KEY });
    expect(types.status).toBe(403);
    expect(types.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(types.body.data ?? null).toBeNull();
  });

  it('shows no service key a user through node(id:)', async () => {
    const query = `{ node(id: "User:${DEMO.userId}") { id ... on User { SvcUserId firstName email mobile dobYear addresses { city } beneficiaries { name } accounts { balance } } } }`;
    // A key whose scope does not name node: refused before any subgraph is asked.
    const chat = await stack.graphql(query, {}, { 'x-service-key': CHAT_KEY });
    expect(chat.status).toBe(403);
    expect(chat.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    // A key whose scope names node: the user answers as if it did not exist.
    const reader = await stack.graphql<{ node: unknown }>(query, {}, { 'x-service-key': NODE_READER_KEY });
    expect(reader.status).toBe(200);
    expect(reader.body.errors).toBeUndefined();
    expect(reader.body.data?.node).toBeNull();
    for (const answer of [chat, reader]) {
      const text = JSON.stringify(answer.body);
      for (const value of PERSONAL.slice(1)) expect(text).not.toContain(value);
    }
    // The user's own token still reads it.
    const token = await stack.loginDemo();
    const own = await stack.graphql<{ node: { firstName: string } }>(query, {}, { token });
    expect(own.body.data?.node.firstName).toBe('Dana');
  });
});
