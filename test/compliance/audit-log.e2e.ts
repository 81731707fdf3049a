import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Kind, parse, type EnumTypeDefinitionNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import type { AuditRecordPayload } from '../../platform/contracts/events.js';
import { outboxCollection, type OutboxEvent } from '../../platform/messaging/outbox.js';
import { createLogger } from '../../platform/runtime/logger.js';
import { REPO_ROOT } from '../../platform/runtime/config.js';
import { AUDIT_ACTIONS } from '../../platform/contracts/events.js';
import { backgroundAuditTrail } from '../../platform/messaging/audit.js';
import { signPrincipal } from '../../platform/security/signed-headers.js';
import { auditLogCollection } from '../../subgraphs/compliance/src/audit/audit-log.js';
import { startTestStack, type TestStack } from '../support/harness.js';

const OPERATOR_KEY = 'operator-key-0123456789abcdefghijklmnop';
const OTHER_SERVICE_KEY = 'statements-key-0123456789abcdefghijklm';

interface AuditRecord {
  id: string;
  action: string;
  dts: string;
  actorKind: string;
  actorId: string | null;
  subjectType: string | null;
  subjectId: string | null;
  requestId: string | null;
  clientIp: string | null;
  details: Array<{ name: string; value: string | null }>;
}
interface AuditLogPage {
  records: AuditRecord[];
  hasNextPage: boolean;
  endCursor: string | null;
}
interface Envelope<T> {
  code: string;
  data: T;
}

const AUDIT_LOG = `query ($action: AuditAction, $actorId: String, $subjectId: String, $since: DateTime, $first: Int, $after: String) {
  auditLog(action: $action, actorId: $actorId, subjectId: $subjectId, since: $since, first: $first, after: $after) {
    records { id action dts actorKind actorId subjectType subjectId requestId clientIp details { name value } }
    hasNextPage endCursor
  }
}`;

const detail = (record: AuditRecord, name: string) => record.details.find((d) => d.name === name)?.value;

