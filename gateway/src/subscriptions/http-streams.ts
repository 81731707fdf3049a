import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, GraphQLError, OperationTypeNode, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { appError, ErrorCode } from '../../../platform/contracts/errors.js';
import { BodyTooLargeError, nestsDeeperThan, readBody, sendJson } from '../../../platform/http/server.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import type { DocumentLimits } from '../document-limits.js';
import type { ConnectionEnd, EventSink, Subscriber, SubscriptionEngine, Transport } from './engine.js';
import { PREPARED_SUBSCRIPTION_TOKENS } from './routes.js';

/** What a client holds unread on a stream before it is ended (it resumes from its last position). */
const MAX_UNREAD_BYTES = 1024 * 1024;
/** How long a resumption waits for a client to read what it was sent before ending its stream. */
const DRAIN_WAIT_MS = 30_000;
/** A comment (SSE) or an empty part (multipart) this often keeps proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;
/** The one subscription of a stream. */
const STREAM_ID = 'stream';

/** Which HTTP stream a request asks for by its Accept header: Server-Sent Events or Apollo's multipart subscriptions; null for neither. */
export function streamTransportOf(req: IncomingMessage): Exclude<Transport, 'graphql-ws'> | null {
  if (req.method !== 'POST' && req.method !== 'GET') return null;
  const accept = req.headers.accept ?? '';
  if (/text\/event-stream/i.test(accept)) return 'sse';
  if (/multipart\/mixed/i.test(accept) && /subscriptionSpec/i.test(accept)) return 'multipart';
  return null;
}

/** How a stream writes: its content type, each result, its end. */
interface StreamFormat {
  contentType: string;
  /** What opens the body, before the first result. */
  opening: string;
  result(json: string, position: string | null): string;
  heartbeat: string;
  /** What ends the body when the subscription is complete (not when the client should come back). */
  complete: string;
  /** Whether a resumption's caught-up result is sent: Apollo Client would show one without data as its last data again. */
  marksCaughtUp: boolean;
}

const FORMATS: Record<Exclude<Transport, 'graphql-ws'>, StreamFormat> = {
  // GraphQL over Server-Sent Events, distinct connections mode; the event id is the position (a browser's EventSource sends it back as Last-Event-ID).
  sse: {
    contentType: 'text/event-stream; charset=utf-8',
    opening: '',
    result: (json, position) => `${position === null ? '' : `id: ${position}\n`}event: next\ndata: ${json}\n\n`,
    heartbeat: ':\n\n',
    complete: 'event: complete\ndata:\n\n',
    marksCaughtUp: true,
  },
  // Apollo's multipart HTTP subscription protocol: each result a JSON part `{"payload":…}`, `{}` as a heartbeat.
  multipart: {
    contentType: 'multipart/mixed;boundary="graphql";subscriptionSpec="1.0"',
    opening: '\r\n--graphql',
    result: (json) => `\r\ncontent-type: application/json; charset=utf-8\r\n\r\n{"payload":${json}}\r\n--graphql`,
    heartbeat: '\r\ncontent-type: application/json; charset=utf-8\r\n\r\n{}\r\n--graphql',
    complete: '--\r\n',
    marksCaughtUp: false,
  },
};

/** A GraphQL-over-HTTP request as a stream reads it. */
interface StreamRequest {
  query: string;
  variables: Record<string, unknown>;
  operationName: string | null;
  extensions: Record<string, unknown>;
}

/** Reads the request: a JSON body (POST) or the URL's parameters (GET, as a browser's EventSource sends). */
async function readRequest(req: IncomingMessage, bodyLimitBytes: number): Promise<StreamRequest> {
  let fields: Record<string, unknown>;
  if (req.method === 'POST') {
    const text = await readBody(req, bodyLimitBytes);
    const body: unknown = JSON.parse(text);
    if (body === null || typeof body !== 'object' || Array.isArray(body) || nestsDeeperThan(body)) throw new SyntaxError('body');
    fields = body as Record<string, unknown>;
  } else {
    const params = new URL(req.url ?? '/', 'http://gateway').searchParams;
    fields = Object.create(null) as Record<string, unknown>;
    const query = params.get('query');
    if (query !== null) fields.query = query;
    for (const name of ['variables', 'extensions']) {
      const value = params.get(name);
      if (value !== null) {
        const parsed: unknown = JSON.parse(value);
        if (nestsDeeperThan(parsed)) throw new SyntaxError(name);
        fields[name] = parsed;
      }
    }
    const operationName = params.get('operationName');
    if (operationName !== null) fields.operationName = operationName;
  }
  const object = (name: string): Record<string, unknown> => {
    const value = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (value === undefined || value === null) return {};
    if (typeof value !== 'object' || Array.isArray(value)) throw new GraphQLError(`\`${name}\` must be an object.`);
    return value as Record<string, unknown>;
  };
  const query = Object.hasOwn(fields, 'query') ? fields.query : undefined;
  if (typeof query !== 'string') throw new GraphQLError('`query` must be the subscription document.');
  const operationName = Object.hasOwn(fields, 'operationName') ? fields.operationName : undefined;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    throw new GraphQLError('`operationName` must be a string.');
  return { query, variables: object('variables'), operationName: operationName ?? null, extensions: object('extensions') };
}

