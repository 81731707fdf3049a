import { createHash } from 'node:crypto';
import type { Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { LEASE_MS, transact, type Lease } from '../../subgraphs/user/src/attempt-slots.js';
import { consumeCode, MAX_CODE_ATTEMPTS, type PendingCode } from '../../subgraphs/user/src/codes.js';
import type { LockoutDocument } from '../../subgraphs/user/src/auth/datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';
import { aggregatorOutcome, counted, outcome, type AggregatorBody, type ErrorBody } from '../support/login-outcomes.js';

const times = <T>(n: number, make: () => Promise<T>) => Promise.all(Array.from({ length: n }, make));
const lease = (msFromNow: number, id: string): Lease => ({ id, until: new Date(Date.now() + msFromNow) });

// LOGIN_MAX_FAILURES and LOCK_PERIOD_SECONDS at their defaults, 5 and 900, as docs/decisions.md states the rule.
// Every request here comes from one address: the per-address count (`from:<group> <actor>`)
// locks, the actor's count across addresses (`<actor>`) counts along (docs/security.md).
describe('the lockout counts failures, not attempts (LOGIN_MAX_FAILURES 5)', () => {
  let stack: TestStack;
  let lockouts: Collection<LockoutDocument>;
  /** The id of an actor's count from this test's address group, learnt from a probe's failure. */
  let fromHere: (actor: string) => string;
  const login = (password: string, userName: string = DEMO.userName) =>
    stack.rest<ErrorBody>('PUT', '/token', { body: { channel: 'internet', userName, password } });
  const getToken = (password: string) =>
    stack.rest<AggregatorBody>('POST', '/auth/get-token', { body: { user: { login: DEMO.aggregatorLogin, password } } });

  beforeAll(async () => {
    stack = await startTestStack();
    lockouts = stack.mongo.db('user').collection<LockoutDocument>('lockouts');
    expect(outcome(await login('Wrong#Pass1', 'address.probe'))).toBe('401 UNAUTHENTICATED');
    const probe = (await lockouts.find().toArray()).find(
      (document) => document._id.startsWith('from:') && document._id.endsWith(' internet:address.probe'),
    );
    const group = probe?._id.slice('from:'.length, probe._id.indexOf(' '));
    expect(group).toBeTruthy();
    fromHere = (actor) => `from:${group} ${actor}`;
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('lets twenty correct logins of one user sent at once all in, and remembers nothing of them', async () => {
    const answers = await times(20, () => login(DEMO.password));
    expect(answers.map(outcome)).toEqual(Array.from({ length: 20 }, () => '200'));
    expect(await lockouts.findOne({ _id: `internet:${DEMO.userName}` })).toBeNull();
  });

  it('lets a correct login wait for a slot held by a check in flight on another replica, and refuses it with 429 and Retry-After when none frees', async () => {
    // Five leases of checks in flight elsewhere (the state is the database's, whichever replica wrote it).
    const actor = fromHere('internet:waiting.user');
    await lockouts.insertOne({
      _id: actor,
      failures: 0,
      dtsLastFailure: null,
      lockedUntil: null,
      leases: ['a', 'b', 'c', 'd', 'e'].map((id) => lease(LEASE_MS, id)),
      version: 'v1',
    });
    const freed = new Promise<void>((resolve) =>
      setTimeout(
        () =>
          void lockouts
            .updateOne({ _id: actor }, { $set: { leases: ['a', 'b', 'c', 'd'].map((id) => lease(LEASE_MS, id)), version: 'v2' } })
            .then(() => resolve()),
        700,
      ),
    );
    const began = Date.now();
    const waited = await login('Wrong#Pass1', 'waiting.user');
    await freed;
    // It waited for the freed slot, then was checked (a wrong password: one failure).
    expect(outcome(waited)).toBe('401 UNAUTHENTICATED');
    expect(Date.now() - began).toBeGreaterThanOrEqual(600);
    expect(await lockouts.findOne({ _id: actor })).toMatchObject({ failures: 1, lockedUntil: null });

    // Every slot held and none freed: refused after the wait, not locked, and nothing counted.
    await lockouts.updateOne({ _id: actor }, { $set: { leases: ['a', 'b', 'c', 'd'].map((id) => lease(LEASE_MS, id)), version: 'v3' } });
    const refused = await login(DEMO.password, 'waiting.user');
    expect(outcome(refused)).toBe('429 TOO_MANY_ATTEMPTS');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(LEASE_MS / 1000);
    expect(await lockouts.findOne({ _id: actor })).toMatchObject({ failures: 1, lockedUntil: null });

    // Leases of a process that died lapse: they hold no slot.
    await lockouts.updateOne({ _id: actor }, { $set: { leases: ['a', 'b', 'c', 'd'].map((id) => lease(-1, id)), version: 'v4' } });
    expect(outcome(await login('Wrong#Pass1', 'waiting.user'))).toBe('401 UNAUTHENTICATED');
    expect(await lockouts.findOne({ _id: actor })).toMatchObject({ failures: 2, leases: [] });
  });

  it('never lets a write land on a document deleted and created again since it was read (versions are not reused)', async () => {
    const actor = 'internet:versioned.user';
    const write = (failures: number) =>
      transact<LockoutDocument, null>(lockouts, actor, () => ({
        change: { kind: 'write', set: { failures, dtsLastFailure: null, lockedUntil: null, leases: [] } },
        result: null,
      }));
    await write(1);
    const read = await lockouts.findOne({ _id: actor });
    await transact<LockoutDocument, null>(lockouts, actor, () => ({ change: { kind: 'delete' }, result: null }));
    await write(2);
    // A writer that read the first document and writes conditionally on its version finds nothing to change.
    const late = await lockouts.updateOne({ _id: actor, version: read?.version }, { $set: { failures: 99 } });
    expect(late.matchedCount).toBe(0);
    expect(await lockouts.findOne({ _id: actor })).toMatchObject({ failures: 2 });
  });

  it('locks, rather than refusing over and over, an actor whose failures from one address reached the limit without a lock (as under a lowered limit)', async () => {
    const actor = fromHere('internet:older.user');
    await lockouts.insertOne({ _id: actor, failures: 5, dtsLastFailure: new Date(), lockedUntil: null });
    const began = Date.now();
    expect(outcome(await login(DEMO.password, 'older.user'))).toBe('401 ACTOR_LOCKED');
    // At once: no wait for a slot that no check in flight holds.
    expect(Date.now() - began).toBeLessThan(3000);
  });

  it('checks only five of six wrong passwords sent at once: five 401 UNAUTHENTICATED, the fifth failure locks, the sixth is 401 ACTOR_LOCKED, and so is the right password after', async () => {
    const answers = await times(6, () => login('Wrong#Pass1'));
    expect(counted(answers.map(outcome))).toEqual({ '401 ACTOR_LOCKED': 1, '401 UNAUTHENTICATED': 5 });
    // The lock is this address's; the count across addresses holds the same five failures and no lock.
    const lock = await lockouts.findOne({ _id: fromHere(`internet:${DEMO.userName}`) });
    expect(lock).toMatchObject({ failures: 5, leases: [] });
    expect(lock?.lockedUntil?.getTime()).toBeGreaterThan(Date.now() + 890_000);
    expect(await lockouts.findOne({ _id: `internet:${DEMO.userName}` })).toMatchObject({ failures: 5, leases: [], lockedUntil: null });
    expect(outcome(await login(DEMO.password))).toBe('401 ACTOR_LOCKED');
  });

  it('does the same for the aggregator get-token: twenty correct at once all in, six wrong at once lock after five', async () => {
    const correct = await times(20, () => getToken(DEMO.aggregatorPassword));
    expect(correct.map(aggregatorOutcome)).toEqual(Array.from({ length: 20 }, () => '200'));
    const wrong = await times(6, () => getToken('Wrong#Pass1'));
    expect(counted(wrong.map(aggregatorOutcome))).toEqual({ '401 unauthorized': 5, '401 unauthorized (locked)': 1 });
    expect(aggregatorOutcome(await getToken(DEMO.aggregatorPassword))).toBe('401 unauthorized (locked)');
    expect(await lockouts.findOne({ _id: fromHere(`aggregator:${DEMO.aggregatorLogin}`) })).toMatchObject({ failures: 5, leases: [] });
    expect(await lockouts.findOne({ _id: `aggregator:${DEMO.aggregatorLogin}` })).toMatchObject({ failures: 5, leases: [] });
  });

  describe('one-time codes', () => {
    let codes: Collection<PendingCode>;
    const hash = (code: string) => createHash('sha256').update(code).digest('hex');
    const issue = (id: string) =>
      codes.replaceOne({ _id: id }, { codeHash: hash('123456'), attempts: 0, dtsExpiry: new Date(Date.now() + 600_000) }, { upsert: true });

    beforeAll(() => {
      codes = stack.mongo.db('user').collection<PendingCode>('codeProbes');
    });

    it('passes exactly one of ten racing uses of the right code, and counts none of them as a wrong try', async () => {
      await issue('race');
      const results = await times(10, () => consumeCode(codes, 'race', hash('123456')));
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      expect(await codes.findOne({ _id: 'race' })).toBeNull();
    });

    it('compares at most MAX_CODE_ATTEMPTS of twenty wrong guesses sent at once, and then the code is burned', async () => {
      await issue('burst');
      const results = await times(20, () => consumeCode(codes, 'burst', hash('000000')));
      expect(results.every((r) => r === null)).toBe(true);
      // Each compared guess counts exactly one wrong try.
      expect(await codes.findOne({ _id: 'burst' })).toMatchObject({ attempts: MAX_CODE_ATTEMPTS, leases: [] });
      expect(await consumeCode(codes, 'burst', hash('123456'))).toBeNull();
    });

    it('takes the right code after four wrong tries, sent at once with them', async () => {
      await issue('late');
      const results = await Promise.all([
        ...Array.from({ length: MAX_CODE_ATTEMPTS - 1 }, () => consumeCode(codes, 'late', hash('000000'))),
        consumeCode(codes, 'late', hash('123456')),
      ]);
      expect(results.at(-1)).toMatchObject({ _id: 'late' });
    });

    it('makes the right code wait for slots held by tries in flight, refuses it with TOO_MANY_ATTEMPTS when none frees, and ignores lapsed ones', async () => {
      await issue('held');
      await codes.updateOne({ _id: 'held' }, { $set: { leases: ['a', 'b', 'c', 'd', 'e'].map((id) => lease(LEASE_MS, id)) } });
      await expect(consumeCode(codes, 'held', hash('123456'), 300)).rejects.toMatchObject({ extensions: { code: 'TOO_MANY_ATTEMPTS' } });
      await codes.updateOne({ _id: 'held' }, { $set: { leases: ['a', 'b', 'c', 'd', 'e'].map((id) => lease(-1, id)) } });
      expect(await consumeCode(codes, 'held', hash('123456'), 300)).toMatchObject({ _id: 'held' });
    });
  });
});
