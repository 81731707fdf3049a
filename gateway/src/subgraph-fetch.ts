import type { RemoteGraphQLDataSource } from '@apollo/gateway';
import { PRINCIPAL_HEADER } from '../../platform/principal.js';

/** The fetch a RemoteGraphQLDataSource takes. */
export type SubgraphFetcher = NonNullable<NonNullable<ConstructorParameters<typeof RemoteGraphQLDataSource>[0]>['fetcher']>;

interface Answer {
  status: number;
  statusText: string;
  headers: [string, string][];
  body: string;
}

/** Set by the gateway on the fetches of a mutation's plan: sent on their own, never joined to a read in flight (which could predate the write). */
export const UNSHARED_READ_HEADER = 'x-gateway-unshared';

/** Whether a subgraph request body is a read: the query planner's fetches of queries start with `query` (or a bare selection set). */
const isRead = (body: string) => body.startsWith('{"query":"query') || body.startsWith('{"query":"{');

/**
 * The gateway's fetch to its subgraphs: Node's own fetch (undici, a keep-alive connection pool
 * per subgraph), and identical reads in flight at the same time (same subgraph, same signed
 * principal, same query and variables) sent once, each caller getting its own copy of the
 * answer. Writes are never shared.
 */
export function createSubgraphFetcher(timeoutMs: number): SubgraphFetcher {
  const inFlight = new Map<string, Promise<Answer>>();
  // No read outlives the timeout: its fields are then UNAVAILABLE. A write is waited for: cut off,
  // its outcome would be unknown, and a retry (even with its Idempotency-Key, freed by the failure) could repeat it.
  const timed = (init: RequestInit): RequestInit => ({ ...init, signal: AbortSignal.timeout(timeoutMs) });
  const send = async (url: string, init: RequestInit): Promise<Answer> => {
    const response = await fetch(url, timed(init));
    return { status: response.status, statusText: response.statusText, headers: [...response.headers], body: await response.text() };
  };
  const fetcher = async (url: string, init: RequestInit = {}) => {
    const body = typeof init.body === 'string' ? init.body : null;
    const headers = new Headers(init.headers);
    if (headers.has(UNSHARED_READ_HEADER)) {
      headers.delete(UNSHARED_READ_HEADER);
      return fetch(url, timed({ ...init, headers }));
    }
    if (body === null || !isRead(body)) return fetch(url, init);
    const key = `${url}\n${headers.get(PRINCIPAL_HEADER) ?? ''}\n${body}`;
    let answer = inFlight.get(key);
    if (!answer) {
      answer = send(url, init).finally(() => inFlight.delete(key));
      inFlight.set(key, answer);
    }
    const { status, statusText, headers: answerHeaders, body: text } = await answer;
    return new Response(text, { status, statusText, headers: answerHeaders });
  };
  return fetcher as unknown as SubgraphFetcher;
}