/** One stream's subscription: writes the engine's results in the stream's format. */
class StreamSink implements EventSink {
  private ended = false;
  readonly marksCaughtUp: boolean;

  constructor(
    private readonly res: ServerResponse,
    private readonly format: StreamFormat,
  ) {
    this.marksCaughtUp = format.marksCaughtUp;
    res.once('close', () => (this.ended = true));
  }

  send(result: Buffer, position: string): void {
    if (this.ended) return;
    if (this.res.writableLength > MAX_UNREAD_BYTES) {
      this.behind();
      return;
    }
    this.res.write(this.format.result(result.toString('utf8'), position));
  }

  async room(): Promise<boolean> {
    if (this.ended) return false;
    if (!this.res.writableNeedDrain) return true;
    const drained = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => finish(false), DRAIN_WAIT_MS);
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        this.res.off('drain', onDrain);
        this.res.off('close', onClose);
        resolve(ok);
      };
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      this.res.once('drain', onDrain);
      this.res.once('close', onClose);
    });
    if (!drained) this.behind();
    return drained && !this.ended;
  }

  fail(errors: readonly GraphQLError[]): void {
    if (this.ended) return;
    this.res.write(this.format.result(JSON.stringify({ errors: errors.map((error) => error.toJSON()) }), null));
    this.finish(true);
  }

  behind(): void {
    this.finish(false, true);
  }

  /**
   * Ends the stream: as complete, or without completing so that the client comes back and resumes.
   * One whose client stopped reading (`behind`) is destroyed: ending it would wait for a client
   * that may never read again.
   */
  finish(complete: boolean, destroy = false): void {
    if (this.ended) return;
    this.ended = true;
    if (destroy) this.res.destroy();
    else this.res.end(complete ? this.format.complete : undefined);
  }

  heartbeat(): void {
    if (!this.ended) this.res.write(this.format.heartbeat);
  }
}

/** What the HTTP streams need beside the engine. */
export interface HttpStreamOptions {
  engine: SubscriptionEngine;
  schema: () => GraphQLSchema;
  logger: Logger;
  /** The largest body a client may send. */
  bodyLimitBytes: number;
  documentLimits: DocumentLimits;
  /** The client address group of a request. */
  addressOf: (request: IncomingMessage) => string;
  /** Counts the request against its address's request rate, before anything costs; throws RATE_LIMITED past it. */
  countRequest?: (request: IncomingMessage) => Promise<void>;
}

/** The HTTP status of a refusal before the stream starts. */
function statusOf(errors: readonly GraphQLError[]): number {
  const code = errors[0]?.extensions.code;
  if (code === ErrorCode.RATE_LIMITED) return 429;
  if (code === ErrorCode.UNAUTHENTICATED) return 401;
  return 400;
}

/**
 * Serves a subscription over an HTTP stream: Server-Sent Events (graphql-sse's distinct
 * connections mode) or Apollo's multipart protocol, chosen by the Accept header. The request is
 * refused with a JSON error and its status before the stream starts (401 for credentials, 429 for
 * a cap or a rate, 400 for the rest); once it runs, the subscription's results follow, each with
 * its position (SSE's event id). `after` comes from the field's argument, `extensions.after`, or
 * SSE's `Last-Event-ID`. A stream the gateway ends for a restart or a slow client ends without
 * completing, so that the client comes back and resumes.
 */
