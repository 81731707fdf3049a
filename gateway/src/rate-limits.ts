import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLError } from 'graphql';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import { rateLimitRefusals } from '../../platform/telemetry/metrics.js';
import type { Logger } from '../../platform/runtime/logger.js';
import { principalIdentity, type Principal } from '../../platform/contracts/principal.js';
import { addressGroup } from '../../platform/http/address-group.js';
import { fragmentsOf, rootFieldNames } from './operation-limits.js';

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
interface Hit {
  count: number;
  resetMs: number;
}

/** A counter of hits in fixed windows: Redis where REDIS_URL is set (shared by every gateway), else this process. */
export interface HitCounter {
  /** Counts one hit of `key`; returns the count in the current window and the milliseconds left in it. */
  hit(key: string, windowMs: number): Promise<Hit>;
  /** Counts one hit of each key at once (pipelined into one round trip to Redis); the answers in the keys' order. */
  hitEach(keys: readonly string[], windowMs: number): Promise<Hit[]>;
  /** Takes back one hit of `key` counted in the current window. */
  refund(key: string, windowMs: number): Promise<void>;
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
  const hit = async (key: string, windowMs: number): Promise<Hit> => {
    const counted = await limiterOf(windowMs).consume(key);
    return { count: counted.consumedPoints, resetMs: counted.msBeforeNext };
  };
  return {
    hit,
    hitEach: (keys, windowMs) => Promise.all(keys.map((key) => hit(key, windowMs))),
    async refund(key, windowMs) {
      // Should the window have ended meanwhile, the next one starts one lower for at most its length.
      await limiterOf(windowMs).reward(key);
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

/** Counts one hit of a whole-request key; over its limit, RATE_LIMITED. A store that does not answer lets the request go on. */
async function countWhole(
  limits: RateLimits,
  counter: HitCounter,
  logger: Logger,
  key: string,
  limit: number,
  name: 'requests-per-address' | 'requests-per-credential',
): Promise<void> {
  const windowMs = limits.windowSeconds * 1000;
  let hit: Hit;
  try {
    hit = await counter.hit(key, windowMs);
  } catch (error) {
    logger.warn('request not counted', { error: (error as Error).message });
    return;
  }
  if (hit.count <= limit) return;
  rateLimitRefusals.inc({ limit: name });
  throw rateLimited(
    name === 'requests-per-address' ? 'Too many requests from this address' : 'Too many requests with this credential',
    limit,
    limits.windowSeconds,
    hit.resetMs,
  );
}

/**
 * Counts a whole request against its client address before anything else is done for it (its
 * credential looked up included), so that a flood of requests, with credentials or without, costs
 * a count each, not a session read, a parse and a validation each. Over the limit: 429
 * RATE_LIMITED with Retry-After. The caller leaves out the platform's own services and holders of
 * a known service key.
 */
export function countAddressRequest(limits: RateLimits, counter: HitCounter, logger: Logger, clientIp: string | null): Promise<void> {
  return countWhole(
    limits,
    counter,
    logger,
    `q:a:${clientIp ? addressGroup(clientIp) : 'unknown'}`,
    limits.requestsPerAddress,
    'requests-per-address',
  );
}

/**
 * Counts a whole request against who its caller is, once authenticated and before its document is
 * parsed; a session found no longer live gives the hit back. Anonymous callers and services are
 * not counted here.
 */
export async function countCredentialRequest(
  limits: RateLimits,
  counter: HitCounter,
  logger: Logger,
  caller: LimitedContext,
): Promise<void> {
  const credential = caller.principal?.kind === 'service' ? null : principalIdentity(caller.principal);
  if (!credential) return;
  const key = `q:c:${credential}`;
  caller.sessionConfirmed?.catch(() => counter.refund(key, limits.windowSeconds * 1000).catch(() => {}));
  await countWhole(limits, counter, logger, key, limits.requestsPerCredential, 'requests-per-credential');
}

/** The context the rate limits read. */
interface LimitedContext {
  principal?: Principal;
  clientIp?: string | null;
  sessionConfirmed?: Promise<void> | null;
}

/**
 * Rate limits per operation: every root field (each alias a hit of its own) counts against the
 * caller (who the principal is, not how its credential is spelled) and against its client
 * address. Internal services are not limited, nor the gateway's own executions of subscription
 * events (no HTTP request; subscribing is capped per connection), in fixed windows; the sensitive fields
 * have a strict limit. Over a limit: 429 RATE_LIMITED with Retry-After, before any subgraph is
 * called. When the store does not answer, requests are served and a warning logged.
 */
export function rateLimitsPlugin(limits: RateLimits, counter: HitCounter, logger: Logger): ApolloServerPlugin<LimitedContext> {
  const windowMs = limits.windowSeconds * 1000;
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, contextValue, request }) {
          if (!operation || !request.http || contextValue.principal?.kind === 'service') return;
          const credential = principalIdentity(contextValue.principal);
          const address = contextValue.clientIp ? addressGroup(contextValue.clientIp) : 'unknown';
          const checks: Array<{ key: string; limit: number; field: string }> = [];
          for (const field of rootFieldNames(operation.selectionSet, fragmentsOf(document.definitions))) {
            const sensitive = SENSITIVE_FIELDS.has(field);
            checks.push({ key: `a:${address}:${field}`, limit: sensitive ? limits.sensitive : limits.perAddress, field });
            if (credential)
              checks.push({ key: `c:${credential}:${field}`, limit: sensitive ? limits.sensitive : limits.perCredential, field });
          }
          let counted: Hit[];
          try {
            counted = await counter.hitEach(
              checks.map(({ key }) => key),
              windowMs,
            );
          } catch (error) {
            // The store is down: serve rather than refuse everyone; the lockout still guards the logins.
            logger.warn('rate limit not counted', { error: (error as Error).message });
            return;
          }
          // A session found no longer live gives its credential's hits back: a revoked token cannot spend its user's limit.
          for (const { key } of checks)
            if (key.startsWith('c:')) contextValue.sessionConfirmed?.catch(() => counter.refund(key, windowMs).catch(() => {}));
          checks.forEach(({ key, limit, field }, i) => {
            const { count, resetMs } = counted[i]!;
            if (count <= limit) return;
            rateLimitRefusals.inc({
              limit: SENSITIVE_FIELDS.has(field) ? 'sensitive' : key.startsWith('c:') ? 'per-credential' : 'per-address',
            });
            throw rateLimited(`Too many ${field} requests`, limit, limits.windowSeconds, resetMs);
          });
        },
      };
    },
  };
}
