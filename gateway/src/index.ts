import { readFileSync } from 'node:fs';
import { GraphQLError, print } from 'graphql';
import type { EventBus } from '../../platform/messaging/event-bus.js';
import { newId, sha256 } from '../../platform/security/secrets.js';
import { SUBGRAPH_NAMES } from '../../platform/runtime/config.js';
import type { ServiceConfig } from '../../platform/runtime/config-slices.js';
import {
  graphqlHandler,
  graphqlLocal,
  type ContextBuilder,
  type GraphQLEndpointOptions,
  type RequestSource,
} from '../../platform/graphql/apollo-http.js';
import { sendJson, startHttpService, type HttpService } from '../../platform/http/server.js';
import { HTTP_TRANSPORT, type Transport } from '../../platform/http/transport.js';
import type { Logger } from '../../platform/runtime/logger.js';
import {
  clientAddress,
  CLIENT_IP_HEADER,
  PRINCIPAL_HEADER,
  verifyClientIp,
  verifyPrincipal,
} from '../../platform/security/signed-headers.js';
import { formatError, unexpectedErrorLog } from '../../platform/graphql/error-format.js';
import { operationTelemetryPlugin } from '../../platform/graphql/telemetry.js';
import { offerOperatorRoute } from '../../platform/telemetry/observe.js';
import { bodyRefusals, reportSubgraphReadiness, reportSubscriptions, zeroGatewayCounters } from '../../platform/telemetry/metrics.js';
import { GATEWAY_SUBSCRIPTIONS_PATH, SUPERGRAPH_PATH, withGatewaySubscriptions } from '../../schema/compose.js';
import { createAuthenticator, sessionConfirmationPlugin, sessionEndingPlugin, type SessionLookups } from './authenticate.js';
import { createHeaderSigner, createSubgraphFetcher, SubgraphSource, type SubgraphFetchCounts } from './subgraph-fetch.js';

import type { GatewayContext } from './context.js';
import { createIdempotencyStore, idempotencyPlugin } from './idempotency.js';
import { errorCountPlugin, operationLimitsPlugin } from './operation-limits.js';
import { serviceScopePlugin } from './service-scope.js';
import { servePage } from './pages.js';
import { createHitCounter, createRequestLimits, operationKey } from './rate-limits.js';
import { createLocalCounts } from './local-counts.js';
import { PREPARED_SUBSCRIPTION_TOKENS, servedExecutor } from './subscriptions/routes.js';
import { createFederation } from './execution/federation.js';
import { startSubscriptionServer, type SubscriptionServer } from './subscriptions/server.js';
import { createDocumentReader } from './pipeline/documents.js';
import { createHttpAnswerer } from './pipeline/http.js';
import { createOperationPipeline } from './pipeline/operation.js';
import type { ExecuteAs } from './subscriptions/engine.js';
import { subscribeMessageLimit } from './subscriptions/graphql-ws.js';
import {
  checkPersistedQueryHash,
  isTrustedSubscription,
  operationOf,
  persistedQueryCache,
  trustedDocumentsOf,
  untrustedRequestError,
} from './trusted-documents.js';
import { documentCheck } from './document-limits.js';

/**
 * Each subgraph's own readiness, for operators (`GET /dependencies`, on the metrics port when there
 * is one); never the gateway's. One check a second at most, shared by the callers meanwhile.
 */
function subgraphReadinessOf(
  config: Pick<ServiceConfig<'gateway'>, 'subgraphUrls'>,
): () => Promise<Record<string, 'ready' | 'unavailable'>> {
  let last: { at: number; states: Promise<Record<string, 'ready' | 'unavailable'>> } | null = null;
  return () => {
    if (!last || performance.now() - last.at > 1000) last = { at: performance.now(), states: subgraphReadiness(config) };
    return last.states;
  };
}

