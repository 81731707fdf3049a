import { execFile } from 'node:child_process';
import { auditLogCollection } from '../../subgraphs/compliance/src/audit/audit-log.js';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../platform/runtime/config.js';
import { DEMO } from '../../platform/domain/demo.js';
import { startTestStack, type TestStack } from '../support/harness.js';

const execFileAsync = promisify(execFile);

interface TokenEnvelope {
  code: string;
  requestId: string;
  message?: string;
  field?: string;
  data: { dtsExpireAt: string; token: string; type: string; tokens: Array<{ token: string; type: string }> };
}
interface PasswordEnvelope {
  code: string;
  requestId: string;
  message?: string;
  field?: string;
  data: { success: boolean; dtsPasswordChanged: string; revokedTokens: number };
}

describe('aggregator credentials', () => {
  let stack: TestStack;
  let password: string = DEMO.aggregatorPassword;
  const getToken = (user: Record<string, unknown>) => stack.rest<TokenEnvelope>('POST', '/auth/get-token', { body: { user } });
  const changePassword = (token: string, body: Record<string, unknown>) =>
    stack.rest<PasswordEnvelope>('POST', '/user/change-password', { headers: { 'x-svc-token': token }, body });

  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('issues a base and a confined token in the aggregator envelope, echoing the requestId', async () => {
    const response = await getToken({ login: DEMO.aggregatorLogin, password, requestId: 'req-42' });
    expect(response.status).toBe(200);
    expect(response.body.code).toBe('0');
    expect(response.body.requestId).toBe('req-42');
    expect(response.body.data.type).toBe('base');
    expect(response.body.data.tokens.map((t) => t.type)).toEqual(['base', 'confined']);
    expect(response.body.data.tokens[0]?.token).toBe(response.body.data.token);
    expect(Date.parse(response.body.data.dtsExpireAt)).toBeGreaterThan(Date.now());
  });

  it('answers a wrong password with 401 {code: "unauthorized", message}, echoing the requestId', async () => {
    const response = await getToken({ login: DEMO.aggregatorLogin, password: 'wrong', requestId: 'req-401' });
    expect(response.status).toBe(401);
    expect(response.body.code).toBe('unauthorized');
    expect(response.body.message).toBeTruthy();
    expect(response.body.requestId).toBe('req-401');
  });

  it.each([
    ['a login with a dash', { login: 'demo-aggregator', password: 'x' }, 'user.login'],
    ['a login of 37 characters', { login: 'a'.repeat(37), password: 'x' }, 'user.login'],
    ['a password of 51 characters', { login: 'demo_aggregator', password: 'p'.repeat(51) }, 'user.password'],
    ['no password', { login: 'demo_aggregator' }, 'user.password'],
    ['a requestId with <', { login: 'demo_aggregator', password: 'x', requestId: '<script>' }, 'user.requestId'],
    ['a requestId of only spaces', { login: 'demo_aggregator', password: 'x', requestId: '   ' }, 'user.requestId'],
    ['a requestId of 33 characters', { login: 'demo_aggregator', password: 'x', requestId: 'r'.repeat(33) }, 'user.requestId'],
  ])('refuses %s with 400 naming the field by its path in the body', async (_name, user, field) => {
    const response = await getToken(user);
    expect(response.status).toBe(400);
    expect(response.body.field).toBe(field);
    expect(response.body.code).not.toBe('0');
    expect(response.body.requestId).not.toContain('<');
  });

  it('refuses a body without the user object', async () => {
    const response = await stack.rest<TokenEnvelope>('POST', '/auth/get-token', { body: { login: 'demo_aggregator' } });
    expect(response.status).toBe(400);
    expect(response.body.field).toBe('user');
  });

  it.each([
    ['shorter than 8', 'Ab1!xyz', 'characters'],
    ['longer than 50', `Ab1!${'x'.repeat(47)}`, 'characters'],
    ['with a character outside the set', 'Abcdef1!*', 'only letters'],
    ['without a digit', 'Abcdefg!', 'digit'],
    ['without a symbol', 'Abcdefg1', 'symbols'],
    ['without a lowercase letter', 'ABCDEFG1!', 'lowercase'],
    ['without an uppercase letter', 'abcdefg1!', 'uppercase'],
  ])('refuses a new password %s', async (_name, newPassword, words) => {
    const { data } = (await getToken({ login: DEMO.aggregatorLogin, password })).body;
    const response = await changePassword(data.token, { oldPassword: password, newPassword });
    expect(response.status).toBe(400);
    expect(response.body.field).toBe('newPassword');
    expect(response.body.message).toContain(words);
  });

  it('refuses a wrong old password with 403, and a confined token with 403', async () => {
    const { data } = (await getToken({ login: DEMO.aggregatorLogin, password })).body;
    const wrongOld = await changePassword(data.token, { oldPassword: 'not-it', newPassword: 'NewPass#2027' });
    expect(wrongOld.status).toBe(403);
    expect(wrongOld.body.field).toBe('oldPassword');
    const confined = data.tokens.find((t) => t.type === 'confined')!.token;
    const refused = await changePassword(confined, { oldPassword: password, newPassword: 'NewPass#2027' });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('forbidden');
  });

  it('lets a confined token read what its user may see', async () => {
    const { data } = (await getToken({ login: DEMO.aggregatorLogin, password })).body;
    const confined = data.tokens.find((t) => t.type === 'confined')!.token;
    const response = await stack.graphql<{ aggregatorViewer: { login: string; tokenType: string } }>(
      '{ aggregatorViewer { login svcAggregatorId tokenType } }',
      {},
      { 'x-svc-token': confined },
    );
    expect(response.body.data?.aggregatorViewer).toMatchObject({ login: DEMO.aggregatorLogin, tokenType: 'confined' });
  });

  it('does not accept an aggregator token as an end-user token, or the reverse', async () => {
    const { data } = (await getToken({ login: DEMO.aggregatorLogin, password })).body;
    expect((await stack.graphql('{ me { SvcUserId } }', {}, { token: data.token })).status).toBe(401);
    const userToken = await stack.loginDemo();
    expect((await stack.graphql('{ aggregatorViewer { login } }', {}, { 'x-svc-token': userToken })).status).toBe(401);
  });

  it('changes the password, revokes every token of the user, and accepts only the new password', async () => {
    const first = (await getToken({ login: DEMO.aggregatorLogin, password })).body.data;
    const second = (await getToken({ login: DEMO.aggregatorLogin, password })).body.data;
    // Used first, so the gateway holds it as live: only the revocation's announcement can end it there.
    expect((await stack.graphql('{ aggregatorViewer { login } }', {}, { 'x-svc-token': second.token })).status).toBe(200);
    const response = await changePassword(first.token, { oldPassword: password, newPassword: 'NewPass#2027' });
    expect(response.status).toBe(200);
    expect(response.body.code).toBe('0');
    expect(response.body.data.success).toBe(true);
    expect(response.body.data.revokedTokens).toBeGreaterThanOrEqual(4);
    for (const token of [first.token, second.token, ...second.tokens.map((t) => t.token)]) {
      const after = await stack.graphql('{ aggregatorViewer { login } }', {}, { 'x-svc-token': token });
      expect(after.status).toBe(401);
    }
    expect((await getToken({ login: DEMO.aggregatorLogin, password })).status).toBe(401);
    password = 'NewPass#2027';
    expect((await getToken({ login: DEMO.aggregatorLogin, password })).status).toBe(200);
  });

  it('provisions an aggregator and its user from the command line, who can then get a token', async () => {
    const env = {
      ...process.env,
      MONGODB_URI: stack.config.mongodbUri,
      MONGODB_DB_PREFIX: stack.config.dbPrefix,
      AGGREGATOR_PASSWORD: 'Acme#Ops2026',
    };
    const run = (...args: string[]) =>
      execFileAsync(process.execPath, ['--import', 'tsx', 'scripts/provision.ts', ...args], { env, cwd: REPO_ROOT });
    expect((await run('aggregator', 'acme_corp', 'ACME Corp')).stdout).toContain('created');
    expect((await run('aggregator-user', 'acme_corp', 'acme_ops')).stdout).toContain('created');
    await expect(run('aggregator-user', 'nobody_corp', 'ghost')).rejects.toThrow(/No aggregator nobody_corp/);
    const again = await run('aggregator-user', 'acme_corp', 'acme_ops', 'ignored');
    expect(again.stdout).toContain('already exists; nothing changed');
    const response = await getToken({ login: 'acme_ops', password: 'Acme#Ops2026' });
    expect(response.status).toBe(200);
    await stack.auditForwarded();
    const trail = await auditLogCollection(stack.mongo.db('compliance')).find({ actorId: 'provision' }).toArray();
    expect(trail.map((record) => [record.action, record.subjectId])).toEqual(
      expect.arrayContaining([
        ['AGGREGATOR_CREATED', 'acme_corp'],
        ['AGGREGATOR_USER_CREATED', 'acme_ops'],
      ]),
    );
    expect(trail.filter((record) => record.action === 'AGGREGATOR_USER_CREATED')).toHaveLength(1);
  });

  it('counts wrong old passwords toward the lock, so a stolen token cannot brute-force the password', async () => {
    const env = { LOGIN_MAX_FAILURES: '2', LOCK_PERIOD_SECONDS: '60' };
    const locking = await startTestStack(env);
    try {
      const token = (
        await locking.rest<TokenEnvelope>('POST', '/auth/get-token', {
          body: { user: { login: DEMO.aggregatorLogin, password: DEMO.aggregatorPassword } },
        })
      ).body.data.token;
      const change = (oldPassword: string) =>
        locking.rest<PasswordEnvelope>('POST', '/user/change-password', {
          headers: { 'x-svc-token': token },
          body: { oldPassword, newPassword: 'NewPass#2027' },
        });
      expect((await change('guess-1')).status).toBe(403);
      expect((await change('guess-2')).status).toBe(403);
      const locked = await change(DEMO.aggregatorPassword);
      expect(locked.status).toBe(401);
      expect(locked.body.code).toBe('unauthorized');
    } finally {
      await locking.stop();
    }
  });

  it('never logs an aggregator password or a token it issued', async () => {
    const issued = (await getToken({ login: DEMO.aggregatorLogin, password })).body.data;
    await stack.graphql('{ aggregatorViewer { login } }', {}, { 'x-svc-token': issued.token });
    const text = JSON.stringify(stack.logs);
    expect(text).not.toContain(DEMO.aggregatorPassword);
    expect(text).not.toContain('NewPass#2027');
    for (const { token } of issued.tokens) expect(text).not.toContain(token);
  });
});
