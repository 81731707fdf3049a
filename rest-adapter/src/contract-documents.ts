import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServiceConfig } from '../../platform/runtime/config-slices.js';
import type { RequestScope } from '../../platform/http/server.js';
import { buildPostmanCollection } from './contract/collection.js';
import { buildOpenApiDocument } from './contract/openapi.js';
import { REFERENCE_PAGE_HEADERS, referencePageFile } from './contract/reference-page.js';

/** Serves one of the adapter's own documents when the request asks for one; says whether it did. */
export type ContractDocuments = (req: IncomingMessage, res: ServerResponse, pathname: string, scope: RequestScope) => Promise<boolean>;

/** The adapter's own documents: the OpenAPI document, the reference page and the request collection. */
export function contractDocuments(
  config: Pick<ServiceConfig<'rest-adapter'>, 'nodeEnv' | 'restPublicUrl' | 'seedDemo'>,
): ContractDocuments {
  // The contract is built once, from the same route table that serves the requests.
  // The demo passwords appear in the examples only where the demo data is loaded, outside production.
  const demoCredentials = config.seedDemo && config.nodeEnv !== 'production';
  const openApi = JSON.stringify(buildOpenApiDocument({ demoCredentials }));
  const collection = JSON.stringify(buildPostmanCollection(config.restPublicUrl, { demoCredentials }), null, 2);

  return async (req, res, pathname, scope) => {
    if (req.method !== 'GET') return false;
    if (pathname === '/openapi.json' || pathname === '/postman-collection.json') scope.route = pathname;
    if (pathname === '/openapi.json') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' }).end(openApi);
      return true;
    }
    if (pathname === '/postman-collection.json') {
      res
        .writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-disposition': 'attachment; filename="banking-graph.postman_collection.json"',
        })
        .end(collection);
      return true;
    }
    if (pathname !== '/docs' && !pathname.startsWith('/docs/')) return false;
    const file = await referencePageFile(pathname.replace(/^\/docs\/?/, ''));
    if (!file) return false;
    scope.route = '/docs';
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache', ...REFERENCE_PAGE_HEADERS }).end(file.body);
    return true;
  };
}
