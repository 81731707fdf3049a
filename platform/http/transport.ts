import { STATUS_CODES } from 'node:http';
import { withinTime } from './deadline.js';
import { postJson, targetOf, type ConnectionPool, type PostAnswer } from './client.js';
import { callInSpan } from '../telemetry/tracing.js';
import { BodyTooLargeError } from './server.js';

/** A turn of the event loop, as a socket would take: a chain of calls in this process must not run as one long stretch of microtasks while connections wait to be accepted and read. */
export const turnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A body handed over in this process, refused past `limit` bytes as a socket's reader refuses it. */
export function readLocalBody(text: string, limit: number): Promise<string> {
  return Buffer.byteLength(text) > limit ? Promise.reject(new BodyTooLargeError(limit)) : Promise.resolve(text);
}

/** An answer given in this process, as a POST over HTTP would have received it. */
export function localAnswer(status: number, headers: Record<string, string>, text: string): PostAnswer {
  return { status, statusText: STATUS_CODES[status] ?? '', headers, text };
}

/** A POST answered by a service in this process: the request's headers (lower-case names) and body in, its answer out. */
export type LocalPost = (headers: Record<string, string>, body: string) => Promise<PostAnswer>;

/**
 * How a service posts JSON to another service, and where it offers its own endpoints besides its
 * HTTP server. A service knows HTTP alone (`HTTP_TRANSPORT`); whoever starts several services in
 * one process may hand them an `InProcessTransport` instead.
 */
export interface Transport {
  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number, pool?: ConnectionPool): Promise<PostAnswer>;
  /** Offers `url` to this transport's callers until the returned function withdraws it. */
  serve(url: string, post: LocalPost): () => void;
}

/** Runs a call in a CLIENT span, with the trace context in the headers it sends: over HTTP and in this process alike. */
function traced(
  url: string,
  headers: Record<string, string>,
  send: (headers: Record<string, string>) => Promise<PostAnswer>,
): Promise<PostAnswer> {
  const target = targetOf(url);
  return callInSpan(
    `POST ${target.host}${target.pathname}`,
    { 'http.request.method': 'POST', 'url.full': url, 'server.address': target.hostname },
    headers,
    send,
  );
}

/** Every call over HTTP; a service's endpoints are its HTTP server's alone. */
export const HTTP_TRANSPORT: Transport = {
  post: (url, headers, body, timeoutMs, pool) => traced(url, headers, (carried) => postJson(url, carried, body, timeoutMs, pool)),
  serve: () => () => {},
};

/**
 * Services of one process calling each other without a socket or HTTP parsing: a URL a service
 * serves through this transport is answered by a function call, any other goes over HTTP. A
 * service offers its URL as it starts listening and withdraws it as it starts closing, after
 * which calls go over HTTP (and find it closed). `scripts/stack.ts` creates one for the services
 * it starts together, as IN_PROCESS_CALLS says.
 */
export class InProcessTransport implements Transport {
  private readonly endpoints = new Map<string, LocalPost>();

  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number, pool?: ConnectionPool): Promise<PostAnswer> {
    const local = this.endpoints.get(url);
    return traced(url, headers, (carried) =>
      local ? withinTime(local(carried, body), timeoutMs) : postJson(url, carried, body, timeoutMs, pool),
    );
  }

  serve(url: string, post: LocalPost): () => void {
    this.endpoints.set(url, post);
    return () => {
      if (this.endpoints.get(url) === post) this.endpoints.delete(url);
    };
  }
}
