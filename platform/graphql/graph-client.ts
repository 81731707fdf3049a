import type { GraphClientConfig } from '../runtime/config-slices.js';
import type { GraphClient } from '../contracts/graph.js';
import { appError, ErrorCode } from '../contracts/errors.js';
import { connectionPool } from '../http/client.js';
import { HTTP_TRANSPORT, type Transport } from '../http/transport.js';
import { REQUEST_ID_HEADER } from '../http/server.js';
import { PRINCIPAL_HEADER, signPrincipal } from '../security/signed-headers.js';

/**
 * The graph calls' own unbounded pool: a call made while the gateway serves a request must never
 * wait for a socket held by the requests that wait for it (the REST adapter's pool is bounded).
 */
const graphCalls = connectionPool();

/** A graph client for `service`: its calls carry a principal signed for the gateway. */
export function createGraphClient(config: GraphClientConfig, service: string, transport: Transport = HTTP_TRANSPORT): GraphClient {
  return {
    async request<T>(query: string, variables: Record<string, unknown> = {}, requestId?: string): Promise<T> {
      // Keep-alive http.request: leaner than fetch on this hot path (a card message makes two calls).
      const response = await transport
        .post(
          config.gatewayUrl,
          {
            'content-type': 'application/json',
            [PRINCIPAL_HEADER]: signPrincipal({ kind: 'service', service }, config.internalSecret, Date.now(), 'gateway'),
            ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}),
          },
          JSON.stringify({ query, variables }),
          15_000,
          graphCalls,
        )
        .catch((error: unknown) => {
          // The cause (an internal address) stays in the error's cause for the logs, not in its message.
          throw Object.assign(appError(ErrorCode.UNAVAILABLE, `The graph did not answer ${service}'s call.`), { cause: error });
        });
      let body: { data?: T; errors?: Array<{ message: string; extensions?: { code?: ErrorCode } }> };
      try {
        body = JSON.parse(response.text) as typeof body;
      } catch {
        throw appError(ErrorCode.UNAVAILABLE, `The graph answered ${service}'s call with ${response.status} and no JSON.`);
      }
      if (body.errors?.length) {
        const [first] = body.errors;
        throw appError(first!.extensions?.code ?? ErrorCode.UNAVAILABLE, `The graph refused ${service}'s call: ${first!.message}`);
      }
      if (!body.data) throw appError(ErrorCode.UNAVAILABLE, `The graph answered ${service}'s call with ${response.status} and no data.`);
      return body.data;
    },
  };
}
