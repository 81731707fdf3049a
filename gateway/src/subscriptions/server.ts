import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { GraphQLSchema } from 'graphql';
import type { EventBus } from '../../../platform/messaging/event-bus.js';
import type { Principal } from '../../../platform/contracts/principal.js';
import type { Logger } from '../../../platform/runtime/logger.js';
import type { DocumentLimits } from '../document-limits.js';
import { addressGroup, type HitCounter } from '../rate-limits.js';
import { createSubscriptionEngine, type ExecuteAs, type SubscriptionLimits, type Transport } from './engine.js';
import { serveGraphqlWs } from './graphql-ws.js';
import { serveHttpStreams, streamTransportOf } from './http-streams.js';

export interface SubscriptionServerOptions {
  server: Server;
  path: string;
  schema: () => GraphQLSchema;
  bus: EventBus;
  /** The principal of a connection's credentials, read as HTTP headers; throws when refused. */
  authenticate: (headers: Record<string, string | undefined>) => Promise<Principal>;
  execute: ExecuteAs;
  logger: Logger;
  /** Largest message a graphql-ws client may send (see `subscribeMessageLimit`). */
  maxPayloadBytes: number;
  /** Largest body of a subscription sent as an HTTP stream. */
  bodyLimitBytes: number;
  /** Bounds of a subscribe message's document, checked before it is parsed. */
  documentLimits: DocumentLimits;
  limits: SubscriptionLimits;
  /** Counts subscribe messages per principal (shared by every gateway where it is Redis). */
  counter: HitCounter;
  /** The client address of a request (the socket's, or the proxy's header where it is trusted). */
  clientAddress: (request: IncomingMessage) => string | null;
  /** Whether a subscription's text may run (trusted documents); every one may when not given. */
  isTrusted?: (query: string) => boolean;
  /** Counts an HTTP stream's request against its address's request rate before it is authenticated; throws RATE_LIMITED past it. */
  countRequest?: (request: IncomingMessage) => Promise<void>;
}

/** The server's handle: its count of subscriptions, the sessions ended on this gateway, and its stop. */
export interface SubscriptionServer {
  /** Subscriptions receiving events now, over every transport. */
  subscribers(): number;
  /** The same, by transport. */
  subscribersBy(): Record<Transport, number>;
  /** Ends the connections opened with the session token of these headers: its logout ran on this gateway. */
  sessionEnded(headers: Record<string, string | undefined>): void;
  /** Serves a request for an HTTP stream on the path (SSE, multipart); false when it is not one. */
  serveStream(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Starts the subscription engine and the transports that serve it on the gateway's HTTP server:
 * graphql-ws on the path's upgrades, and Server-Sent Events and multipart HTTP on its requests
 * that ask for them (`serveStream`).
 */
export function startSubscriptionServer(options: SubscriptionServerOptions): SubscriptionServer {
  const engine = createSubscriptionEngine(options);
  const addressOf = (request: IncomingMessage): string => {
    const ip = options.clientAddress(request);
    return ip ? addressGroup(ip) : 'unknown';
  };
  const stopWs = serveGraphqlWs({ ...options, engine, addressOf });
  const serveHttp = serveHttpStreams({ ...options, engine, addressOf });
  return {
    serveStream: async (req, res) => {
      const transport = streamTransportOf(req);
      if (transport === null || new URL(req.url ?? '/', 'http://gateway').pathname !== options.path) return false;
      await serveHttp(req, res, transport);
      return true;
    },
    subscribers: () => Object.values(engine.subscribers()).reduce((sum, count) => sum + count, 0),
    subscribersBy: () => engine.subscribers(),
    sessionEnded: (headers) => engine.sessionEnded(headers),
    close: async () => {
      engine.close();
      await stopWs();
    },
  };
}
