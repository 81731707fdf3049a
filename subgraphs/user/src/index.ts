import { ErrorCode } from '../../../platform/contracts/errors.js';
import { backgroundAuditTrail } from '../../../platform/messaging/audit.js';
import { ConfigError } from '../../../platform/runtime/config.js';
import type { ServiceConfig } from '../../../platform/runtime/config-slices.js';
import type { HttpService } from '../../../platform/http/server.js';
import type { JsonRoute } from '../../../platform/http/json-route.js';
import { createNotifier } from '../../../platform/messaging/notify.js';
import { PRINCIPAL_HEADER, verifyPrincipal } from '../../../platform/security/signed-headers.js';
import { SESSION_RESOLVE_PATH } from '../../../platform/contracts/principal.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/graphql/subgraph.js';
import { announceThrough, Sessions } from './auth/sessions.js';
import { createUserContext, type UserServices } from './context.js';
import { authCollections, createAuthIndexes } from './auth/datasource.js';
import { createUserIndexes, usersCollection } from './profile/datasource.js';
import type { Geocoder } from './geocode/geocoder.js';
import { OfflineGeocoder } from './geocode/offline.js';
import { createAlertIndexes } from './alerts/datasource.js';
import { createOnboardingIndexes } from './onboarding/datasource.js';
import { resolvers } from './resolvers/index.js';
import { USER_LIST_CAPS } from './list-caps.js';

/** The largest body the session route reads. */
const MAX_RESOLVE_BODY = 4096;

/** Starts the user subgraph: identity, profile, onboarding and sessions. */
export async function start(options: SubgraphStartOptions<ServiceConfig<'user'>> & { geocoder?: Geocoder }): Promise<HttpService> {
  const { config, mongo } = options;
  const db = mongo.db('user');
  await createAuthIndexes(db);
  await createUserIndexes(db);
  await createOnboardingIndexes(db);
  await createAlertIndexes(db);
  const logger = options.logger.child({ service: 'user-subgraph' });
  if (config.nodeEnv === 'production' && (!config.smtpUrl || !config.smsWebhookUrl) && !config.outboxChosen) {
    throw new ConfigError([
      'In production set SMTP_URL and SMS_WEBHOOK_URL (confirmation and recovery codes go out through them), or OUTBOX_DIR to write messages to files on purpose',
    ]);
  }
  const services: UserServices = {
    db,
    config,
    notifier: createNotifier({
      smtpUrl: config.smtpUrl,
      mailFrom: config.mailFrom,
      smsWebhookUrl: config.smsWebhookUrl,
      outboxDir: config.outboxDir,
      logger,
    }),
    geocoder: options.geocoder ?? new OfflineGeocoder(),
  };
  // Only resolves sessions for the gateway; issues and revocations happen in requests, audited as their callers.
  const sessions = new Sessions(
    authCollections(db).sessions,
    usersCollection(db),
    backgroundAuditTrail(db, logger, { kind: 'service', service: 'gateway' }),
    announceThrough(db),
  );
  const fromGateway = (caller: string | string[] | undefined) => {
    const principal = verifyPrincipal(typeof caller === 'string' ? caller : undefined, config.internalSecret);
    return principal?.kind === 'service' && principal.service === 'gateway';
  };
  /** The session route: the gateway's signed principal and `{token, header}` in, `{principal, dtsExpiry}` out (`{principal: null}` for no live session). */
  const sessionRoute: JsonRoute = {
    path: SESSION_RESOLVE_PATH,
    maxBodyBytes: MAX_RESOLVE_BODY,
    // A token too long to be one this service issued (43 characters) is unknown, not a failure of the store.
    tooLarge: { status: 200, body: { principal: null } },
    admit: (headers) =>
      fromGateway(headers[PRINCIPAL_HEADER])
        ? null
        : { status: 401, body: { error: { code: ErrorCode.UNAUTHENTICATED, message: 'Only the gateway may resolve sessions.' } } },
    answer: async (body) => {
      const { token, header } = (typeof body === 'object' && body !== null ? body : {}) as { token?: unknown; header?: unknown };
      if (typeof token !== 'string' || token === '' || (header !== 'token' && header !== 'x-svc-token')) {
        return {
          status: 400,
          body: { error: { code: ErrorCode.BAD_REQUEST, message: 'Expected {"token": string, "header": "token" | "x-svc-token"}.' } },
        };
      }
      const resolved = await sessions.resolve(token, header);
      return { status: 200, body: resolved ?? { principal: null } };
    },
  };
  const service = await startSubgraph({
    ...options,
    name: 'user',
    resolvers,
    listCaps: USER_LIST_CAPS,
    createContext: (base) => createUserContext(base, services),
    routes: [sessionRoute],
  });
  if (config.geocoderPreload && services.geocoder instanceof OfflineGeocoder) {
    const geocoder = services.geocoder;
    setImmediate(() => void geocoder.warmUp());
  }
  return service;
}
