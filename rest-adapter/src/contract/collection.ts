import { ROUTE_GROUPS, type Route } from '../routes/index.js';
import { withoutDemoPasswords } from './openapi.js';

/** The collection variables that hold credentials, filled from the login routes' answers. */
const CREDENTIAL_VARIABLES = ['token', 'svcToken', 'merchantJwt', 'customerJwt'] as const;

/** The variable of a route's credential header: the JWT is a customer's on /public/customer routes, a merchant's elsewhere. */
function credentialVariable(route: Route, routePath: string): string {
  if (route.credential === 'token') return 'token';
  if (route.credential === 'x-svc-token') return 'svcToken';
  return routePath.startsWith('/public/customer') ? 'customerJwt' : 'merchantJwt';
}

function item(route: Route, routePath: string, demoCredentials: boolean) {
  const segments = routePath.split('/').slice(1);
  const header: Array<{ key: string; value: string }> = [];
  if (route.credential) header.push({ key: route.credential, value: `{{${credentialVariable(route, routePath)}}}` });
  if (route.body === 'object' || route.body === 'array') header.push({ key: 'content-type', value: 'application/json' });
  const query = Object.keys(route.queryParameters ?? {}).map((name) => ({ key: name, value: route.example?.query?.[name] ?? '' }));
  const raw = `{{baseUrl}}${routePath}${query.length ? `?${query.map((q) => `${q.key}=${q.value}`).join('&')}` : ''}`;
  const body =
    route.body === 'multipart'
      ? { mode: 'formdata', formdata: [{ key: 'file', type: 'file', src: [] }] }
      : route.body === 'none'
        ? undefined
        : {
            mode: 'raw',
            raw: JSON.stringify(
              demoCredentials
                ? (route.example?.body ?? (route.body === 'array' ? [] : {}))
                : withoutDemoPasswords(route.example?.body ?? {}),
              null,
              2,
            ),
            options: { raw: { language: 'json' } },
          };
  return {
    name: `${route.method} ${routePath}`,
    request: {
      method: route.method,
      header,
      url: {
        raw,
        host: ['{{baseUrl}}'],
        path: segments,
        ...(query.length ? { query } : {}),
        variable: segments
          .filter((s) => s.startsWith(':'))
          .map((s) => ({ key: s.slice(1), value: route.example?.params?.[s.slice(1)] ?? '' })),
      },
      ...(body ? { body } : {}),
      description: `${route.summary}.${route.designed ? ` Designed (the spec does not show this): ${route.designed}` : ''}`,
    },
  };
}

/**
 * A Postman collection (v2.1, which Insomnia imports too) of every route at every path, from
 * the route table, with the demo data's examples. Fill `token`, `svcToken`, `merchantJwt` and `customerJwt`
 * from the login routes' answers.
 */
export function buildPostmanCollection(baseUrl: string, options: { demoCredentials?: boolean } = {}) {
  return {
    info: {
      name: 'Banking graph REST interfaces',
      description: "Every route of the end-user and aggregator APIs, generated from the REST adapter's route table.",
      schema: 'https://schema.getpostman.com/json/collection/v2.1.0/collection.json',
    },
    variable: [{ key: 'baseUrl', value: baseUrl }, ...CREDENTIAL_VARIABLES.map((key) => ({ key, value: '' }))],
    item: ROUTE_GROUPS.map((group) => ({
      name: group.name,
      item: group.routes.flatMap((route) => route.paths.map((routePath) => item(route, routePath, options.demoCredentials ?? true))),
    })),
  };
}
