import type { IncomingHttpHeaders } from 'node:http';
import { SUBGRAPH_NAMES, type Config } from '../../platform/config.js';
import { appError, ErrorCode } from '../../platform/errors.js';
import { REQUEST_ID_HEADER } from '../../platform/http.js';
import { PRINCIPAL_HEADER, SESSION_RESOLVE_PATH, signPrincipal, verifyPrincipal, type Principal } from '../../platform/principal.js';
import { verifyJwt } from '../../platform/jwt.js';
import { sha256 } from '../../platform/secrets.js';
import { postJson, type PostAnswer } from '../../platform/http-client.js';

/** The gateway's own identity when it calls a subgraph's internal routes. */
const GATEWAY: Principal = { kind: 'service', service: 'gateway' };

/** The credential headers, most specific first; a request carries at most one. */
/** The headers that carry a credential; a request sends at most one. */
const CREDENTIAL_HEADERS = [PRINCIPAL_HEADER, 'x-service-key', 'x-svc-token', 'x-svc-jwtoken', 'token'] as const;

/**
 * Establishes the principal of a request once: a subgraph from its signed internal principal,
 * an internal service from `x-service-key`, an
 * aggregator user from `x-svc-token`, a merchant or a payment link's customer from the JWT in
 * `x-svc-jwtoken` (verified here, without a round trip), an end user or prospect from `token`. No credential means
 * an anonymous principal, which may only log in or start onboarding; a credential that does not
 * resolve is refused with 401.
 */
export function createAuthenticator(config: Config) {
  const resolveUrl = new URL(SESSION_RESOLVE_PATH, config.subgraphUrls.user).toString();
  const unauthenticated = (message: string) => appError(ErrorCode.UNAUTHENTICATED, message, { httpStatus: 401 });
  const inFlight = new Map<string, Promise<Principal>>();
  const resolveSession = async (header: string, value: string, requestId: string): Promise<Principal> => {
    let answer: PostAnswer;
    try {
      answer = await postJson(
        resolveUrl,
        { 'content-type': 'application/json', [PRINCIPAL_HEADER]: signPrincipal(GATEWAY, config.internalSecret), [REQUEST_ID_HEADER]: requestId },
        JSON.stringify({ token: value, header }),
        5000,
      );
    } catch {
      throw appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
    }
    if (answer.status !== 200) throw appError(ErrorCode.UNAVAILABLE, 'The session store did not answer.', { httpStatus: 503 });
    const { principal } = JSON.parse(answer.text) as { principal: Principal | null };
    if (!principal) throw unauthenticated(`The ${header} is unknown, expired or revoked.`);
    return principal;
  };
  return async function authenticate(headers: IncomingHttpHeaders | Record<string, string | undefined>, requestId: string): Promise<Principal> {
    const sent = CREDENTIAL_HEADERS.filter((name) => headers[name] !== undefined);
    if (sent.length === 0) return { kind: 'anonymous' };
    if (sent.length > 1) throw unauthenticated(`Send one credential header, not ${sent.join(' and ')}.`);
    const header = sent[0]!;
    const value = headers[header];
    if (typeof value !== 'string' || value === '') throw unauthenticated(`The ${header} header is empty.`);
    if (header === PRINCIPAL_HEADER) {
      // A subgraph calling the graph as an internal service, signed with INTERNAL_SECRET.
      const principal = verifyPrincipal(value, config.internalSecret, Date.now(), 'gateway');
      if (principal?.kind !== 'service' || !(SUBGRAPH_NAMES as readonly string[]).includes(principal.service)) throw unauthenticated('The internal principal is invalid.');
      return principal;
    }
    if (header === 'x-service-key') {
      const service = config.serviceKeyHashes.get(sha256(value));
      if (!service) throw unauthenticated('The service key is not known.');
      return { kind: 'service', service };
    }
    if (header === 'x-svc-jwtoken') {
      const claims = verifyJwt(value, config.jwtSecret);
      if (!claims) throw unauthenticated('The x-svc-jwtoken is not a valid merchant or customer JWT, or it has expired.');
      return claims.typ === 'merchant'
        ? { kind: 'merchant', svcMerchantId: claims.sub, svcAggregatorId: claims.agg }
        : { kind: 'customer', svcTransactionId: claims.sub, svcMerchantId: claims.mer, svcAggregatorId: claims.agg };
    }
    // Concurrent requests with the same credential share one lookup (nothing is kept after it
    // answers, so a revoked token stops working at once).
    const key = `${header}\n${value}`;
    let lookup = inFlight.get(key);
    if (!lookup) {
      lookup = resolveSession(header, value, requestId).finally(() => inFlight.delete(key));
      inFlight.set(key, lookup);
    }
    return lookup;
  };
}
