import type { IncomingMessage } from 'node:http';
import type { Config } from '../../platform/config.js';
import { appError, ErrorCode } from '../../platform/errors.js';
import { REQUEST_ID_HEADER } from '../../platform/http.js';
import { PRINCIPAL_HEADER, SESSION_RESOLVE_PATH, signPrincipal, type Principal } from '../../platform/principal.js';

/** The gateway's own identity when it calls a subgraph's internal routes. */
const GATEWAY: Principal = { kind: 'service', service: 'gateway' };

/**
 * Establishes the principal of a request once, from the `token` header (end users). No
 * credential header means an anonymous principal, which may only log in; a credential that
 * does not resolve to a live session is refused with 401.
 */
export function createAuthenticator(config: Config) {
  const resolveUrl = new URL(SESSION_RESOLVE_PATH, config.subgraphUrls.user).toString();
  return async function authenticate(req: IncomingMessage, requestId: string): Promise<Principal> {
    const token = req.headers.token;
    if (token === undefined) return { kind: 'anonymous' };
    if (typeof token !== 'string' || token === '') throw appError(ErrorCode.UNAUTHENTICATED, 'The token header is empty.', { httpStatus: 401 });
    let response: Response;
    try {
      response = await fetch(resolveUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [PRINCIPAL_HEADER]: signPrincipal(GATEWAY, config.internalSecret), [REQUEST_ID_HEADER]: requestId },
        body: JSON.stringify({ token }),
        signal: AbortSignal.timeout(5000),
      });
    } catch {
      throw appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
    }
    if (!response.ok) throw appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
    const { principal } = (await response.json()) as { principal: Principal | null };
    if (!principal) throw appError(ErrorCode.UNAUTHENTICATED, 'The token is unknown, expired or revoked.', { httpStatus: 401 });
    return principal;
  };
}
