import type { Config } from './config.js';
import { appError, ErrorCode } from './errors.js';
import { REQUEST_ID_HEADER } from './http.js';
import { PRINCIPAL_HEADER, signPrincipal } from './principal.js';

/**
 * How a subgraph calls the graph: through the gateway, as an internal service, with a principal
 * signed by INTERNAL_SECRET. Cross-domain reads and writes travel this way, never through
 * another subgraph's database.
 */
export interface GraphClient {
  request<T>(query: string, variables?: Record<string, unknown>, requestId?: string): Promise<T>;
}

export function createGraphClient(config: Config, service: string): GraphClient {
  return {
    async request<T>(query: string, variables: Record<string, unknown> = {}, requestId?: string): Promise<T> {
      const response = await fetch(config.gatewayUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [PRINCIPAL_HEADER]: signPrincipal({ kind: 'service', service }, config.internalSecret, Date.now(), 'gateway'),
          ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}),
        },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(15_000),
      });
      const body = (await response.json()) as { data?: T; errors?: Array<{ message: string; extensions?: { code?: string } }> };
      if (body.errors?.length) {
        const [first] = body.errors;
        throw appError((first!.extensions?.code as ErrorCode | undefined) ?? ErrorCode.UNAVAILABLE, `The graph refused ${service}'s call: ${first!.message}`);
      }
      if (!body.data) throw appError(ErrorCode.UNAVAILABLE, `The graph answered ${service}'s call with ${response.status} and no data.`);
      return body.data;
    },
  };
}
