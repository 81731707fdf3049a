import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { authCollections } from '../../subgraphs/user/src/auth/datasource.js';
import { startTestStack, type TestStack } from '../support/harness.js';
import { aggregatorOutcome, counted, outcome, type AggregatorBody, type ErrorBody } from '../support/login-outcomes.js';

const WRONG = 'Wrong#Pass1';

// LOGIN_MAX_FAILURES 5 per actor and address group, LOGIN_ACCOUNT_MAX_FAILURES 20 per actor
// across addresses within LOGIN_ACCOUNT_WINDOW_SECONDS 3600: the defaults (docs/security.md,
// "Login lockout"). The client address is the adapter's x-forwarded-for (TRUST_PROXY).
describe('the lockout cannot be turned against a user, and still bounds guessing', () => {
  let stack: TestStack;
  const login = (from: string, password: string, userName: string = DEMO.userName) =>
    stack.rest<ErrorBody>('PUT', '/token', { headers: { 'x-forwarded-for': from }, body: { channel: 'internet', userName, password } });
  const getToken = (from: string, password: string) =>
    stack.rest<AggregatorBody>('POST', '/auth/get-token', {
      headers: { 'x-forwarded-for': from },
      body: { user: { login: DEMO.aggregatorLogin, password } },
    });

  beforeAll(async () => {
    stack = await startTestStack({ TRUST_PROXY: 'true' });
  });
  beforeEach(async () => {
    const { lockouts, knownSources } = authCollections(stack.mongo.db('user'));
    await lockouts.deleteMany({});
    await knownSources.deleteMany({});
  });
  afterAll(async () => {
    await stack.stop();
  });

  it('lets the owner at another address log in with the right password after an attacker locked the user name from theirs', async () => {
    const attacker = '198.51.100.10';
    const wrong = await Promise.all(Array.from({ length: 6 }, () => login(attacker, WRONG)));
    expect(counted(wrong.map(outcome))).toEqual({ '401 ACTOR_LOCKED': 1, '401 UNAUTHENTICATED': 5 });
    // The attacker's address stays locked, even with the right password.
    expect(outcome(await login(attacker, DEMO.password))).toBe('401 ACTOR_LOCKED');
    // The owner, at an address never seen before, is not.
    expect(outcome(await login('203.0.113.20', DEMO.password))).toBe('200');
    // An IPv6 attacker counts by the /64: a fresh address in it per guess gains nothing.
    const fromOne64 = [];
    for (let i = 0; i < 5; i += 1) fromOne64.push(outcome(await login(`2001:db8:1:2::${i + 11}`, WRONG)));
    expect(fromOne64).toEqual(Array.from({ length: 5 }, () => '401 UNAUTHENTICATED'));
    expect(outcome(await login('2001:db8:1:2:ffff::1', DEMO.password))).toBe('401 ACTOR_LOCKED');
    expect(outcome(await login('2001:db8:1:3::1', DEMO.password))).toBe('200');
  });

  it('does the same for the aggregator get-token, whose guesses across addresses are bounded alike', async () => {
    const wrong = await Promise.all(Array.from({ length: 6 }, () => getToken('198.51.100.11', WRONG)));
    expect(counted(wrong.map(aggregatorOutcome))).toEqual({ '401 unauthorized': 5, '401 unauthorized (locked)': 1 });
    expect(aggregatorOutcome(await getToken('198.51.100.11', DEMO.aggregatorPassword))).toBe('401 unauthorized (locked)');
    expect(aggregatorOutcome(await getToken('203.0.113.21', DEMO.aggregatorPassword))).toBe('200');
    // Fifteen more from five other addresses reach the bound of twenty across addresses.
    for (let i = 0; i < 15; i += 1) expect(aggregatorOutcome(await getToken(`198.51.100.${20 + (i % 5)}`, WRONG))).toBe('401 unauthorized');
    const fresh = await getToken('192.0.2.60', DEMO.aggregatorPassword);
    expect(aggregatorOutcome(fresh)).toBe('429 too_many_attempts');
    expect(Number(fresh.headers.get('retry-after'))).toBeGreaterThan(3500);
    expect(aggregatorOutcome(await getToken('203.0.113.21', DEMO.aggregatorPassword))).toBe('200');
  });

  it('checks no more than twenty guesses of one user name spread over many addresses at once; then only an address the owner logged in from is still checked', async () => {
    const home = '203.0.113.30';
    expect(outcome(await login(home, DEMO.password))).toBe('200');
    // Ten addresses, three guesses each (under each address's own limit of five), all at once.
    const guesses = await Promise.all(Array.from({ length: 30 }, (_, i) => login(`198.51.100.${100 + (i % 10)}`, WRONG)));
    expect(counted(guesses.map(outcome))).toEqual({ '401 UNAUTHENTICATED': 20, '429 TOO_MANY_ATTEMPTS': 10 });

    // A fresh address is refused, the right password too, with a Retry-After up to the window.
    const fresh = await login('192.0.2.50', DEMO.password);
    expect(outcome(fresh)).toBe('429 TOO_MANY_ATTEMPTS');
    const retryAfter = Number(fresh.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // The owner's address still gets in with the right password...
    expect(outcome(await login(home, DEMO.password))).toBe('200');
    // ...and a guesser there still meets that address's own limit of five.
    const atHome = [];
    for (let i = 0; i < 6; i += 1) atHome.push(outcome(await login(home, WRONG)));
    expect(counted(atHome)).toEqual({ '401 ACTOR_LOCKED': 1, '401 UNAUTHENTICATED': 5 });
    // The owner's success did not give the guessers a fresh budget.
    expect(outcome(await login('192.0.2.51', WRONG))).toBe('429 TOO_MANY_ATTEMPTS');
  });

  it('bounds guesses of a user name no user has in the same way', async () => {
    const guesses = [];
    for (let i = 0; i < 25; i += 1) guesses.push(outcome(await login(`198.51.100.${200 + (i % 5)}`, WRONG, 'nobody.at.all')));
    expect(counted(guesses)).toEqual({ '401 UNAUTHENTICATED': 20, '429 TOO_MANY_ATTEMPTS': 5 });
  });
});
