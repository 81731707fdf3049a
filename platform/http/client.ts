import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';

/** Keep-alive agents for http and https targets. */
export interface ConnectionPool {
  'http:': http.Agent;
  'https:': https.Agent;
}

/**
 * A keep-alive pool. An idle socket is closed after 30 s, before the servers' 65 s keep-alive: a
 * reused socket is not one the server is closing. `maxSockets` per target (unbounded by default).
 */
export function connectionPool(maxSockets = Infinity): ConnectionPool {
  return {
    'http:': new http.Agent({ keepAlive: true, maxSockets, timeout: 30_000 }),
    'https:': new https.Agent({ keepAlive: true, maxSockets, timeout: 30_000 }),
  };
}

/**
 * The pool of the REST adapter's and the gateway's own calls: at most 128 sockets to one target,
 * half the gateway's default cap of connections from one address (HTTP_MAX_CONNECTIONS_PER_ADDRESS),
 * so that the adapter's calls queue here rather than being refused there.
 */
const defaultPool = connectionPool(128);
/** The largest answer read. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** A target parsed once: its URL, and the options Node's client takes for it. */
interface Target {
  url: URL;
  options: http.RequestOptions;
}

/** Parsed targets by their text, so that a hot path between services does not parse the same URL on every call. */
const targets = new Map<string, Target>();
const MAX_TARGETS = 1000;

/** `url` parsed, once per distinct text (the few addresses services call; a full table is emptied rather than grown). */
function parsedTarget(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    target = { url: parsed, options: urlToHttpOptions(parsed) };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/** `url` parsed, once per distinct text. */
export function targetOf(url: string): URL {
  return parsedTarget(url).url;
}

/** A JSON POST answered: its status and body text. */
export interface PostAnswer {
  status: number;
  statusText: string;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * POSTs a JSON body over a keep-alive connection pool and reads the whole answer. Leaner than
 * `fetch` on the hot path between services (no streams of the WHATWG kind). A call that has not
 * answered in full within `timeoutMs` (waiting for a pooled socket included) fails, as does an
 * answer over 32 MiB. Services reach each other through a `Transport` (`transport.ts`), which
 * comes here for HTTP.
 */
export function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  pool: ConnectionPool = defaultPool,
): Promise<PostAnswer> {
  const { url: target, options } = parsedTarget(url);
  const transport = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = transport.request(
      {
        ...options,
        method: 'POST',
        agent: pool[target.protocol as keyof ConnectionPool],
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > MAX_ANSWER_BYTES) request.destroy(new Error(`the answer from ${target.host} is over ${MAX_ANSWER_BYTES} bytes`));
          else chunks.push(chunk);
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            statusText: response.statusMessage ?? '',
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    // A timer rather than AbortSignal.timeout: the same deadline without a signal and its listeners
    // per call. It rejects by itself: a request still waiting for a pooled socket reports its
    // destruction only once it gets one.
    const timer = setTimeout(() => {
      const late = new Error(`no answer from ${target.host} within the ${timeoutMs} ms timeout`);
      reject(late);
      request.destroy(late);
    }, timeoutMs);
    request.on('close', () => clearTimeout(timer));
    request.on('error', reject);
    request.end(body);
  });
}
