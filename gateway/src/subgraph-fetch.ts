import type { RemoteGraphQLDataSource } from '@apollo/gateway';
import type { HeaderMap } from '@apollo/server';
import { connectionPool, type PostAnswer } from '../../platform/http/client.js';
import type { Transport } from '../../platform/http/transport.js';
import { headerMapOf } from '../../platform/graphql/apollo-http.js';
import { PRINCIPAL_HEADER } from '../../platform/security/signed-headers.js';
import { deduplicatedFetches, subgraphFetches } from '../../platform/telemetry/metrics.js';

/** The fetch a RemoteGraphQLDataSource takes. */
export type SubgraphFetcher = NonNullable<NonNullable<ConstructorParameters<typeof RemoteGraphQLDataSource>[0]>['fetcher']>;

/**
 * The part of a fetch Response that RemoteGraphQLDataSource reads (`ok`, `status`, `statusText`,
 * `headers.get`, `json()`, `text()`), over an answer read whole: no WHATWG streams per call.
 */
class SubgraphResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  /** Looked up by any case of the name. */
  readonly headers: HeaderMap;
  private readonly text_: string;

  constructor(answer: PostAnswer) {
    this.status = answer.status;
    this.ok = answer.status >= 200 && answer.status < 300;
    this.statusText = answer.statusText;
    this.text_ = answer.text;
    this.headers = headerMapOf(answer.headers);
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.text_);
  }

  async text(): Promise<string> {
    return this.text_;
  }
}

/** How long a write to a subgraph is waited for (a hung subgraph must not hold the request and its socket forever). */
const WRITE_TIMEOUT_MS = 300_000;

/** Set by the gateway on the fetches of a mutation's plan: sent on their own, never joined to a read in flight (which could predate the write). */
export const UNSHARED_READ_HEADER = 'x-gateway-unshared';

/** Fetches to subgraphs since the start: sent, and answered by an identical read in flight instead (deduplicated). */
export interface SubgraphFetchCounts {
  sent: number;
  shared: number;
}

/** Whether a subgraph request body is a read: the query planner's fetches of queries start with `query` (or a bare selection set). */
const isRead = (body: string) => body.startsWith('{"query":"query') || body.startsWith('{"query":"{');

/**
 * The gateway's fetch to its subgraphs: POSTs over a keep-alive `http.request` pool of its own
 * (unbounded: a subgraph's nested call through the graph never waits for a socket held by the
 * call that made it), and identical reads in flight at the same time (same subgraph, same signed
 * principal, same query and variables) sent once, each caller getting the answer. Writes are
 * never shared. RemoteGraphQLDataSource always sends a POST with a string body.
 */
export function createSubgraphFetcher(
  timeoutMs: number,
  transport: Transport,
  subgraphOf: (url: string) => string,
): SubgraphFetcher & { counts: SubgraphFetchCounts } {
  const pool = connectionPool();
  const send = async (url: string, headers: Record<string, string>, body: string, timeout: number): Promise<PostAnswer> => {
    const started = performance.now();
    let outcome = 'error';
    try {
      const answer = await transport.post(url, headers, body, timeout, pool);
      if (answer.status < 500) outcome = 'ok';
      return answer;
    } finally {
      subgraphFetches.observe({ subgraph: subgraphOf(url), outcome }, (performance.now() - started) / 1000);
    }
  };
  const inFlight = new Map<string, Promise<PostAnswer>>();
  const counts: SubgraphFetchCounts = { sent: 0, shared: 0 };
  // No read outlives the timeout: its fields are then UNAVAILABLE. A write is waited for, up to
  // WRITE_TIMEOUT_MS: cut off sooner, its outcome would be unknown, and a retry (even with its
  // Idempotency-Key, freed by the failure) could repeat it.
  // The headers come as RemoteGraphQLDataSource passes them: from a Headers object, names in lower case.
  const fetcher = async (url: string, init: { headers?: Record<string, string>; body?: unknown } = {}) => {
    const body = typeof init.body === 'string' ? init.body : '';
    const { [UNSHARED_READ_HEADER]: unshared, ...headers } = init.headers ?? {};
    const read = isRead(body);
    // Every fetch of a mutation's plan is marked unshared, the mutation's own included.
    if (unshared !== undefined || !read) {
      counts.sent += 1;
      return new SubgraphResponse(await send(url, headers, body, read ? timeoutMs : WRITE_TIMEOUT_MS));
    }
    const key = `${url}\n${headers[PRINCIPAL_HEADER] ?? ''}\n${body}`;
    let answer = inFlight.get(key);
    if (answer) {
      counts.shared += 1;
      deduplicatedFetches.inc({ subgraph: subgraphOf(url) });
    } else {
      counts.sent += 1;
      answer = send(url, headers, body, timeoutMs).finally(() => inFlight.delete(key));
      inFlight.set(key, answer);
    }
    return new SubgraphResponse(await answer);
  };
  return Object.assign(fetcher as unknown as SubgraphFetcher, { counts });
}