export function serveHttpStreams(
  options: HttpStreamOptions,
): (req: IncomingMessage, res: ServerResponse, transport: Exclude<Transport, 'graphql-ws'>) => Promise<void> {
  const { engine, logger } = options;
  const refuse = (res: ServerResponse, errors: readonly GraphQLError[], status = statusOf(errors)): void =>
    sendJson(res, status, { errors: errors.map((error) => error.toJSON()) });
  return async (req, res, transport) => {
    const address = options.addressOf(req);
    res.once('close', engine.openFrom(address));
    const overAddress = engine.addressRefusal(address);
    if (overAddress !== null) {
      refuse(res, [appError(ErrorCode.OPERATION_LIMIT_EXCEEDED, overAddress)], 429);
      return;
    }
    try {
      await options.countRequest?.(req);
    } catch (error) {
      refuse(res, [error instanceof GraphQLError ? error : appError(ErrorCode.INTERNAL, 'The request could not be counted.')]);
      return;
    }
    let request: StreamRequest;
    try {
      request = await readRequest(req, options.bodyLimitBytes);
    } catch (error) {
      if (error instanceof BodyTooLargeError) {
        refuse(res, [appError(ErrorCode.PAYLOAD_TOO_LARGE, error.message)], 413);
        return;
      }
      if (error instanceof GraphQLError) {
        refuse(res, [appError(ErrorCode.BAD_REQUEST, error.message)]);
        return;
      }
      refuse(res, [appError(ErrorCode.BAD_REQUEST, 'The request is not a GraphQL request: a JSON object with `query`.')]);
      return;
    }
    const headers: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
    const format = FORMATS[transport];
    const sink = new StreamSink(res, format);
    /** Why the engine ended the connection before the stream started (then it is refused, not written to). */
    let endedEarly: ConnectionEnd | null = null;
    const ends: Record<ConnectionEnd, () => void> = {
      'session-ended': () => sink.fail([appError(ErrorCode.UNAUTHENTICATED, 'The session has ended.')]),
      restarting: () => sink.finish(false),
    };
    const connected = await engine.connect(
      headers,
      (why) => {
        if (res.headersSent) ends[why]();
        else endedEarly = why;
      },
      () => !res.destroyed,
      transport,
    );
    if ('refused' in connected) {
      if (connected.refused === 'credentials') {
        refuse(
          res,
          [appError(ErrorCode.UNAUTHENTICATED, 'These credentials may not subscribe: an end user, an aggregator or a merchant.')],
          401,
        );
        return;
      }
      refuse(res, [appError(ErrorCode.OPERATION_LIMIT_EXCEEDED, connected.message)], 429);
      return;
    }
    const subscriber: Subscriber = connected;
    res.once('close', () => engine.disconnect(subscriber));
    const admitted = await engine.admit(subscriber, STREAM_ID, request.query);
    if (admitted) {
      engine.release(subscriber, STREAM_ID);
      refuse(res, admitted);
      return;
    }
    let document: DocumentNode;
    try {
      document = parse(request.query, { maxLexicalTokens: options.documentLimits.maxTokens + PREPARED_SUBSCRIPTION_TOKENS });
    } catch (error) {
      engine.release(subscriber, STREAM_ID);
      refuse(res, [error instanceof GraphQLError ? error : new GraphQLError('The document does not parse.')]);
      return;
    }
    const invalid = [...validate(options.schema(), document)];
    const operation = getOperationAST(document, request.operationName);
    if (invalid.length === 0 && operation?.operation !== OperationTypeNode.SUBSCRIPTION)
      invalid.push(
        appError(ErrorCode.BAD_REQUEST, 'Only a subscription is served as a stream; send queries and mutations as plain requests.'),
      );
    if (invalid.length > 0) {
      engine.release(subscriber, STREAM_ID);
      refuse(res, invalid);
      return;
    }
    const lastEventId = transport === 'sse' ? (headers['last-event-id'] ?? null) : null;
    const extensionsAfter = Object.hasOwn(request.extensions, 'after') ? request.extensions.after : undefined;
    const after = typeof extensionsAfter === 'string' ? extensionsAfter : null;
    // Read afresh: the engine may have ended the connection while the request was being admitted.
    const early = endedEarly as ConnectionEnd | null;
    if (early !== null) {
      engine.release(subscriber, STREAM_ID);
      if (early === 'session-ended') refuse(res, [appError(ErrorCode.UNAUTHENTICATED, 'The session has ended.')], 401);
      else refuse(res, [appError(ErrorCode.UNAVAILABLE, 'The gateway is restarting: try again.')], 503);
      return;
    }
    res.writeHead(200, {
      'content-type': format.contentType,
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    res.write(format.opening);
    res.flushHeaders();
    let started: Awaited<ReturnType<SubscriptionEngine['start']>>;
    try {
      started = await engine.start(
        subscriber,
        STREAM_ID,
        { document, operationName: request.operationName, variables: request.variables, after, lastEventId },
        sink,
      );
    } catch (error) {
      // The log is away (Redis): cut, so that the client comes back and resumes.
      logger.warn('subscription not started', { error: (error as Error).message });
      engine.release(subscriber, STREAM_ID);
      sink.finish(false);
      return;
    }
    if (Array.isArray(started)) {
      engine.release(subscriber, STREAM_ID);
      sink.fail(started);
      return;
    }
    const heartbeat = setInterval(() => sink.heartbeat(), HEARTBEAT_MS);
    res.once('close', () => {
      clearInterval(heartbeat);
      started.end();
    });
    logger.debug('stream subscription started', { transport });
  };
}
