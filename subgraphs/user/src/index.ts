import { readBody, sendJson, type HttpService } from '../../../platform/http.js';
import { PRINCIPAL_HEADER, SESSION_RESOLVE_PATH, verifyPrincipal } from '../../../platform/principal.js';
import { startSubgraph, type SubgraphStartOptions } from '../../../platform/subgraph.js';
import { Authenticator } from './auth/login.js';
import { createUserContext } from './context.js';
import { authCollections } from './datasources/auth.js';
import { usersCollection } from './datasources/users.js';
import { ensureUserIndexes } from './indexes.js';
import { resolvers } from './resolvers/index.js';

/** Starts the user subgraph: identity, profile and sessions. */
export async function start(options: SubgraphStartOptions): Promise<HttpService> {
  const { config, mongo } = options;
  const db = mongo.db('user');
  await ensureUserIndexes(db);
  return startSubgraph({
    ...options,
    name: 'user',
    resolvers,
    createContext: (base) => createUserContext(base, db, config),
    extraRoutes: async (req, res, scope) => {
      if (req.method !== 'POST' || req.url !== SESSION_RESOLVE_PATH) return false;
      const header = req.headers[PRINCIPAL_HEADER];
      const caller = verifyPrincipal(typeof header === 'string' ? header : undefined, config.internalSecret);
      if (caller?.kind !== 'service' || caller.service !== 'gateway') {
        sendJson(res, 401, { error: { code: 'UNAUTHENTICATED', message: 'Only the gateway may resolve sessions.' } });
        return true;
      }
      let token: unknown;
      try {
        token = (JSON.parse(await readBody(req, 4096)) as { token?: unknown }).token;
      } catch {
        sendJson(res, 400, { error: { code: 'BAD_REQUEST', message: 'Expected {"token": string}.' } });
        return true;
      }
      if (typeof token !== 'string' || token === '') {
        sendJson(res, 400, { error: { code: 'BAD_REQUEST', message: 'Expected {"token": string}.' } });
        return true;
      }
      const authenticator = new Authenticator(authCollections(db), usersCollection(db), config, scope.logger);
      const principal = await authenticator.resolveToken(token);
      sendJson(res, 200, { principal });
      return true;
    },
  });
}
