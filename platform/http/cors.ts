import { ErrorCode } from '../contracts/errors.js';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Which browser origins may call a service, and with which credentials headers. */
export interface CorsPolicy {
  /** Exact origins (`https://app.example.com`), or a host with any port (`http://localhost:*`). */
  origins: readonly string[];
}

const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
/** Headers a browser may read from an answer besides the CORS-safelisted ones. */
const EXPOSED = 'x-request-id, retry-after, idempotent-replayed';
const MAX_AGE_SECONDS = '600';

/** Whether `origin` is one `policy` allows. */
function allowsOrigin(policy: CorsPolicy, origin: string): boolean {
  return policy.origins.some((allowed) => {
    if (!allowed.endsWith(':*')) return allowed === origin;
    const prefix = allowed.slice(0, -1);
    return origin.startsWith(prefix) && /^\d{1,5}$/.test(origin.slice(prefix.length));
  });
}

/**
 * Answers CORS for one request: an allowed origin gets its own name back, with credentials
 * headers allowed; a preflight (`OPTIONS` with `access-control-request-method`) is answered here,
 * 204 for an allowed origin and 403 for another. Returns true when the request is answered.
 */
export function applyCors(policy: CorsPolicy, req: IncomingMessage, res: ServerResponse): boolean {
  const origin = req.headers.origin;
  res.setHeader('vary', 'Origin');
  const allowed = typeof origin === 'string' && allowsOrigin(policy, origin);
  if (allowed) {
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-allow-credentials', 'true');
    res.setHeader('access-control-expose-headers', EXPOSED);
  }
  if (req.method !== 'OPTIONS' || req.headers['access-control-request-method'] === undefined) return false;
  if (!allowed) {
    res.writeHead(403, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        error: { code: ErrorCode.FORBIDDEN, message: `Origin ${origin ?? '(none)'} may not call this service from a browser.` },
      }),
    );
    return true;
  }
  const requested = req.headers['access-control-request-headers'];
  res.writeHead(204, {
    'access-control-allow-methods': METHODS,
    ...(typeof requested === 'string' ? { 'access-control-allow-headers': requested } : {}),
    'access-control-max-age': MAX_AGE_SECONDS,
  });
  res.end();
  return true;
}
