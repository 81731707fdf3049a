import type { Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import type { AuditRecordPayload } from '../../platform/contracts/events.js';
import { outboxCollection, type OutboxEvent } from '../../platform/messaging/outbox.js';
import type { AuditAction } from '../../platform/contracts/events.js';
import { auditLogCollection } from '../../subgraphs/compliance/src/audit/audit-log.js';
import { proceduralRestrictionsCollection, restrictionsCollection } from '../../subgraphs/compliance/src/restrictions/datasource.js';
import { startTestStack, until, type GraphQLBody, type JsonResponse, type TestStack } from '../support/harness.js';

const OPERATOR_KEY = 'operator-key-for-the-restriction-writes-0001';
const CARDS_KEY = 'cards-key-for-the-restriction-writes-000001';
const operator = { 'x-service-key': OPERATOR_KEY };
const cards = { 'x-service-key': CARDS_KEY };

const RESTRICTION_FIELDS =
  'id restrictionId restrictionName description txnTypes transactionCurrencies fromAmount toAmount fromAmountCurrency toAmountCurrency isAllowed isIgnoreRest priority';
const PROCEDURAL_FIELDS = 'id SvcUserId name reason dtsCreated';
const SET = `mutation ($input: RestrictionInput!) { setRestriction(input: $input) { ${RESTRICTION_FIELDS} } }`;
const REMOVE = 'mutation ($restrictionId: ID!) { removeRestriction(restrictionId: $restrictionId) }';
const PLACE = `mutation ($input: ProceduralRestrictionInput!) { placeProceduralRestriction(input: $input) { ${PROCEDURAL_FIELDS} } }`;
const LIFT = 'mutation ($id: ID!) { liftProceduralRestriction(id: $id) }';
const RULES = `query ($SvcUserIds: [ID!]) { restrictionRules(SvcUserIds: $SvcUserIds) {
  transactionTypes { name isAllowed sourceAccountTypes destinationAccountTypes allowedTransactionCurrencies }
  defaults { ${RESTRICTION_FIELDS} }
  users { id SvcUserId restrictions { ${RESTRICTION_FIELDS} } procedural { ${PROCEDURAL_FIELDS} } }
} }`;
const EVALUATE = 'query ($input: TransactionProposalInput!) { evaluateTransaction(input: $input) { allowed decidedBy rule } }';

interface Restriction {
  id: string;
  restrictionId: string;
  restrictionName: string;
  description: string | null;
  txnTypes: string[];
  transactionCurrencies: string[];
  fromAmount: string | null;
  toAmount: string | null;
  fromAmountCurrency: string | null;
  toAmountCurrency: string | null;
  isAllowed: boolean;
  isIgnoreRest: boolean;
  priority: number;
}
interface Procedural {
  id: string;
  SvcUserId: string;
  name: string;
  reason: string;
  dtsCreated: string | null;
}
interface Rules {
  transactionTypes: Array<{
    name: string;
    isAllowed: boolean;
    sourceAccountTypes: string[];
    destinationAccountTypes: string[] | null;
    allowedTransactionCurrencies: string[];
  }>;
  defaults: Restriction[];
  users: Array<{ id: string; SvcUserId: string; restrictions: Restriction[]; procedural: Procedural[] }>;
}
interface Decision {
  allowed: boolean;
  decidedBy: string;
  rule: string | null;
}

/** A restriction input: USA transfers in USD up to 5,000.00, allowed. */
const usaUpTo5000 = (restrictionId: string, SvcUserId: string | null, overrides: Record<string, unknown> = {}) => ({
  restrictionId,
  SvcUserId,
  restrictionName: 'usaUpTo5000',
  description: 'USA transfers up to 5,000 USD.',
  txnTypes: ['USA'],
  transactionCurrencies: ['USD'],
  fromAmount: '0',
  fromAmountCurrency: 'USD',
  toAmount: '5000',
  toAmountCurrency: 'USD',
  isAllowed: true,
  isIgnoreRest: false,
  priority: 1,
  ...overrides,
});

describe('operators write restrictions, each announced and audited; read models export them', () => {
  let stack: TestStack;
  let outbox: Collection<OutboxEvent>;

  beforeAll(async () => {
    stack = await startTestStack({ SERVICE_KEYS: `operator=${OPERATOR_KEY},cards=${CARDS_KEY}` });
    outbox = outboxCollection(stack.mongo.db('compliance'));
  });
  afterAll(async () => {
    await stack.stop();
  });

  const graphql = <T>(
    query: string,
    variables: Record<string, unknown>,
    headers: Record<string, string> = operator,
  ): Promise<JsonResponse<GraphQLBody<T>>> => stack.graphql<T>(query, variables, headers);
  const evaluate = async (SvcUserId: string, txnType: string, amount: string): Promise<Decision> => {
    const answer = await graphql<{ evaluateTransaction: Decision }>(EVALUATE, {
      input: { SvcUserId, txnType, amount, currency: 'USD', sourceAccountType: 'checking' },
    });
    expect(answer.body.errors).toBeUndefined();
    return answer.body.data!.evaluateTransaction;
  };

  /** Runs `act` and answers what it stored in the compliance outbox: its `restrictions.changed` events and its audit records. */
  const stored = async <T>(
    act: () => Promise<T>,
  ): Promise<{ result: T; changes: Array<OutboxEvent<'restrictions.changed'>>; audits: AuditRecordPayload[] }> => {
    const before = new Set((await outbox.find({}, { projection: { _id: 1 } }).toArray()).map((event) => event._id));
    const result = await act();
    const added = (await outbox.find({}).sort({ dtsCreated: 1 }).toArray()).filter((event) => !before.has(event._id));
    return {
      result,
      changes: added.filter((event): event is OutboxEvent<'restrictions.changed'> => event.type === 'restrictions.changed'),
      audits: added.flatMap((event) => (event.type === 'audit.recorded' ? [event.payload] : [])),
    };
  };
  /** The one audit record of an act, as the operator, on its subject. */
  const expectAudited = (audits: AuditRecordPayload[], action: AuditAction, subjectType: string, subjectId: string) => {
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ action, actorKind: 'service', actorId: 'operator', subjectType, subjectId });
    return audits[0]!;
  };
  /** Exactly one `restrictions.changed` event for SvcUserId, which the bus then carries (nothing forwards it). */
  const expectOneChange = async (changes: Array<OutboxEvent<'restrictions.changed'>>, SvcUserId: string | null) => {
    expect(changes).toHaveLength(1);
    const [change] = changes;
    expect(change).toMatchObject({ payload: { SvcUserId }, audience: SvcUserId === null ? {} : { SvcUserId } });
    expect(change!.dtsForwarded).not.toBeNull();
    await until(
      () => outbox.findOne({ _id: change!._id }),
      (event) => event?.dtsPublished instanceof Date,
    );
  };

  it("creates a user's restriction, which replaces the defaults at once, then replaces it by restrictionId", async () => {
    const user = 'writes_user_1';
    expect(await evaluate(user, 'USA', '4000')).toMatchObject({ allowed: false, decidedBy: 'default' });
    expect(await evaluate(user, 'paypal', '100')).toMatchObject({ allowed: true, rule: 'defaultUpTo2500' });

    const created = await stored(() => graphql<{ setRestriction: Restriction }>(SET, { input: usaUpTo5000('writes_r1', user) }));
    expect(created.result.body.errors).toBeUndefined();
    expect(created.result.body.data?.setRestriction).toEqual({
      id: 'Restriction:writes_r1',
      restrictionId: 'writes_r1',
      restrictionName: 'usaUpTo5000',
      description: 'USA transfers up to 5,000 USD.',
      txnTypes: ['USA'],
      transactionCurrencies: ['USD'],
      fromAmount: '0.00',
      toAmount: '5000.00',
      fromAmountCurrency: 'USD',
      toAmountCurrency: 'USD',
      isAllowed: true,
      isIgnoreRest: false,
      priority: 1,
    });
    expect(await restrictionsCollection(stack.mongo.db('compliance')).findOne({ _id: 'writes_r1' })).toMatchObject({
      restrictionId: 'writes_r1',
      SvcUserId: user,
      fromAmount: 0,
      toAmount: 500_000,
    });
    await expectOneChange(created.changes, user);
    expect(expectAudited(created.audits, 'RESTRICTION_SET', 'restriction', 'writes_r1').details).toEqual({
      SvcUserId: user,
      restrictionName: 'usaUpTo5000',
      created: true,
    });
    // Own restrictions replace the defaults: PayPal is no longer allowed by defaultUpTo2500.
    expect(await evaluate(user, 'USA', '4000')).toMatchObject({ allowed: true, decidedBy: 'restriction', rule: 'usaUpTo5000' });
    expect(await evaluate(user, 'paypal', '100')).toMatchObject({ allowed: false, decidedBy: 'default' });

    const replaced = await stored(() =>
      graphql<{ setRestriction: Restriction }>(SET, {
        input: usaUpTo5000('writes_r1', user, { restrictionName: 'usaUpTo3000', toAmount: '3000.5', description: null }),
      }),
    );
    expect(replaced.result.body.data?.setRestriction).toMatchObject({
      restrictionName: 'usaUpTo3000',
      toAmount: '3000.50',
      description: null,
    });
    expect(await restrictionsCollection(stack.mongo.db('compliance')).countDocuments({ SvcUserId: user })).toBe(1);
    await expectOneChange(replaced.changes, user);
    expect(expectAudited(replaced.audits, 'RESTRICTION_SET', 'restriction', 'writes_r1').details).toMatchObject({ created: false });
    expect(await evaluate(user, 'USA', '4000')).toMatchObject({ allowed: false, decidedBy: 'default' });
    expect(await evaluate(user, 'USA', '3000.50')).toMatchObject({ allowed: true, rule: 'usaUpTo3000' });

    // The audit records reach the audit log as every subgraph's do.
    const log = auditLogCollection(stack.mongo.db('compliance'));
    await until(
      () => log.countDocuments({ action: 'RESTRICTION_SET', subjectId: 'writes_r1' }),
      (count) => count === 2,
      20_000,
    );
  });

  it('refuses to move a restriction to another user or to the defaults, naming SvcUserId and changing nothing', async () => {
    const restrictions = restrictionsCollection(stack.mongo.db('compliance'));
    const demo = await restrictions.findOne({ _id: 'demo_restriction_2' });
    const defaults = await restrictions.findOne({ _id: 'default_restriction_1' });
    for (const [restrictionId, SvcUserId] of [
      ['demo_restriction_2', 'writes_user_2'],
      ['demo_restriction_2', null],
      ['default_restriction_1', DEMO.userId],
    ] as const) {
      const refused = await stored(() => graphql<{ setRestriction: Restriction }>(SET, { input: usaUpTo5000(restrictionId, SvcUserId) }));
      expect(refused.result.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field: 'SvcUserId' });
      expect(refused.result.body.data?.setRestriction ?? null).toBeNull();
      expect(refused.changes).toEqual([]);
      expect(refused.audits).toEqual([]);
    }
    expect(await restrictions.findOne({ _id: 'demo_restriction_2' })).toEqual(demo);
    expect(await restrictions.findOne({ _id: 'default_restriction_1' })).toEqual(defaults);
  });

  it.each([
    [{ restrictionId: 'not an id!' }, 'restrictionId'],
    [{ SvcUserId: '' }, 'SvcUserId'],
    [{ restrictionName: '' }, 'restrictionName'],
    [{ restrictionName: 'x'.repeat(101) }, 'restrictionName'],
    [{ description: '<script>' }, 'description'],
    [{ txnTypes: ['USA', 'teleport'] }, 'txnTypes[1]'],
    [{ transactionCurrencies: ['usd'] }, 'transactionCurrencies[0]'],
    [{ transactionCurrencies: ['XYZ'] }, 'transactionCurrencies[0]'],
    [{ fromAmountCurrency: null }, 'fromAmountCurrency'],
    [{ toAmount: null }, 'toAmountCurrency'],
    [{ fromAmount: '1.234' }, 'fromAmount'],
    [{ toAmount: '-1' }, 'toAmount'],
    [{ fromAmount: '6000' }, 'toAmount'],
    [{ toAmountCurrency: 'EUR', toAmount: '10' }, 'toAmountCurrency'],
    [{ priority: -1 }, 'priority'],
  ])('refuses a restriction with %j, naming %s and changing nothing', async (overrides, field) => {
    const restrictions = restrictionsCollection(stack.mongo.db('compliance'));
    const before = await restrictions.find({}).sort({ _id: 1 }).toArray();
    const refused = await stored(() =>
      graphql<{ setRestriction: Restriction }>(SET, { input: usaUpTo5000('writes_bad', 'writes_user_3', overrides) }),
    );
    expect(refused.result.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field });
    expect(refused.changes).toEqual([]);
    expect(refused.audits).toEqual([]);
    expect(await restrictions.find({}).sort({ _id: 1 }).toArray()).toEqual(before);
  });

  it("sets and removes a platform default, announced for everyone (SvcUserId null), and removes a user's restriction", async () => {
    const nobody = 'writes_nobody';
    expect(await evaluate(nobody, 'paypal', '200')).toMatchObject({ allowed: true, rule: 'defaultUpTo2500' });
    const set = await stored(() =>
      graphql<{ setRestriction: Restriction }>(SET, {
        input: usaUpTo5000('writes_default', null, {
          restrictionName: 'noPaypalOver100',
          txnTypes: ['paypal'],
          transactionCurrencies: ['*'],
          fromAmount: '100.01',
          toAmount: null,
          toAmountCurrency: null,
          isAllowed: false,
          priority: 0,
        }),
      }),
    );
    expect(set.result.body.data?.setRestriction).toMatchObject({
      restrictionId: 'writes_default',
      fromAmount: '100.01',
      toAmount: null,
      toAmountCurrency: null,
    });
    await expectOneChange(set.changes, null);
    expectAudited(set.audits, 'RESTRICTION_SET', 'restriction', 'writes_default');
    expect(await evaluate(nobody, 'paypal', '200')).toMatchObject({ allowed: false, decidedBy: 'restriction', rule: 'noPaypalOver100' });
    // A user with restrictions of their own is not concerned.
    expect(await evaluate(DEMO.userId, 'paypal', '200')).toMatchObject({ allowed: true, rule: 'domesticUpTo5000' });

    const removed = await stored(() => graphql<{ removeRestriction: boolean }>(REMOVE, { restrictionId: 'writes_default' }));
    expect(removed.result.body.data?.removeRestriction).toBe(true);
    await expectOneChange(removed.changes, null);
    expect(expectAudited(removed.audits, 'RESTRICTION_REMOVED', 'restriction', 'writes_default').details).toEqual({
      SvcUserId: null,
      restrictionName: 'noPaypalOver100',
    });
    expect(await evaluate(nobody, 'paypal', '200')).toMatchObject({ allowed: true, rule: 'defaultUpTo2500' });

    const again = await stored(() => graphql<{ removeRestriction: boolean }>(REMOVE, { restrictionId: 'writes_default' }));
    expect(again.result.body.data?.removeRestriction).toBe(false);
    expect(again.changes).toEqual([]);
    expect(again.audits).toEqual([]);

    // A user whose last restriction goes falls back to the defaults.
    await graphql(SET, { input: usaUpTo5000('writes_r4', 'writes_user_4') });
    expect(await evaluate('writes_user_4', 'paypal', '100')).toMatchObject({ allowed: false, decidedBy: 'default' });
    const own = await stored(() => graphql<{ removeRestriction: boolean }>(REMOVE, { restrictionId: 'writes_r4' }));
    expect(own.result.body.data?.removeRestriction).toBe(true);
    await expectOneChange(own.changes, 'writes_user_4');
    expectAudited(own.audits, 'RESTRICTION_REMOVED', 'restriction', 'writes_r4');
    expect(await evaluate('writes_user_4', 'paypal', '100')).toMatchObject({ allowed: true, rule: 'defaultUpTo2500' });
  });

  it('places and lifts a procedural restriction, which refuses every transaction while it stands', async () => {
    const user = 'writes_user_5';
    const placed = await stored(() =>
      graphql<{ placeProceduralRestriction: Procedural }>(PLACE, {
        input: { SvcUserId: user, name: 'amlReview', reason: 'Account under AML review.' },
      }),
    );
    expect(placed.result.body.errors).toBeUndefined();
    const procedural = placed.result.body.data!.placeProceduralRestriction;
    expect(procedural).toMatchObject({ SvcUserId: user, name: 'amlReview', reason: 'Account under AML review.' });
    expect(procedural.id).toMatch(/^ProceduralRestriction:prc_[0-9a-f]{24}$/);
    expect(Date.now() - Date.parse(procedural.dtsCreated ?? '')).toBeLessThan(60_000);
    const key = procedural.id.slice('ProceduralRestriction:'.length);
    expect(await proceduralRestrictionsCollection(stack.mongo.db('compliance')).findOne({ _id: key })).toMatchObject({
      SvcUserId: user,
      name: 'amlReview',
    });
    await expectOneChange(placed.changes, user);
    expect(expectAudited(placed.audits, 'PROCEDURAL_RESTRICTION_PLACED', 'proceduralRestriction', key).details).toEqual({
      SvcUserId: user,
      name: 'amlReview',
    });
    expect(await evaluate(user, 'USA', '1')).toMatchObject({ allowed: false, decidedBy: 'procedural', rule: 'amlReview' });

    const lifted = await stored(() => graphql<{ liftProceduralRestriction: boolean }>(LIFT, { id: procedural.id }));
    expect(lifted.result.body.data?.liftProceduralRestriction).toBe(true);
    await expectOneChange(lifted.changes, user);
    expectAudited(lifted.audits, 'PROCEDURAL_RESTRICTION_LIFTED', 'proceduralRestriction', key);
    expect(await evaluate(user, 'USA', '1')).toMatchObject({ allowed: true, rule: 'defaultUpTo2500' });

    const again = await stored(() => graphql<{ liftProceduralRestriction: boolean }>(LIFT, { id: procedural.id }));
    expect(again.result.body.data?.liftProceduralRestriction).toBe(false);
    expect(again.changes).toEqual([]);
    expect(again.audits).toEqual([]);
  });

  it.each([
    ['name', PLACE, { input: { SvcUserId: 'writes_user_6', name: '', reason: 'r' } }],
    ['name', PLACE, { input: { SvcUserId: 'writes_user_6', name: 'n'.repeat(61), reason: 'r' } }],
    ['reason', PLACE, { input: { SvcUserId: 'writes_user_6', name: 'n', reason: 'r'.repeat(501) } }],
    ['SvcUserId', PLACE, { input: { SvcUserId: 'writes user 6', name: 'n', reason: 'r' } }],
    ['id', LIFT, { id: 'Restriction:demo_restriction_1' }],
    ['id', LIFT, { id: 'prc_without_its_type' }],
  ])('refuses bad procedural input naming %s (case %#), changing nothing', async (field, query, variables) => {
    const placed = proceduralRestrictionsCollection(stack.mongo.db('compliance'));
    const before = await placed.countDocuments();
    const refused = await stored(() => graphql(query, variables));
    expect(refused.result.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field });
    expect(refused.changes).toEqual([]);
    expect(refused.audits).toEqual([]);
    expect(await placed.countDocuments()).toBe(before);
  });

  it('exports every rule without SvcUserIds: the types, the defaults and each user with rules of their own', async () => {
    await graphql(PLACE, { input: { SvcUserId: 'writes_user_7', name: 'dormant', reason: 'No activity for two years.' } });
    const answer = await graphql<{ restrictionRules: Rules }>(RULES, {}, cards);
    expect(answer.body.errors).toBeUndefined();
    const rules = answer.body.data!.restrictionRules;
    expect(rules.transactionTypes.map((type) => type.name)).toEqual([
      '1',
      'USA',
      'USA_wire',
      'cheque',
      'international',
      'paypal',
      'tocard',
    ]);
    expect(rules.transactionTypes.find((type) => type.name === 'tocard')).toEqual({
      name: 'tocard',
      isAllowed: true,
      sourceAccountTypes: ['checking', 'savings', 'card'],
      destinationAccountTypes: ['card'],
      allowedTransactionCurrencies: ['USD', 'EUR', 'GBP'],
    });
    expect(rules.defaults).toEqual([
      {
        id: 'Restriction:default_restriction_1',
        restrictionId: 'default_restriction_1',
        restrictionName: 'defaultUpTo2500',
        description: 'Payments up to 2,500 USD.',
        txnTypes: ['*'],
        transactionCurrencies: ['USD'],
        fromAmount: '0.00',
        toAmount: '2500.00',
        fromAmountCurrency: 'USD',
        toAmountCurrency: 'USD',
        isAllowed: true,
        isIgnoreRest: false,
        priority: 1,
      },
    ]);
    const users = rules.users.map((user) => user.SvcUserId);
    expect(users).toEqual([...users].sort());
    expect(users).toEqual(expect.arrayContaining([DEMO.userId, 'writes_user_1', 'writes_user_7']));
    // Users whose rules were all removed are not listed.
    expect(users).not.toContain('writes_user_4');
    expect(users).not.toContain('writes_user_5');
    const demo = rules.users.find((user) => user.SvcUserId === DEMO.userId)!;
    expect(demo.id).toBe(`UserRestrictionRules:${DEMO.userId}`);
    expect(demo.restrictions.map((r) => r.restrictionName)).toEqual([
      'cardTopUpUpTo20000',
      'noInternational',
      'domesticUpTo5000',
      'noPaypalOver500',
    ]);
    expect(demo.restrictions.find((r) => r.restrictionName === 'domesticUpTo5000')).toMatchObject({
      fromAmount: '0.00',
      toAmount: '5000.00',
      toAmountCurrency: 'USD',
    });
    expect(demo.restrictions.find((r) => r.restrictionName === 'noPaypalOver500')).toMatchObject({
      fromAmount: '500.01',
      toAmount: null,
      toAmountCurrency: null,
    });
    expect(demo.procedural).toEqual([]);
    const dormant = rules.users.find((user) => user.SvcUserId === 'writes_user_7')!;
    expect(dormant.restrictions).toEqual([]);
    expect(dormant.procedural).toMatchObject([{ SvcUserId: 'writes_user_7', name: 'dormant', reason: 'No activity for two years.' }]);
  });

  it('exports the rules of the users asked, one entry per id in the order asked, empty for a user without rules of their own', async () => {
    const answer = await graphql<{ restrictionRules: Rules }>(
      RULES,
      { SvcUserIds: ['writes_nobody_else', DEMO.userId, 'writes_user_7', DEMO.userId] },
      cards,
    );
    expect(answer.body.errors).toBeUndefined();
    const rules = answer.body.data!.restrictionRules;
    expect(rules.transactionTypes).toHaveLength(7);
    expect(rules.defaults.map((r) => r.restrictionName)).toEqual(['defaultUpTo2500']);
    expect(rules.users.map((user) => user.SvcUserId)).toEqual(['writes_nobody_else', DEMO.userId, 'writes_user_7']);
    expect(rules.users[0]).toEqual({
      id: 'UserRestrictionRules:writes_nobody_else',
      SvcUserId: 'writes_nobody_else',
      restrictions: [],
      procedural: [],
    });
    expect(rules.users[1]!.restrictions).toHaveLength(4);
    expect(rules.users[2]!.procedural.map((p) => p.name)).toEqual(['dormant']);
    // The operator may read it too.
    expect(
      (await graphql<{ restrictionRules: Rules }>(RULES, { SvcUserIds: [DEMO.userId] })).body.data?.restrictionRules.users,
    ).toHaveLength(1);
    for (const [SvcUserIds, field] of [
      [[], 'SvcUserIds'],
      [['ok_id', 'not an id'], 'SvcUserIds[1]'],
      [Array.from({ length: 1001 }, (_, i) => `u${i}`), 'SvcUserIds'],
    ] as const) {
      const refused = await graphql<{ restrictionRules: Rules }>(RULES, { SvcUserIds }, cards);
      expect(refused.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', field });
    }
  });

  it('refuses every caller but the operator (and, for the export, the cards service) as FORBIDDEN, changing nothing', async () => {
    const token = await stack.loginDemo();
    const calls: Array<[string, Record<string, unknown>]> = [
      [SET, { input: usaUpTo5000('writes_forbidden', DEMO.userId) }],
      [REMOVE, { restrictionId: 'demo_restriction_1' }],
      [PLACE, { input: { SvcUserId: DEMO.userId, name: 'forbidden', reason: 'Not an operator.' } }],
      [LIFT, { id: 'ProceduralRestriction:anything' }],
      [RULES, {}],
    ];
    const restrictions = restrictionsCollection(stack.mongo.db('compliance'));
    const before = await restrictions.find({}).sort({ _id: 1 }).toArray();
    for (const [index, [query, variables]] of calls.entries()) {
      const callers: Array<Record<string, string>> = index === calls.length - 1 ? [{ token }] : [{ token }, cards];
      for (const headers of callers) {
        const refused = await stored(() => graphql(query, variables, headers));
        expect(refused.result.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
        expect(refused.result.body.data ?? null).toBeNull();
        expect(refused.changes).toEqual([]);
        expect(refused.audits).toEqual([]);
      }
    }
    expect(await restrictions.find({}).sort({ _id: 1 }).toArray()).toEqual(before);
    expect(await proceduralRestrictionsCollection(stack.mongo.db('compliance')).countDocuments({ SvcUserId: DEMO.userId })).toBe(0);
  });
});