describe('the audit log', () => {
  let stack: TestStack;
  let since: string;

  const auditLog = async (variables: Record<string, unknown> = {}, headers: Record<string, string> = { 'x-service-key': OPERATOR_KEY }) =>
    stack.graphql<{ auditLog: AuditLogPage }>(AUDIT_LOG, { since, ...variables }, headers);
  const records = async (variables: Record<string, unknown> = {}) => {
    await stack.auditForwarded();
    const response = await auditLog({ first: 500, ...variables });
    expect(response.body.errors).toBeUndefined();
    return response.body.data!.auditLog.records;
  };
  const aggregatorToken = async (password: string = DEMO.aggregatorPassword) =>
    (
      await stack.rest<Envelope<{ token: string }>>('POST', '/auth/get-token', {
        body: { user: { login: DEMO.aggregatorLogin, password } },
      })
    ).body.data.token;

  beforeAll(async () => {
    stack = await startTestStack({ SERVICE_KEYS: `operator=${OPERATOR_KEY},statements=${OTHER_SERVICE_KEY}`, LOGIN_MAX_FAILURES: '2' });
    since = new Date().toISOString();
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('records an operator blocking and unblocking a user, which only the operator may do, and refuses an unknown user', async () => {
    const SET_ACTIVE =
      'mutation ($SvcUserId: ID!, $isActive: Boolean!) { setUserActive(SvcUserId: $SvcUserId, isActive: $isActive) { SvcUserId isActive } }';
    const token = await stack.loginDemo();
    const blocked = await stack.graphql<{ setUserActive: { SvcUserId: string; isActive: boolean } }>(
      SET_ACTIVE,
      { SvcUserId: DEMO.userId, isActive: false },
      { 'x-service-key': OPERATOR_KEY },
    );
    expect(blocked.body.data?.setUserActive).toEqual({ SvcUserId: DEMO.userId, isActive: false });
    try {
      expect((await stack.rest('GET', '/restrictions', { headers: { token } })).status).toBe(401);
      expect(
        (await stack.rest('PUT', '/token', { body: { channel: 'internet', userName: 'demo.user', password: DEMO.password } })).status,
      ).not.toBe(200);
    } finally {
      const unblocked = await stack.graphql<{ setUserActive: { isActive: boolean } }>(
        SET_ACTIVE,
        { SvcUserId: DEMO.userId, isActive: true },
        { 'x-service-key': OPERATOR_KEY },
      );
      expect(unblocked.body.data?.setUserActive.isActive).toBe(true);
    }
    expect((await stack.rest('GET', '/restrictions', { headers: { token } })).status).toBe(200);
    const [block] = await records({ action: 'USER_BLOCKED', subjectId: DEMO.userId });
    expect(block).toMatchObject({ actorKind: 'service', actorId: 'operator', subjectType: 'user' });
    expect(await records({ action: 'USER_UNBLOCKED', subjectId: DEMO.userId })).toHaveLength(1);

    const byAnother = await stack.graphql(SET_ACTIVE, { SvcUserId: DEMO.userId, isActive: false }, { 'x-service-key': OTHER_SERVICE_KEY });
    expect(byAnother.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unknown = await stack.graphql(SET_ACTIVE, { SvcUserId: 'no_such_user', isActive: false }, { 'x-service-key': OPERATOR_KEY });
    expect(unknown.body.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND', field: 'SvcUserId' });
    expect(await records({ action: 'USER_BLOCKED', subjectId: DEMO.userId })).toHaveLength(1);
  });

  it('records a failed login, a login, its token and its revocation, with the request id and address and no secret', async () => {
    const failed = await stack.rest('PUT', '/token', {
      body: { channel: 'internet', userName: 'demo.user', password: 'Wrong#Pass1' },
      headers: { 'x-request-id': 'audit-failed-login' },
    });
    expect(failed.status).toBe(401);
    const token = await stack.loginDemo();
    expect((await stack.rest('DELETE', '/token', { headers: { token } })).status).toBe(200);

    const failure = (await records({ action: 'LOGIN_FAILED', subjectId: 'internet:demo.user' }))[0]!;
    expect(failure).toMatchObject({
      actorKind: 'anonymous',
      actorId: null,
      subjectType: 'actor',
      requestId: 'audit-failed-login',
      clientIp: '127.0.0.1',
    });
    expect(detail(failure, 'channel')).toBe('internet');
    const success = (await records({ action: 'LOGIN_SUCCEEDED', subjectId: DEMO.userId }))[0]!;
    expect(detail(success, 'channel')).toBe('internet');
    const issued = (await records({ action: 'TOKEN_ISSUED' })).find((r) => detail(r, 'owner') === DEMO.userId)!;
    expect(issued).toMatchObject({ subjectType: 'session' });
    const revoked = await records({ action: 'TOKEN_REVOKED', subjectId: issued.subjectId });
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ actorKind: 'user', actorId: DEMO.userId });

    const everything = JSON.stringify(await records());
    expect(everything).not.toContain(token);
    expect(everything).not.toContain('Wrong#Pass1');
    expect(everything).not.toContain(DEMO.password);
  });

  it('records the lockout of an actor and the attempts refused while it is locked', async () => {
    const attempt = async () =>
      (
        await stack.rest<{ error: { code: string } }>('PUT', '/token', {
          body: { channel: 'internet', userName: 'nobody.here', password: 'Wrong#Pass1' },
        })
      ).body.error.code;
    for (let i = 0; i < 2; i += 1) expect(await attempt()).toBe('UNAUTHENTICATED');
    expect(await attempt()).toBe('ACTOR_LOCKED');
    expect(await attempt()).toBe('ACTOR_LOCKED');
    // A name no user has may be a password in the wrong field: its failures, its lock and the
    // refusals while locked are recorded by a hash.
    const hashed = `internet:sha256:${createHash('sha256').update('internet:nobody.here').digest('hex').slice(0, 16)}`;
    const locked = await records({ action: 'ACTOR_LOCKED', subjectId: hashed });
    expect(locked).toHaveLength(1);
    expect(detail(locked[0]!, 'failures')).toBe('2');
    expect(await records({ action: 'LOGIN_REFUSED', subjectId: hashed })).toHaveLength(2);
    expect(await records({ action: 'LOGIN_FAILED', subjectId: hashed })).toHaveLength(2);
    for (const action of ['LOGIN_FAILED', 'ACTOR_LOCKED', 'LOGIN_REFUSED'])
      expect(JSON.stringify(await records({ action }))).not.toContain('nobody.here');
  });

  it('records an aggregator password change and the revocation of its tokens, as the aggregator user', async () => {
    const token = await aggregatorToken();
    const changed = await stack.rest('POST', '/user/change-password', {
      headers: { 'x-svc-token': token },
      body: { oldPassword: DEMO.aggregatorPassword, newPassword: 'Audit#Pass2027' },
    });
    expect(changed.status).toBe(200);
    const [record] = await records({ action: 'PASSWORD_CHANGED', subjectId: DEMO.aggregatorLogin });
    expect(record).toMatchObject({ actorKind: 'aggregator', actorId: DEMO.aggregatorLogin, subjectType: 'aggregatorUser' });
    const [revocation] = await records({ action: 'TOKEN_REVOKED', subjectId: DEMO.aggregatorLogin });
    expect(Number(detail(revocation!, 'revokedTokens'))).toBeGreaterThanOrEqual(2);
    const back = await stack.rest('POST', '/user/change-password', {
      headers: { 'x-svc-token': await aggregatorToken('Audit#Pass2027') },
      body: { oldPassword: 'Audit#Pass2027', newPassword: DEMO.aggregatorPassword },
    });
    expect(back.status).toBe(200);
  });

  it('records a card turned off and on by its owner, and nothing for a request that changed nothing', async () => {
    const token = await stack.loginDemo();
    const card = DEMO.cardIds[0];
    expect((await stack.rest('POST', `/cards/${card}/off`, { headers: { token } })).status).toBe(200);
    expect((await stack.rest('POST', `/cards/${card}/off`, { headers: { token } })).status).toBe(200);
    expect((await stack.rest('POST', `/cards/${card}/on`, { headers: { token } })).status).toBe(200);
    const off = await records({ action: 'CARD_TURNED_OFF', subjectId: card });
    const on = await records({ action: 'CARD_TURNED_ON', subjectId: card });
    expect(off).toHaveLength(1);
    expect(on).toHaveLength(1);
    expect(off[0]).toMatchObject({ actorKind: 'user', actorId: DEMO.userId, subjectType: 'card' });
  });

  it('records every payment link transition with its from and to status', async () => {
    const token = await aggregatorToken();
    const jwt = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': token },
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
    const created = await stack.rest<Envelope<{ svcTransactionId: string }>>('POST', '/public/merchant/payment/create', {
      headers: { 'x-svc-jwtoken': jwt },
      body: {
        payerName: 'Audit Payer',
        amount: 10,
        currency: 'USD',
        fields: [{ index: 0, code: 'email', label: 'Email', value: 'payer@example.com' }],
      },
    });
    expect(created.status).toBe(200);
    const id = created.body.data.svcTransactionId;
    expect(
      (await stack.rest('POST', '/public/merchant/payment/send', { headers: { 'x-svc-jwtoken': jwt }, body: { svcTransactionId: id } }))
        .status,
    ).toBe(200);
    expect(
      (await stack.rest('POST', '/public/merchant/payment/cancel', { headers: { 'x-svc-jwtoken': jwt }, body: { svcTransactionId: id } }))
        .status,
    ).toBe(200);
    const transitions = (await records({ action: 'PAYMENT_LINK_STATUS_CHANGED', subjectId: id })).reverse();
    expect(transitions.map((r) => [detail(r, 'from'), detail(r, 'to')])).toEqual([
      [null, 'Initiated'],
      ['Initiated', 'Sent'],
      ['Sent', 'Cancelled'],
    ]);
    expect(transitions.every((r) => r.actorKind === 'merchant' && r.actorId === DEMO.merchantId)).toBe(true);
    const merchantTokens = await records({ action: 'TOKEN_ISSUED', subjectId: DEMO.merchantId });
    expect(merchantTokens[0]).toMatchObject({ actorKind: 'aggregator', actorId: DEMO.aggregatorLogin, subjectType: 'merchant' });
    expect(JSON.stringify(merchantTokens)).not.toContain(jwt);
  });

  it("records a customer's token by its link, and a due expiry as the system's even when a visitor's request finds it", async () => {
    const token = await aggregatorToken();
    const jwt = (
      await stack.rest<Envelope<{ token: string }>>('POST', '/payment-link/merchant/get-token', {
        headers: { 'x-svc-token': token },
        body: { svcMerchantId: DEMO.merchantId },
      })
    ).body.data.token;
    const id = (
      await stack.rest<Envelope<{ svcTransactionId: string }>>('POST', '/public/merchant/payment/create', {
        headers: { 'x-svc-jwtoken': jwt },
        body: { amount: 7, currency: 'USD', fields: [{ index: 0, code: 'email', label: 'Email', value: 'payer@example.com' }] },
      })
    ).body.data.svcTransactionId;
    const sent = await stack.rest<Envelope<{ link: string }>>('POST', '/public/merchant/payment/send', {
      headers: { 'x-svc-jwtoken': jwt },
      body: { svcTransactionId: id },
    });
    const customer = await stack.rest<Envelope<{ token: string }>>('POST', '/public/customer/payment/link', {
      body: { link: sent.body.data.link },
    });
    expect(customer.status).toBe(200);
    const [issued] = await records({ action: 'TOKEN_ISSUED', subjectId: id });
    expect(issued).toMatchObject({ actorKind: 'anonymous', subjectType: 'paymentLink' });
    expect(detail(issued!, 'kind')).toBe('customer');
    expect(JSON.stringify(issued)).not.toContain(customer.body.data.token);

    await stack.mongo
      .db('payments')
      .collection('paymentLinks')
      .updateOne({ _id: id as never }, { $set: { dtsExpiredAt: new Date(Date.now() - 1000) } });
    expect((await stack.rest('POST', '/public/customer/payment/link', { body: { link: sent.body.data.link } })).status).toBe(409);
    // The services' own expiry task may find the link due first: its record lands just after the 409.
    const newestChange = async () => (await records({ action: 'PAYMENT_LINK_STATUS_CHANGED', subjectId: id }))[0];
    await expect.poll(async () => detail((await newestChange())!, 'to'), { timeout: 5000 }).toBe('Expired');
    const expiry = await newestChange();
    expect(expiry).toMatchObject({ actorKind: 'system', actorId: null });
  });

  it('records webhook configuration changes with the origin only, never the secret or the path', async () => {
    const token = await aggregatorToken();
    const configured = await stack.graphql<{ configureWebhook: { secret: string | null } }>(
      'mutation ($input: WebhookConfigInput!) { configureWebhook(input: $input) { secret } }',
      { input: { url: 'http://127.0.0.1:9/hooks/cards?key=receiver-own-token', defaultStrategy: 'decline', rotateSecret: true } },
      { 'x-svc-token': token },
    );
    expect(configured.body.errors).toBeUndefined();
    const saved = await stack.graphql<{ saveMerchant: { webhookSecret: string | null } }>(
      'mutation ($input: MerchantInput!) { saveMerchant(input: $input) { webhookSecret } }',
      {
        input: {
          svcMerchantId: DEMO.merchantId,
          linkDelivery: 'webhook',
          webhookUrl: 'http://127.0.0.1:9/hooks/links',
          rotateSecret: true,
        },
      },
      { 'x-svc-token': token },
    );
    expect(saved.body.errors).toBeUndefined();
    const changes = await records({ action: 'WEBHOOK_CONFIGURED' });
    const cards = changes.find((r) => r.subjectType === 'aggregatorCardWebhook')!;
    expect(cards).toMatchObject({ actorKind: 'aggregator', subjectId: DEMO.aggregatorId });
    expect(detail(cards, 'origin')).toBe('http://127.0.0.1:9');
    expect(detail(cards, 'secretRotated')).toBe('true');
    const merchant = changes.find((r) => r.subjectType === 'merchant')!;
    expect(merchant.subjectId).toBe(DEMO.merchantId);
    expect(detail(merchant, 'linkDelivery')).toBe('webhook');
    const text = JSON.stringify(changes);
    expect(text).not.toContain('receiver-own-token');
    expect(text).not.toContain(configured.body.data!.configureWebhook.secret!);
    expect(text).not.toContain(saved.body.data!.saveMerchant.webhookSecret!);
  });

  it('is read by an operator only, newest first, a page at a time', async () => {
    const endUser = await auditLog({}, { token: await stack.loginDemo() });
    expect(endUser.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(endUser.body.data).toBeNull();
    const otherService = await auditLog({}, { 'x-service-key': OTHER_SERVICE_KEY });
    expect(otherService.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const anonymous = await auditLog({}, {});
    expect(anonymous.body.data).toBeNull();

    const all = await records();
    const times = all.map((r) => Date.parse(r.dts));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const pages: AuditRecord[] = [];
    let after: string | null = null;
    do {
      const response = await auditLog({ first: 7, after });
      const page: AuditLogPage = response.body.data!.auditLog;
      pages.push(...page.records);
      after = page.hasNextPage ? page.endCursor : null;
    } while (after);
    expect(pages.map((r) => r.id)).toEqual(all.map((r) => r.id));

    const badCursor = await auditLog({ after: 'not-a-cursor' });
    expect(badCursor.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'after' });
    const tooMany = await auditLog({ first: 501 });
    expect(tooMany.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'first' });
  });

  it('parks a record compliance refuses, with the refusal, and still carries the records behind it', async () => {
    const userDb = stack.mongo.db('user');
    // A record as a newer producer might send it: an action this compliance does not know.
    const unknown = {
      action: 'ACCOUNT_FROZEN',
      dts: new Date().toISOString(),
      actorKind: 'system',
      actorId: null,
      subjectType: 'user',
      subjectId: DEMO.userId,
      requestId: null,
      clientIp: null,
      details: {},
    } as unknown as AuditRecordPayload;
    const refused: OutboxEvent = {
      _id: 'evt_refused_audit',
      type: 'audit.recorded',
      audience: {},
      payload: unknown,
      dtsCreated: new Date(),
      dtsPublished: new Date(),
      dtsForwarded: null,
    };
    await outboxCollection(userDb).insertOne(refused);
    await backgroundAuditTrail(userDb, createLogger('silent'), { kind: 'service', service: 'parking-check' }).record('USER_UNBLOCKED', {
      type: 'user',
      id: 'parking_check_user',
    });
    await stack.auditForwarded();
    const parked = await outboxCollection(userDb).findOne({ _id: 'evt_refused_audit' });
    expect(parked?.dtsForwarded).toBeInstanceOf(Date);
    expect(parked?.refusal).toMatchObject({ dispatcher: 'audit forwarding' });
    expect(await records({ subjectId: 'parking_check_user' })).toHaveLength(1);
    expect(stack.logs.some((line) => line.msg === 'event refused and parked' && line.eventId === 'evt_refused_audit')).toBe(true);
  });

  it("refuses a forwarded batch with one bad record whole, naming the record's field, and keeps the audit actions in step with the schema", async () => {
    const asPayments = {
      'x-internal-principal': signPrincipal({ kind: 'service', service: 'payments' }, stack.config.internalSecret, Date.now(), 'gateway'),
    };
    const APPEND = 'mutation ($records: [AuditRecordInput!]!) { appendAuditRecords(records: $records) { appended } }';
    const record = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      action: 'USER_BLOCKED',
      dts: new Date().toISOString(),
      actorKind: 'service',
      actorId: 'payments',
      subjectType: 'user',
      subjectId: 'append_check_user',
      details: {},
      ...extra,
    });
    const wrongKind = await stack.graphql(
      APPEND,
      { records: [record('evt_append_good'), record('evt_append_bad', { actorKind: 'wizard' })] },
      asPayments,
    );
    expect(wrongKind.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'records[1].actorKind' });
    const nested = await stack.graphql(APPEND, { records: [record('evt_append_nested', { details: { deep: { a: 1 } } })] }, asPayments);
    expect(nested.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'records[0].details' });
    expect(await auditLogCollection(stack.mongo.db('compliance')).countDocuments({ subjectId: 'append_check_user' })).toBe(0);
    const endUser = await stack.graphql(APPEND, { records: [record('evt_append_user')] }, { token: await stack.loginDemo() });
    expect(endUser.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const sdl = parse(readFileSync(path.join(REPO_ROOT, 'schema', 'compliance.graphql'), 'utf8'));
    const actions = sdl.definitions.find(
      (definition): definition is EnumTypeDefinitionNode =>
        definition.kind === Kind.ENUM_TYPE_DEFINITION && definition.name.value === 'AuditAction',
    );
    expect(actions?.values?.map((value) => value.name.value).sort()).toEqual([...AUDIT_ACTIONS].sort());
  });
});
