import type { RequestPlugin } from '../../platform/graphql/request-plugin.js';
import type { GraphQLError } from 'graphql';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import { rateLimitRefusals } from '../../platform/telemetry/metrics.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { principalIdentity, type Principal } from '../../platform/contracts/principal.js';
import { addressGroup } from '../../platform/http/address-group.js';
import { rootFieldsOf } from './operation-limits.js';
import { TextMemory } from './text-memory.js';

/** Requests per window, by who is counted. */
export interface RateLimits {
  windowSeconds: number;
  /** Each root field, per credential (or per address for anonymous callers). */
  perCredential: number;
  /** Each root field, per client address, whoever calls. */
  perAddress: number;
  /** The sensitive fields (log in, get tokens, recovery and confirmation codes), per credential and per address. */
  sensitive: number;
  /** Whole requests, counted before parsing: per credential. */
  requestsPerCredential: number;
  /** Whole requests, counted before parsing: per client address, whoever calls. */
  requestsPerAddress: number;
  /** How often a gateway adds the counts it made in memory to the shared store (0: as each request comes); past half of a limit, and the sensitive fields', at once. */
  shareMs: number;
}

/** Fields that guess or issue credentials: they get the strict limit, on top of the lockout. */
const SENSITIVE_FIELDS = new Set([
  'login',
  'aggregatorGetToken',
  'aggregatorChangePassword',
  'merchantToken',
  'customerToken',
  'requestRecoveryCode',
  'confirmEmail',
  'confirmMobile',
  'registerDevice',
  'submitProspectData',
  // Merchant ids are global: registering one tells whether it is in use, so guesses are few.
  'saveMerchant',
]);

/** One key's count in its current window, and the milliseconds left in that window. */
export interface Hit {
  count: number;
  resetMs: number;
}

