import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { GraphQLRequestContext, GraphQLRequestContextDidResolveOperation } from '@apollo/server';
import { GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import {
  createHitCounter,
  createRequestLimits,
  operationKey,
  type HitCounter,
  type LimitedContext,
  type RateLimits,
} from '../../gateway/src/rate-limits.js';
import type { Principal } from '../../platform/contracts/principal.js';
import { createLogger } from '../../platform/runtime/logger.js';

const logger = createLogger('silent');
const dana: Principal = { kind: 'user', userId: 'u-1', sessionId: 's-1', channel: 'password' };
const IP = '203.0.113.7';
const LIMITS: RateLimits = {
  windowSeconds: 60,
  perCredential: 100,
  perAddress: 100,
  sensitive: 3,
  requestsPerCredential: 100,
  requestsPerAddress: 100,
  shareMs: 0,
};

/** An in-process counter that records the keys it counts, and reads a key's count without counting it. */
function recordingCounter(): { counter: HitCounter; taken: () => string[]; countOf: (key: string) => Promise<number> } {
  const inner = createHitCounter(undefined, '', logger);
  let keys: string[] = [];
  return {
    counter: {
      ...inner,
      hit: (key, windowMs) => {
        keys.push(key);
        return inner.hit(key, windowMs);
      },
    },
    /** The keys counted since the last call. */
    taken: () => {
      const taken = keys;
      keys = [];
      return taken;
    },
    countOf: async (key) => {
      const { count } = await inner.hit(key, LIMITS.windowSeconds * 1000);
      await inner.refund(key, LIMITS.windowSeconds * 1000);
      return count - 1;
    },
  };
}

/** Runs the plugin's `didResolveOperation` for `text` as an HTTP request with `context`. */
async function resolveOperation(limits: ReturnType<typeof createRequestLimits>, text: string, context: LimitedContext): Promise<void> {
  const document = parse(text);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const listener = (await limits.plugin.requestDidStart({} as GraphQLRequestContext<LimitedContext>))!;
  await listener.didResolveOperation!({
    operation,
    document,
    contextValue: context,
    request: { http: {} },
  } as unknown as GraphQLRequestContextDidResolveOperation<LimitedContext>);
}

const QUERY = '{ me { firstName } cards { svcCardId } }';
const key = operationKey({ text: QUERY, hash: null, name: undefined });

/** A request of `principal` (or of none: a document refused before), its address counted with it. */
const request = (principal: Principal | null) => ({
  clientIp: IP,
  principal,
  sessionConfirmed: null,
  operationKey: key,
  withAddress: true,
});

describe("the gateway's request counts", () => {
  it("count a known caller's request whole at once, and its root fields too once its operation was served", async () => {
    const { counter, taken } = recordingCounter();
    const limits = createRequestLimits(LIMITS, { exact: counter, early: counter }, logger);
    expect(await limits.countRequest(request(dana))).toBe(false);
    expect(taken()).toEqual(['q:a:203.0.113.7', 'q:c:user:u-1']);
    await resolveOperation(limits, QUERY, { principal: dana, clientIp: IP, operationKey: key });
    const fields = ['a:203.0.113.7:me', 'c:user:u-1:me', 'a:203.0.113.7:cards', 'c:user:u-1:cards'];
    expect(taken()).toEqual(fields);
    expect(await limits.countRequest(request(dana))).toBe(true);
    expect(taken()).toEqual(['q:a:203.0.113.7', 'q:c:user:u-1', ...fields]);
    // Counted already: the plugin does not count them again.
    await resolveOperation(limits, QUERY, { principal: dana, clientIp: IP, operationKey: key, fieldsCounted: true });
    expect(taken()).toEqual([]);
  });

  it('count an untrusted request (no principal given) against its address alone', async () => {
    const { counter, taken } = recordingCounter();
    const limits = createRequestLimits(LIMITS, { exact: counter, early: counter }, logger);
    await resolveOperation(limits, QUERY, { principal: dana, clientIp: IP, operationKey: key });
    taken();
    expect(await limits.countRequest(request(null))).toBe(false);
    expect(taken()).toEqual(['q:a:203.0.113.7']);
  });

  it('count the sensitive fields in the exact counter, the rest in the early one', async () => {
    const exact = recordingCounter();
    const early = recordingCounter();
    const limits = createRequestLimits(LIMITS, { exact: exact.counter, early: early.counter }, logger);
    await resolveOperation(limits, '{ me { firstName } } ', { principal: { kind: 'anonymous' }, clientIp: IP, operationKey: null });
    await resolveOperation(limits, 'mutation { login(input: { userName: "a", password: "b" }) { token } }', {
      principal: { kind: 'anonymous' },
      clientIp: IP,
      operationKey: null,
    });
    expect(early.taken()).toEqual(['a:203.0.113.7:me']);
    expect(exact.taken()).toEqual(['a:203.0.113.7:login']);
  });

  it('refuse as the counts one by one would, giving back the hits a refusal first would not have made', async () => {
    const { counter, countOf } = recordingCounter();
    const limits = createRequestLimits({ ...LIMITS, requestsPerAddress: 2 }, { exact: counter, early: counter }, logger);
    await resolveOperation(limits, QUERY, { principal: dana, clientIp: IP, operationKey: key });
    for (let i = 0; i < 2; i += 1) await limits.countRequest(request(dana));
    const refusal = await limits.countRequest(request(dana)).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(GraphQLError);
    expect((refusal as GraphQLError).message).toMatch(/^Too many requests from this address: at most 2 in 60 s/);
    expect((refusal as GraphQLError).extensions.code).toBe('RATE_LIMITED');
    // Two requests counted in full, the third against its address alone.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await countOf('q:a:203.0.113.7')).toBe(3);
    expect(await countOf('q:c:user:u-1')).toBe(2);
    expect(await countOf('c:user:u-1:me')).toBe(3);
  });

  it('refuse a root field over its limit when counted at once, as the plugin does', async () => {
    const { counter } = recordingCounter();
    const limits = createRequestLimits({ ...LIMITS, perCredential: 2 }, { exact: counter, early: counter }, logger);
    await resolveOperation(limits, QUERY, { principal: dana, clientIp: IP, operationKey: key });
    await limits.countRequest(request(dana));
    await expect(limits.countRequest(request(dana))).rejects.toThrow(/^Too many me requests: at most 2 in 60 s/);
  });

  it('serve while the store does not answer, and do not count the fields again', async () => {
    const down: HitCounter = {
      hit: () => Promise.reject(new Error('down')),
      hitBy: () => Promise.reject(new Error('down')),
      hitEach: () => Promise.reject(new Error('down')),
      refund: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const limits = createRequestLimits(LIMITS, { exact: down, early: down }, logger);
    await resolveOperation(limits, QUERY, { principal: dana, clientIp: IP, operationKey: key });
    expect(await limits.countRequest(request(dana))).toBe(true);
  });
});

describe('the key an operation is remembered by', () => {
  it('tells apart every pair of operation name and document, and a text from a hash', () => {
    const keys = [
      operationKey({ name: 'a:t:x', text: 'y', hash: null }),
      operationKey({ name: 'a', text: 'x:t:y', hash: null }),
      operationKey({ name: undefined, text: 'abc', hash: null }),
      operationKey({ name: null, text: null, hash: 'abc' }),
      operationKey({ name: 'a', text: 'abc', hash: 'ignored' }),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(operationKey({ name: 'a', text: 'abc', hash: 'other' })).toBe(keys[4]);
  });

  it('is none without a document, or for an operation name that is not a string', () => {
    expect(operationKey({ name: 'Q', text: null, hash: null })).toBeNull();
    expect(operationKey({ name: 7, text: '{ me { firstName } }', hash: null })).toBeNull();
  });
});

describe('the operations the rate limits remember', () => {
  it('keep their root fields without the text they were read from, which the memory holds once and counts', async () => {
    setFlagsFromString('--expose-gc');
    const collectGarbage = runInNewContext('gc') as () => void;
    const limits = createRequestLimits(LIMITS, { exact: recordingCounter().counter, early: recordingCounter().counter }, logger);
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    // Seven documents of 1 MiB: within the memory's 8 MiB of texts, every one is kept.
    for (let i = 0; i < 7; i += 1) {
      const text = `{ transactionsPage${i} { id } } # ${'x'.repeat(1 << 20)}`;
      const remembered = operationKey({ text, hash: null, name: undefined });
      await resolveOperation(limits, text, { principal: dana, clientIp: IP, operationKey: remembered });
    }
    collectGarbage();
    // The keys are 7 MiB; root fields sliced from the texts kept another 7.
    expect((process.memoryUsage().heapUsed - before) / 2 ** 20).toBeLessThan(10.5);
  });
});