async function subgraphReadiness(config: Pick<ServiceConfig<'gateway'>, 'subgraphUrls'>): Promise<Record<string, 'ready' | 'unavailable'>> {
  const states = await Promise.all(
    SUBGRAPH_NAMES.map(async (name) => {
      const ok = await fetch(new URL('/ready', config.subgraphUrls[name]), { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.ok,
        () => false,
      );
      return [name, ok ? 'ready' : 'unavailable'] as const;
    }),
  );
  return Object.fromEntries(states);
}

/**
 * The running gateway: its HTTP service and the subscriptions it holds. Callers in this process
 * (the REST adapter, the subgraphs) may reach its `/graphql` through an in-process transport, with
 * the same authentication, trusted documents, plugins, statuses and headers.
 */
export interface GatewayService extends HttpService {
  /** Subscriptions registered and receiving events now (a subscribe message counts once its credentials are checked). */
  subscribers(): number;
  /** The subgraph fetches sent so far, and those deduplication answered from one in flight. */
  subgraphFetches(): SubgraphFetchCounts;
  /** Session tokens answered from memory, and by a read of the session. */
  sessionLookups(): SessionLookups;
}

/**
 * Starts the gateway on `/graphql`, serving the committed supergraph over the configured subgraph
 * URLs. `bus` carries every subgraph's events here: those of subscriptions, and the user
 * subgraph's announcements of ended sessions.
 */
export async function start(options: {
  config: ServiceConfig<'gateway'>;
  logger: Logger;
  bus: EventBus;
  port?: number;
  /** How it calls the subgraphs and offers its `/graphql` besides HTTP; HTTP alone by default. */
  transport?: Transport;
}): Promise<GatewayService> {
  const { config } = options;
  const transport = options.transport ?? HTTP_TRANSPORT;
  const logger = options.logger.child({ service: 'gateway' });
  zeroGatewayCounters(SUBGRAPH_NAMES);
  const subgraphByUrl = new Map(SUBGRAPH_NAMES.map((name) => [config.subgraphUrls[name], name]));
  const signer = createHeaderSigner(config.internalSecret);
  const subgraphFetcher = createSubgraphFetcher(config.subgraphTimeoutMs, transport, (url) => subgraphByUrl.get(url) ?? 'unknown');
  const hits = createHitCounter(config.redisUrl, config.dbPrefix, logger);
  // Counted here and shared within moments while well inside a limit: such a request does not wait for Redis (none to share with without it).
  const earlyHits = config.redisUrl && config.rateLimits.shareMs > 0 ? createLocalCounts(hits, config.rateLimits.shareMs, logger) : null;
  const requestLimits = createRequestLimits(config.rateLimits, { exact: hits, early: earlyHits ?? hits }, logger);
  const idempotencyKeys = createIdempotencyStore(config.redisUrl, config.dbPrefix, logger);
  const trusted = trustedDocumentsOf(config);
  const federation = createFederation(
    readFileSync(SUPERGRAPH_PATH, 'utf8'),
    new Map(SUBGRAPH_NAMES.map((name) => [name, new SubgraphSource(config.subgraphUrls[name], name, subgraphFetcher, signer, logger)])),
    logger,
  );
  const authenticate = createAuthenticator(config, options.bus, transport);
  /** Closes the connections of a session whose logout this gateway served; none until the subscription server starts. */
  const sessionSockets: { ended: SubscriptionServer['sessionEnded'] } = { ended: () => {} };
  /** Serves subscriptions as HTTP streams; none until the subscription server starts. */
  const streams: { serve: SubscriptionServer['serveStream'] } = { serve: async () => false };
  /** The composed API schema with the subscriptions the gateway serves itself (no subgraph declares them): over HTTP (validation, introspection) and graphql-ws alike. */
  const apiSchema = withGatewaySubscriptions(federation.apiSchema, readFileSync(GATEWAY_SUBSCRIPTIONS_PATH, 'utf8'));
  const errors = { formatError: formatError(config, logger), includeStacktrace: config.exposeErrorDetails };
  const pipeline = createOperationPipeline<GatewayContext>({
    schema: apiSchema,
    documents: createDocumentReader({
      schema: apiSchema,
      // The context refuses a longer document before this; the parser's own bound stands behind it.
      parseOptions: { maxLexicalTokens: config.documentLimits.maxTokens + PREPARED_SUBSCRIPTION_TOKENS },
      introspection: config.nodeEnv !== 'production',
      // No "Did you mean ...?" in production errors: with introspection off, they would map the schema.
      hideSchemaDetails: config.nodeEnv === 'production',
    }),
    execute: servedExecutor(federation.execute),
    // Registered documents may be sent by hash alone; in `require` mode only they run.
    persistedQueries: persistedQueryCache(trusted, config.trustedDocuments),
    plugins: [
      operationTelemetryPlugin('gateway'),
      unexpectedErrorLog(logger),
      sessionConfirmationPlugin(),
      sessionEndingPlugin(authenticate, (headers) => sessionSockets.ended(headers)),
      operationLimitsPlugin(config.operationLimits, trusted),
      serviceScopePlugin(),
      errorCountPlugin(),
      requestLimits.plugin,
      idempotencyPlugin(idempotencyKeys, config.idempotencyKeyTtlSeconds, logger),
    ],
    errors,
    logger,
  });
  // A simple request without a preflight-forcing header is refused (CSRF), and one HTTP request carries one operation (no batching past the limits).
  const run = createHttpAnswerer(pipeline, errors);
  /** Whether a request comes from one of the platform's services or with a known service key (neither is rate limited), told from its headers alone. */
  const isServiceCall = (headers: RequestSource['headers']): boolean => {
    const internal = headers[PRINCIPAL_HEADER];
    if (typeof internal === 'string') return verifyPrincipal(internal, config.internalSecret, Date.now(), 'gateway')?.kind === 'service';
    const key = headers['x-service-key'];
    return typeof key === 'string' && config.serviceKeyHashes.has(sha256(key));
  };
  const checkDocument = documentCheck(config.documentLimits, 'http');
  // Everything here runs before the document is parsed: the cheapest refusals first.
  const context: ContextBuilder<GatewayContext> = async (source, scope, request) => {
    const operation = operationOf(request);
    const tooBig = operation.text === null ? null : checkDocument(operation.text);
    if (tooBig) throw tooBig;
    // A client's mistake, refused before any work with its own code (the pipeline's refusal has none).
    checkPersistedQueryHash(operation);
    // The REST adapter passes on its caller's address, signed; a direct caller's is its own.
    const clientIp =
      verifyClientIp(source.headers[CLIENT_IP_HEADER], config.internalSecret) ??
      clientAddress(source.headers, source.remoteAddress, config.trustProxy);
    const key = operationKey(operation);
    const serviceCall = isServiceCall(source.headers);
    // A caller known at once costs no read to count: its address is counted with the rest, at once.
    const known = serviceCall ? null : authenticate.atOnce(source.headers);
    // Otherwise the address is counted before the credential is looked up: a flood of made-up tokens costs no session reads past the limit.
    if (!known && !serviceCall) await requestLimits.countAddress(clientIp);
    const { principal, confirmed } = known
      ? { principal: known, confirmed: null }
      : await authenticate.early(source.headers, scope.requestId);
    // Subgraphs calling the graph (signed internal principal) run their own documents; every client, service keys included, is checked.
    const internal =
      source.headers[PRINCIPAL_HEADER] !== undefined &&
      principal.kind === 'service' &&
      (SUBGRAPH_NAMES as readonly string[]).includes(principal.service);
    let fieldsCounted = false;
    if (!internal) {
      const untrusted = untrustedRequestError(trusted, config.trustedDocuments, operation);
      // An untrusted document is counted against its address alone (if not counted yet), and goes no further.
      fieldsCounted = await requestLimits.countRequest({
        clientIp,
        principal: untrusted ? null : principal,
        sessionConfirmed: confirmed,
        operationKey: key,
        withAddress: known !== null,
      });
      if (untrusted) throw untrusted;
    }
    return { principal, sessionConfirmed: confirmed, requestId: scope.requestId, clientIp, operationKey: key, fieldsCounted };
  };
  const endpoint: GraphQLEndpointOptions<GatewayContext> = {
    // The REST adapter and the subgraphs sign their calls and may carry uploads; any other client gets the GraphQL body limit.
    bodyLimitBytes: (headers) =>
      verifyClientIp(headers[CLIENT_IP_HEADER], config.internalSecret) !== null ||
      verifyPrincipal(headers[PRINCIPAL_HEADER] as string | undefined, config.internalSecret, Date.now(), 'gateway') !== null
        ? config.bodyLimitBytes
        : config.graphqlBodyLimitBytes,
    onBodyTooLarge: () => bodyRefusals.inc({ service: 'gateway' }),
    context,
  };
  const handle = graphqlHandler(run, endpoint);
  const dependencies = subgraphReadinessOf(config);
  const service = await startHttpService({
    name: 'gateway',
    host: config.host,
    port: options.port ?? config.ports.gateway,
    logger,
    // Ready while it can serve: a subgraph that is down makes its fields UNAVAILABLE, not the
    // gateway, so a partial outage never takes every gateway out of the load balancer.
    ready: async () => true,
    cors: { origins: config.corsOrigins },
    metrics: config.metricsPort === undefined,
    limits: config.httpLimits,
    handle: async (req, res, scope) => {
      // With a metrics port (always in production) the route is there only, off the public port.
      if (config.metricsPort === undefined && req.method === 'GET' && req.url === '/dependencies') {
        scope.route = '/dependencies';
        sendJson(res, 200, await dependencies());
        return;
      }
      if (await servePage(req, res, { ide: config.graphqlIde })) return;
      if (await streams.serve(req, res)) return;
      await handle(req, res, scope);
    },
  });
  const withdrawDependencies = config.metricsPort === undefined ? () => {} : offerOperatorRoute('/dependencies', dependencies);
  const withdraw = transport.serve(`${service.url}/graphql`, graphqlLocal(run, endpoint, logger, 'gateway'));
  const executeAs: ExecuteAs = async (document, variables, principal) => {
    const response = await pipeline.run(
      { query: typeof document === 'string' ? document : print(document), variables },
      { principal, sessionConfirmed: null, requestId: newId('evt_req_'), clientIp: null },
    );
    return response.body.kind === 'single'
      ? response.body.singleResult
      : { errors: [new GraphQLError('An incremental result is not expected here.')] };
  };
  const subscriptions = startSubscriptionServer({
    server: service.server,
    path: '/graphql',
    schema: () => apiSchema,
    bus: options.bus,
    authenticate: (headers) => authenticate(headers, newId('ws_')),
    execute: executeAs,
    logger,
    maxPayloadBytes: subscribeMessageLimit(config.documentLimits),
    bodyLimitBytes: config.graphqlBodyLimitBytes,
    documentLimits: config.documentLimits,
    limits: { ...config.subscriptionLimits, windowSeconds: config.rateLimits.windowSeconds },
    counter: hits,
    clientAddress: (request) => clientAddress(request.headers, request.socket.remoteAddress, config.trustProxy),
    isTrusted: (query) => isTrustedSubscription(trusted, config.trustedDocuments, query),
    // As an HTTP operation is counted, before its credential is looked up.
    countRequest: (request) => requestLimits.countAddress(clientAddress(request.headers, request.socket.remoteAddress, config.trustProxy)),
  });
  sessionSockets.ended = (headers) => subscriptions.sessionEnded(headers);
  streams.serve = (req, res) => subscriptions.serveStream(req, res);
  const unreport = [
    ...(['graphql-ws', 'sse', 'multipart'] as const).map((transport) =>
      reportSubscriptions('gateway', transport, async () => subscriptions.subscribersBy()[transport]),
    ),
    ...SUBGRAPH_NAMES.map((name) => reportSubgraphReadiness(name, async () => ((await dependencies())[name] === 'ready' ? 1 : 0))),
  ];
  return {
    ...service,
    subscribers: () => subscriptions.subscribers(),
    subgraphFetches: () => ({ ...subgraphFetcher.counts }),
    sessionLookups: () => authenticate.sessionLookups(),
    close: async () => {
      for (const stop of unreport) stop();
      withdraw();
      withdrawDependencies();
      await subscriptions.close();
      await service.close();
      await earlyHits?.flush();
      await hits.close();
      await idempotencyKeys.close();
      authenticate.close();
    },
  };
}