/** A counter of hits in fixed windows: Redis where REDIS_URL is set (shared by every gateway), else this process. */
export interface HitCounter {
  /**
   * Counts one hit of `key`; returns the count in the current window and the milliseconds left in
   * it. `limit` is what the count is held to: a counter that counts in this process first counts in
   * the shared store as each hit comes once past half of it.
   */
  hit(key: string, windowMs: number, limit?: number): Promise<Hit>;
  /** Counts `n` hits of `key` at once. */
  hitBy(key: string, n: number, windowMs: number): Promise<Hit>;
  /** Counts one hit of each key at once (pipelined into one round trip to Redis); the answers in the keys' order. */
  hitEach(keys: readonly string[], windowMs: number): Promise<Hit[]>;
  /** Takes back `n` hits (one by default) of `key` counted in the current window. */
  refund(key: string, windowMs: number, n?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The counters are rate-limiter-flexible's: each key's fixed window starts with its first hit (in
 * Redis, `SET … EX … NX` and `INCRBY` in one script, so every gateway shares it). The limiters never
 * refuse by themselves (no points are ever exhausted): a key is counted against several limits,
 * and the caller compares the count with each.
 */
export function createHitCounter(redisUrl: string | undefined, namespace: string, logger: Logger): HitCounter {
  const keyPrefix = `${namespace}ratelimit`;
  const redis = redisUrl
    ? // Fail fast while Redis is away: a command not answered in 250 ms fails (and the caller goes on without it).
      new Redis(redisUrl, { commandTimeout: 250, maxRetriesPerRequest: 1, enableAutoPipelining: true })
    : null;
  redis?.on('error', (error: Error) => logger.warn('rate-limit store error', { error: error.message }));
  const limiters = new Map<number, RateLimiterAbstract>();
  const limiterOf = (windowMs: number): RateLimiterAbstract => {
    let limiter = limiters.get(windowMs);
    if (!limiter) {
      // The Redis limiter's windows expire by whole seconds (SET … EX): a shorter one would never expire.
      if (windowMs < 1000 || windowMs % 1000 !== 0) throw new Error(`A rate-limit window is whole seconds, not ${windowMs} ms.`);
      const options = { keyPrefix, points: Number.MAX_SAFE_INTEGER, duration: windowMs / 1000 };
      limiter = redis ? new RateLimiterRedis({ ...options, storeClient: redis }) : new RateLimiterMemory(options);
      limiters.set(windowMs, limiter);
    }
    return limiter;
  };
  const hitBy = async (key: string, n: number, windowMs: number): Promise<Hit> => {
    const counted = await limiterOf(windowMs).consume(key, n);
    return { count: counted.consumedPoints, resetMs: counted.msBeforeNext };
  };
  return {
    hit: (key, windowMs) => hitBy(key, 1, windowMs),
    hitBy,
    hitEach: (keys, windowMs) => Promise.all(keys.map((key) => hitBy(key, 1, windowMs))),
    async refund(key, windowMs, n = 1) {
      // Should the window have ended meanwhile, the next one starts lower for at most its length.
      await limiterOf(windowMs).reward(key, n);
    },
    close: async () => {
      await redis?.quit();
    },
  };
}

export { addressGroup };

/** RATE_LIMITED (HTTP 429, with Retry-After): `what` was asked more than `limit` times in the window. */
function rateLimited(what: string, limit: number, windowSeconds: number, resetMs: number): GraphQLError {
  const retryAfterSeconds = Math.max(1, Math.ceil(resetMs / 1000));
  const error = appError(ErrorCode.RATE_LIMITED, `${what}: at most ${limit} in ${windowSeconds} s; try again in ${retryAfterSeconds} s.`, {
    retryAfterSeconds,
  });
  (error.extensions as Record<string, unknown>).http = { status: 429, headers: new Map([['retry-after', String(retryAfterSeconds)]]) };
  return error;
}

/** One count a request makes: its key, the limit it is held to, and what a refusal names. */
interface Check {
  key: string;
  limit: number;
  /** The refusals metric's label. */
  name: 'requests-per-address' | 'requests-per-credential' | 'per-address' | 'per-credential' | 'sensitive';
  /** The refusal's message, before its limit. */
  what: string;
}

/** The whole-request count of a client address. */
const addressCheck = (limits: RateLimits, clientIp: string | null): Check => ({
  key: `q:a:${clientIp ? addressGroup(clientIp) : 'unknown'}`,
  limit: limits.requestsPerAddress,
  name: 'requests-per-address',
  what: 'Too many requests from this address',
});

/** The whole-request count of a caller, or null for those not counted so (anonymous callers and services). */
function credentialCheck(limits: RateLimits, principal: Principal | undefined): Check | null {
  const credential = principal?.kind === 'service' ? null : principalIdentity(principal);
  return credential
    ? {
        key: `q:c:${credential}`,
        limit: limits.requestsPerCredential,
        name: 'requests-per-credential',
        what: 'Too many requests with this credential',
      }
    : null;
}

/** The counts of an operation's root fields (each alias one): against the client address, and against the caller if known. */
function fieldChecks(
  limits: RateLimits,
  fields: readonly string[],
  clientIp: string | null | undefined,
  principal: Principal | undefined,
): Check[] {
  const credential = principalIdentity(principal);
  const address = clientIp ? addressGroup(clientIp) : 'unknown';
  const checks: Check[] = [];
  for (const field of fields) {
    const sensitive = SENSITIVE_FIELDS.has(field);
    const what = `Too many ${field} requests`;
    checks.push({
      key: `a:${address}:${field}`,
      limit: sensitive ? limits.sensitive : limits.perAddress,
      name: sensitive ? 'sensitive' : 'per-address',
      what,
    });
    if (credential)
      checks.push({
        key: `c:${credential}:${field}`,
        limit: sensitive ? limits.sensitive : limits.perCredential,
        name: sensitive ? 'sensitive' : 'per-credential',
        what,
      });
  }
  return checks;
}

/**
 * The root fields of the operations served, by what the request named (its document's text or
 * persisted-query hash, and its operation name; `operationKey`): the same pair always resolves to
 * the same operation, so a request for one seen before can be counted whole before it is parsed.
 */
const rememberedOperations = () => new TextMemory<readonly string[]>(1000, 8 * 1024 * 1024);

/**
 * The key a request's operation is remembered by: its operation name, length first so that no
 * name and text run into another pair, then its text, or the hash it sent instead. Null when it
 * names neither, or an operation name that is not a string.
 */
export function operationKey(operation: { text: string | null; hash: string | null; name: unknown }): string | null {
  if (operation.name !== undefined && operation.name !== null && typeof operation.name !== 'string') return null;
  const name = operation.name ?? '';
  if (operation.text !== null) return `${name.length}:${name}:t:${operation.text}`;
  return operation.hash !== null ? `${name.length}:${name}:h:${operation.hash}` : null;
}

/** RATE_LIMITED for the first check over its limit, its refusal counted; the hits of `later` (not counted had the request been refused first) given back. */
function refuseOver(
  limits: RateLimits,
  counterOf: (check: Check) => HitCounter,
  checks: readonly Check[],
  counted: ReadonlyArray<Hit | null>,
  later: readonly Check[] = [],
): void {
  const over = checks.findIndex(({ limit }, i) => (counted[i]?.count ?? 0) > limit);
  if (over < 0) return;
  const windowMs = limits.windowSeconds * 1000;
  for (const check of later)
    counterOf(check)
      .refund(check.key, windowMs)
      .catch(() => {});
  const { name, limit, what } = checks[over]!;
  rateLimitRefusals.inc({ limit: name });
  throw rateLimited(what, limit, limits.windowSeconds, counted[over]?.resetMs ?? 0);
}

/** The context the rate limits read and write. */
export interface LimitedContext {
  principal?: Principal;
  clientIp?: string | null;
  sessionConfirmed?: Promise<void> | null;
  /** What the request's operation is remembered by (`operationKey`). */
  operationKey?: string | null;
  /** Whether its root fields were counted before it was parsed. */
  fieldsCounted?: boolean;
}

/** A request's counts, in the order they are made, and the refusal of the first over its limit. */
export interface RequestLimits {
  /**
   * Counts a whole request against its client address before anything else is done for it (its
   * credential looked up included), so that a flood of requests, with credentials or without,
   * costs a count each, not a session read, a parse and a validation each. The caller leaves out
   * the platform's own services and holders of a known service key.
   */
  countAddress(clientIp: string | null): Promise<void>;
  /**
   * Counts a whole request against who its caller is, once authenticated and before its document
   * is parsed (anonymous callers and services are not counted so), and, when its operation was
   * served before, its root fields, in one round trip to the store; with `withAddress`, its client
   * address too, for a caller known at once (no credential, or a session answered from memory),
   * whose counting costs no read. Without a principal (a document refused before), the address
   * alone. Refused as the counts one after the other would be: the first over its limit answers,
   * and the hits of those after it are given back; a session found no longer live gives its
   * credential's hits back. Returns whether the root fields were counted (the plugin then does not
   * count them again).
   */
  countRequest(request: {
    clientIp: string | null;
    principal: Principal | null;
    sessionConfirmed: Promise<void> | null;
    operationKey: string | null;
    withAddress: boolean;
  }): Promise<boolean>;
  /**
   * Rate limits per operation: every root field (each alias a hit of its own) counts against the
   * caller (who the principal is, not how its credential is spelled) and against its client
   * address. Internal services are not limited, nor the gateway's own executions of subscription
   * events (no HTTP request; subscribing is capped per connection); the sensitive fields have a
   * strict limit. Over a limit: 429 RATE_LIMITED with Retry-After, before any subgraph is called.
   */
  plugin: RequestPlugin<LimitedContext>;
}

/**
 * The gateway's rate limits, in fixed windows: the sensitive fields counted in `counters.exact`
 * (the shared store, as each request comes), the rest in `counters.early` (this gateway's counts,
 * shared with the store within moments, and counted there at once past half of a limit; see `createLocalCounts`), or in the store too. When the
 * store does not answer, requests are served and a warning logged; the lockout still guards the
 * logins.
 */
export function createRequestLimits(limits: RateLimits, counters: { exact: HitCounter; early: HitCounter }, logger: Logger): RequestLimits {
  const windowMs = limits.windowSeconds * 1000;
  const remembered = rememberedOperations();
  const counterOf = (check: Check): HitCounter => (check.name === 'sensitive' ? counters.exact : counters.early);
  /**
   * The hits of `checks`, each null (logged) where its counter did not answer: the others still
   * hold, so a store that is away leaves the counts made in this process in force.
   */
  const count = async (checks: readonly Check[]): Promise<Array<Hit | null>> => {
    const answers = await Promise.allSettled(checks.map((check) => counterOf(check).hit(check.key, windowMs, check.limit)));
    const failed = answers.find((answer) => answer.status === 'rejected');
    if (failed) logger.warn('request not counted in full', { error: (failed.reason as Error).message });
    return answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : null));
  };
  /** A session found no longer live gives its credential's hits back: a revoked token cannot spend its user's limit. */
  const refundIfEnded = (checks: readonly Check[], sessionConfirmed: Promise<void> | null | undefined) => {
    if (!sessionConfirmed) return;
    for (const check of checks)
      if (check.key.startsWith('c:') || check.key.startsWith('q:c:'))
        sessionConfirmed.catch(() =>
          counterOf(check)
            .refund(check.key, windowMs)
            .catch(() => {}),
        );
  };
  return {
    async countAddress(clientIp) {
      const check = addressCheck(limits, clientIp);
      refuseOver(limits, counterOf, [check], await count([check]));
    },
    async countRequest({ clientIp, principal, sessionConfirmed, operationKey: key, withAddress }) {
      const whole = withAddress ? [addressCheck(limits, clientIp)] : [];
      const credential = principal ? credentialCheck(limits, principal) : null;
      if (credential) whole.push(credential);
      const fields = principal && principal.kind !== 'service' && key !== null ? remembered.get(key) : undefined;
      const perField = principal && fields ? fieldChecks(limits, fields, clientIp, principal) : [];
      if (whole.length + perField.length === 0) return fields !== undefined;
      const counted = await count([...whole, ...perField]);
      // The hits a refusal gives back at once are not given back again when the session is found ended.
      const refusing = whole.findIndex((check, i) => (counted[i]?.count ?? 0) > check.limit);
      refundIfEnded(refusing < 0 ? [...whole, ...perField] : whole.slice(0, refusing + 1), sessionConfirmed);
      // Each whole count refuses before the ones after it are made, as when they are made one by one.
      for (let i = 0; i < whole.length; i += 1)
        refuseOver(limits, counterOf, [whole[i]!], [counted[i] ?? null], [...whole.slice(i + 1), ...perField]);
      refuseOver(limits, counterOf, perField, counted.slice(whole.length));
      return fields !== undefined;
    },
    plugin: {
      async requestDidStart() {
        return {
          async didResolveOperation({ operation, document, contextValue, request }) {
            if (!operation || !request.http || contextValue.principal?.kind === 'service') return;
            if (contextValue.fieldsCounted) return;
            const fields = rootFieldsOf(operation, document);
            if (contextValue.operationKey) remembered.set(contextValue.operationKey, fields);
            const checks = fieldChecks(limits, fields, contextValue.clientIp, contextValue.principal);
            const counted = await count(checks);
            refundIfEnded(checks, contextValue.sessionConfirmed);
            refuseOver(limits, counterOf, checks, counted);
          },
        };
      },
    },
  };
}
