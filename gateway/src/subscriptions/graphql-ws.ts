import type { IncomingMessage, Server } from 'node:http';
import { GraphQLError, type ExecutionResult, type FormattedExecutionResult, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { ErrorCode } from '../../../platform/contracts/errors.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import type { DocumentLimits } from '../document-limits.js';
import type { ActiveSubscription, ConnectionEnd, EventSink, ExecuteAs, Subscriber, SubscriptionEngine } from './engine.js';

/** Largest amount a subscriber's socket may hold unsent: past it, the connection is closed and the client resumes. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const NEXT_SUFFIX = Buffer.from('}');
/** How often, and how long at most, a resumption waits for a client to read what it was sent. */
const DRAIN_POLL_MS = 10;
const DRAIN_WAIT_MS = 30_000;

/** Room in a graphql-ws message beside its document: the envelope, the operation name, variables, extensions, or a `connection_init`'s credentials. */
export const SUBSCRIBE_MESSAGE_ALLOWANCE_BYTES = 64 * 1024;

/**
 * The largest message a subscription client may send: twice the document limit (a document's
 * quotes, backslashes and line breaks take two bytes each in JSON) plus the allowance. A larger
 * message closes the socket (1009) before it is read.
 */
export function subscribeMessageLimit(documentLimits: DocumentLimits): number {
  return 2 * documentLimits.maxBytes + SUBSCRIBE_MESSAGE_ALLOWANCE_BYTES;
}

/** The close code of a connection over a connection cap (graphql-ws clients do not retry it). */
const TOO_MANY_CONNECTIONS = 4429;
/** Close codes by why the engine ends a connection: a session ended (4401, not retried), a restart (1012, retried). */
const CLOSE_CODES: Record<ConnectionEnd, number> = { 'session-ended': 4401, restarting: 1012 };
/** A client that does not read fast enough: 1013 (try again later); graphql-ws clients reconnect and resume. */
const TOO_SLOW = 1013;

/**
 * One subscription as graphql-ws holds it: a stream that never yields. The engine's results are
 * written to the socket as `next` messages directly (serialized once per group), and graphql-ws
 * ends it with `return()` on `complete` or when the socket closes.
 */
class WsSubscription implements AsyncIterableIterator<ExecutionResult>, EventSink {
  /** The `next` message up to its payload: `{"id":...,"type":"next","payload":`. */
  private readonly prefix: Buffer;
  private ended: ((result: IteratorResult<ExecutionResult>) => void) | null = null;
  private done = false;
  active: ActiveSubscription | null = null;
  readonly marksCaughtUp = true;

  constructor(
    private readonly socket: WebSocket,
    private readonly id: string,
  ) {
    this.prefix = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`);
  }

  send(result: Buffer): void {
    this.write(result);
  }

  private write(result: Buffer): void {
    if (this.done || this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.behind();
      return;
    }
    this.socket.send(Buffer.concat([this.prefix, result, NEXT_SUFFIX]), { binary: false });
  }

  async room(): Promise<boolean> {
    for (let waited = 0; this.socket.bufferedAmount > MAX_BUFFERED_BYTES / 2; waited += DRAIN_POLL_MS) {
      if (this.done || this.socket.readyState !== this.socket.OPEN) return false;
      if (waited >= DRAIN_WAIT_MS) {
        this.behind();
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
    return !this.done && this.socket.readyState === this.socket.OPEN;
  }

  /** An `error` message, which ends the subscription for the client (graphql-ws's own `complete` after it is then ignored). */
  fail(errors: readonly GraphQLError[]): void {
    if (!this.done && this.socket.readyState === this.socket.OPEN)
      this.socket.send(JSON.stringify({ id: this.id, type: 'error', payload: errors.map((error) => error.toJSON()) }));
    void this.return();
  }

  behind(): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(TOO_SLOW, 'This client fell behind: reconnect and resume.');
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.ended = resolve));
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    if (!this.done) {
      this.done = true;
      this.active?.end();
      this.ended?.({ value: undefined, done: true });
      this.ended = null;
    }
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** What the graphql-ws transport needs beside the engine. */
export interface GraphqlWsOptions {
  server: Server;
  path: string;
  schema: () => GraphQLSchema;
  engine: SubscriptionEngine;
  /** Runs a query or mutation sent over the socket through the gateway's execution. */
  execute: ExecuteAs;
  logger: Logger;
  /** Largest message a client may send (see `subscribeMessageLimit`). */
  maxPayloadBytes: number;
  /** The client address group of an upgrade request. */
  addressOf: (request: IncomingMessage) => string;
}

/** The graphql-ws server's stop: closes every socket (1012), then the server. */
export type StopGraphqlWs = () => Promise<void>;

/**
 * Serves subscriptions over graphql-ws on the gateway's HTTP server: credentials in
 * `connection_init` (read as HTTP headers), each `subscribe` admitted and started by the engine.
 * Over a connection cap, the socket is closed in `connection_init` with 4429; a session that ends
 * closes it with 4401; a client that cannot keep up, with 1013 (it reconnects and resumes).
 */
export function serveGraphqlWs(options: GraphqlWsOptions): StopGraphqlWs {
  const { engine, logger } = options;
  const wss = new WebSocketServer({ server: options.server, path: options.path, maxPayload: options.maxPayloadBytes });
  const subscribers = new Map<object, Subscriber>();
  const disposable = useServer(
    {
      schema: () => options.schema(),
      onConnect: async (ctx) => {
        const { socket, request } = ctx.extra;
        const overAddress = engine.addressRefusal(options.addressOf(request));
        if (overAddress !== null) {
          socket.close(TOO_MANY_CONNECTIONS, overAddress);
          return false;
        }
        const params = (ctx.connectionParams ?? {}) as Record<string, unknown>;
        const headers: Record<string, string> = Object.create(null) as Record<string, string>;
        for (const [name, value] of Object.entries(params)) if (typeof value === 'string') headers[name.toLowerCase()] = value;
        const subscriber = await engine.connect(
          headers,
          (why, reason) => socket.close(CLOSE_CODES[why], reason),
          () => socket.readyState === socket.OPEN,
          'graphql-ws',
        );
        if ('refused' in subscriber) {
          if (subscriber.refused === 'credentials') return false;
          socket.close(TOO_MANY_CONNECTIONS, subscriber.message);
          return false;
        }
        subscribers.set(ctx, subscriber);
        socket.once('close', () => {
          subscribers.delete(ctx);
          engine.disconnect(subscriber);
        });
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const subscriber = subscribers.get(ctx);
        if (!subscriber) return [new GraphQLError('The connection credentials are no longer valid.')];
        return await engine.admit(subscriber, id, payload.query);
      },
      context: (ctx, id, payload) => ({
        subscriber: subscribers.get(ctx),
        id,
        after: afterOf(payload.extensions),
        socket: ctx.extra.socket,
      }),
      execute: async (args): Promise<ExecutionResult> => {
        const { subscriber } = args.contextValue as { subscriber: Subscriber | undefined };
        if (!subscriber) return { errors: [new GraphQLError('The connection credentials are no longer valid.')] };
        const result: FormattedExecutionResult = await options.execute(args.document, args.variableValues ?? {}, subscriber.principal);
        // Formatted errors travel to the client as they are.
        return result as ExecutionResult;
      },
      subscribe: async (args) => {
        const { subscriber, id, after, socket } = args.contextValue as {
          subscriber: Subscriber | undefined;
          id: string;
          after: string | null;
          socket: WebSocket;
        };
        if (!subscriber) return { errors: [new GraphQLError('The connection credentials are no longer valid.')] };
        const stream = new WsSubscription(socket, id);
        let started: Awaited<ReturnType<SubscriptionEngine['start']>>;
        try {
          started = await engine.start(
            subscriber,
            id,
            { document: args.document, operationName: args.operationName, variables: args.variableValues ?? {}, after, lastEventId: null },
            stream,
          );
        } catch (error) {
          // The log is away (Redis): closed as retryable (1013), so that the client comes back and resumes, not 4500, which it would not.
          logger.warn('subscription not started', { error: (error as Error).message });
          engine.release(subscriber, id);
          stream.behind();
          return stream;
        }
        if (Array.isArray(started)) {
          // A position the log no longer holds ends it as an error, as a refusal before it started would.
          if (started.some((error) => error.extensions.code === ErrorCode.EVENTS_EXPIRED)) {
            stream.fail(started);
            return stream;
          }
          return { errors: started };
        }
        stream.active = started;
        return stream;
      },
      onError: (ctx, id, _payload, errors) => {
        const subscriber = subscribers.get(ctx);
        if (subscriber) engine.release(subscriber, id);
        // Counted by their metrics; a line each at debug only, so that a client sending refusals in a loop does not fill the log.
        logger.debug('subscription refused', { id, errors: errors.map((e) => e.message) });
      },
      onComplete: (ctx, id) => {
        const subscriber = subscribers.get(ctx);
        if (subscriber) engine.release(subscriber, id);
      },
    },
    wss,
  );
  // After graphql-ws's own listener, which has given the socket its error handler.
  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    socket.once('close', engine.openFrom(options.addressOf(request)));
    // A message over the size limit is a refusal (ws closes the socket with 1009), not the internal error graphql-ws reports on stderr.
    const reportInternal = socket.listeners('error') as Array<(error: Error) => void>;
    socket.removeAllListeners('error');
    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH')
        logger.info('subscription message over the size limit', { limit: options.maxPayloadBytes });
      else for (const report of reportInternal) report.call(socket, error);
    });
  });
  return async () => {
    // 1012 (service restart): clients reconnect, through the load balancer, to another gateway.
    // One that does not finish the closing handshake within a second is cut.
    for (const client of wss.clients) client.close(1012, 'The gateway is restarting: reconnect.');
    for (let waited = 0; wss.clients.size > 0 && waited < 1000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    for (const client of wss.clients) client.terminate();
    await disposable.dispose();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
}

/** The position a `subscribe` message's extensions ask to resume after (`extensions.after`). */
function afterOf(extensions: Record<string, unknown> | null | undefined): string | null {
  const after = extensions && Object.hasOwn(extensions, 'after') ? extensions.after : undefined;
  return typeof after === 'string' ? after : null;
}
