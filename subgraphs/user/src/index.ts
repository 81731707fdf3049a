import { AUDIT_DATABASE, backgroundAuditTrail } from '../../../platform/audit.js';
import { ConfigError } from '../../../platform/config.js';
import type { HttpService } from '../../../platform/http.js';
import { BodyTooLargeError, readBody, sendJson } from '../../../platform/http.js';
import { createNotifier } from '../../../platform/notify.js';
import { PRINCIPAL_HEADER, SESSION_RESOLVE_PATH, verifyPrincipal } from '../../../platform/principal.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { Sessions, type TokenHeader } from './auth/sessions.js';
import { createUserContext, type UserServices } from './context.js';
import { authCollections } from './datasources/auth.js';
import { usersCollection } from './datasources/users.js';
import type { Geocoder } from './geocode/geocoder.js';
import { OfflineGeocoder } from './geocode/offline.js';
import { ensureUserIndexes } from './indexes.js';
import { resolvers } from './resolvers/index.js';

/** Starts the user subgraph: identity, profile, onboarding and sessions. */
export async function start(options: SubgraphStartOptions & { geocoder?: Geocoder }): Promise<HttpService> {
  const { config, mongo } = options;
  const db = mongo.db('user');
  await ensureUserIndexes(db);
  const logger = options.logger.child({ service: 'user-subgraph' });
  if (config.nodeEnv === 'production' && (!config.smtpUrl || !config.smsWebhookUrl) && !config.outboxChosen) {
    throw new ConfigError(['In production set SMTP_URL and SMS_WEBHOOK_URL (confirmation and recovery codes go out through them), or OUTBOX_DIR to write messages to files on purpose']);
  }
  const services: UserServices = {
    db,
    config,
    notifier: createNotifier({ smtpUrl: config.smtpUrl, mailFrom: config.mailFrom, smsWebhookUrl: config.smsWebhookUrl, outboxDir: config.outboxDir, logger }),
    geocoder: options.geocoder ?? new OfflineGeocoder(),
  };
  // Only resolves sessions for the gateway; issues and revocations happen in requests, audited as their callers.
  const sessions = new Sessions(authCollections(db).sessions, usersCollection(db), backgroundAuditTrail(options.mongo.db(AUDIT_DATABASE), logger, { kind: 'service', service: 'gateway' }));
  const service = await startSubgraph({
    ...options,
    name: 'user',
    resolvers,
    createContext: (base) => createUserContext(base, services),
    extraRoutes: async (req, res) => {
      if (req.method !== 'POST' || req.url !== SESSION_RESOLVE_PATH) return false;
      const header = req.headers[PRINCIPAL_HEADER];
      const caller = verifyPrincipal(typeof header === 'string' ? header : undefined, config.internalSecret);
      if (caller?.kind !== 'service' || caller.service !== 'gateway') {
        sendJson(res, 401, { error: { code: 'UNAUTHENTICATED', message: 'Only the gateway may resolve sessions.' } });
        return true;
      }
      let body: { token?: unknown; header?: unknown };
      try {
        body = JSON.parse(await readBody(req, 4096)) as typeof body;
      } catch (error) {
        // A token too long to be one this service issued (43 characters) is unknown, not a failure of the store.
        if (error instanceof BodyTooLargeError) {
          sendJson(res, 200, { principal: null });
          return true;
        }
        body = {};
      }
      if (typeof body.token !== 'string' || body.token === '' || (body.header !== 'token' && body.header !== 'x-svc-token')) {
        sendJson(res, 400, { error: { code: 'BAD_REQUEST', message: 'Expected {"token": string, "header": "token" | "x-svc-token"}.' } });
        return true;
      }
      sendJson(res, 200, { principal: await sessions.resolve(body.token, body.header as TokenHeader) });
      return true;
    },
  });
  if (config.geocoderPreload && services.geocoder instanceof OfflineGeocoder) {
    const geocoder = services.geocoder;
    setImmediate(() => void geocoder.warmUp());
  }
  return service;
}
