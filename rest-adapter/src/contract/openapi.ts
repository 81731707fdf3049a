import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOperation } from '../operations.js';
import { DEMO } from '../../../platform/domain/demo.js';
import { aggregatorCode } from '../envelopes.js';
import { changesState, codesOfStatus, documentedStatuses, ROUTE_GROUPS, type Route } from '../routes/index.js';
import type { JsonSchema } from './json-schema.js';
import { SelectionSchemas } from './selection-schema.js';
import { apiSchema } from './api-schema.js';

const PACKAGE_VERSION = (
  JSON.parse(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../package.json'), 'utf8')) as { version: string }
).version;

/** An OpenAPI 3.1 document, as plain data. */
export type OpenApiDocument = {
  openapi: '3.1.0';
  info: Record<string, unknown>;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, JsonSchema>; [section: string]: unknown };
  [member: string]: unknown;
};

/** One operation of the document (a route at one of its paths). */
type OpenApiOperation = Record<string, unknown> & { operationId: string; responses: Record<string, unknown> };

const SECURITY_SCHEMES = {
  token: { type: 'apiKey', in: 'header', name: 'token', description: 'End-user session token from `PUT /token`.' },
  'x-svc-token': {
    type: 'apiKey',
    in: 'header',
    name: 'x-svc-token',
    description: 'Aggregator token from `POST /auth/get-token` (a `confined` token may only read).',
  },
  'x-svc-jwtoken': {
    type: 'apiKey',
    in: 'header',
    name: 'x-svc-jwtoken',
    description:
      'Merchant JWT (`POST /payment-link/merchant/get-token`) on /public/merchant routes; customer JWT (`POST /public/customer/payment/link`) on /public/customer routes. Both last 3600 s.',
  },
} as const;

const STATUS_TEXT: Record<number, string> = {
  200: 'Success.',
  400: 'The request is malformed, or a field breaks its documented rule; `field` names it.',
  401: 'The credential is missing, wrong, expired or revoked, or the actor is locked.',
  403: 'The credential is valid but may not do this.',
  404: 'The object does not exist, or belongs to someone else (answered as if it did not exist).',
  409: 'The object is not in a state that allows this, or changed while the request ran, or a request with the same Idempotency-Key is still running.',
  422: 'The Idempotency-Key was used before with another request.',
  413: 'The body or file is over its size limit.',
  415: 'The body or file is not of an accepted type.',
  429: 'Too many requests; `Retry-After` says when to try again.',
  500: "An internal error (nothing about it is disclosed), or a condition the spec's error table puts at 500.",
  503: 'A service behind the adapter did not answer; nothing was changed.',
};

const REQUEST_ID_HEADER = {
  required: true,
  description: "The request id (the client's own `x-request-id` when it sent one), also in error bodies and logs.",
  schema: { type: 'string' },
};

/** The designed error bodies of the two APIs, used on every error status. */
const ERROR_SCHEMAS: Record<string, JsonSchema> = {
  EndUserError: {
    type: 'object',
    description: 'Error body of the end-user API (designed: the spec leaves it open).',
    properties: {
      success: { const: false },
      error: {
        type: 'object',
        properties: {
          code: { type: 'string', description: "One of the graph's error codes (the same `extensions.code` GraphQL clients read)." },
          message: { type: 'string' },
          field: { type: 'string', description: 'The field at fault, where there is one (`documents[0].entityId`).' },
        },
        required: ['code', 'message'],
        additionalProperties: false,
      },
      requestId: { type: 'string' },
    },
    required: ['success', 'error', 'requestId'],
    additionalProperties: false,
  },
  AggregatorError: {
    type: 'object',
    description:
      'Error body of the aggregator API, in its envelope; `code` is never "0". The spec shows `unauthorized`; other codes are the graph\'s codes in lower case (`forbidden`, `not_found`, `validation_failed` ...).',
    properties: {
      code: { type: 'string', not: { const: '0' } },
      message: { type: 'string' },
      field: { type: 'string' },
      requestId: { type: 'string' },
    },
    required: ['code', 'message', 'requestId'],
    additionalProperties: false,
  },
  NoRoute: {
    type: 'object',
    description: 'Answer to a path no route serves (404) or to a method the path does not answer (405, with `Allow`).',
    properties: {
      error: {
        type: 'object',
        properties: { code: { type: 'string' }, message: { type: 'string' } },
        required: ['code', 'message'],
        additionalProperties: false,
      },
      requestId: { type: 'string' },
    },
    required: ['error', 'requestId'],
    additionalProperties: false,
  },
};

/** `/cards/:SvcCardId` → `/cards/{SvcCardId}`. */
export function openApiPath(routePath: string): string {
  return routePath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const parameterNames = (routePath: string) => [...routePath.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1]!);

function operationId(route: Route, aliasIndex: number): string {
  const base = route.operation.replace(/\.graphql$/, '').replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
  return aliasIndex === 0 ? base : `${base}Alias${aliasIndex}`;
}

function successSchema(route: Route, payload: JsonSchema): JsonSchema {
  if (route.api === 'end-user') return payload;
  return {
    type: 'object',
    properties: {
      code: { const: '0' },
      data: payload,
      requestId: { type: 'string', description: "The client's own requestId where the route takes one, else the request id." },
    },
    required: ['code', 'data', 'requestId'],
    additionalProperties: false,
  };
}

function errorDescription(route: Route, status: number): string {
  const codes = codesOfStatus(route, status);
  const text = STATUS_TEXT[status] ?? 'Error.';
  if (route.statuses && Object.values(route.statuses).includes(status))
    return `${text} On this route (the spec's error table for its codes): ${codes.join(', ')}.`;
  return `${text} Codes: ${codes.join(', ')}.`;
}

/** The API's error body, its code held to the codes this route answers with this status. */
function errorSchema(route: Route, status: number): JsonSchema {
  const codes = codesOfStatus(route, status);
  if (route.api === 'aggregator') {
    return {
      allOf: [
        { $ref: '#/components/schemas/AggregatorError' },
        { properties: { code: { enum: [...new Set(codes.map(aggregatorCode))] } } },
      ],
    };
  }
  return { allOf: [{ $ref: '#/components/schemas/EndUserError' }, { properties: { error: { properties: { code: { enum: codes } } } } }] };
}

/** An example with the published demo passwords replaced: they are shown only where the demo data is loaded outside production. */
export function withoutDemoPasswords(example: unknown): unknown {
  const secrets: unknown[] = [DEMO.password, DEMO.aggregatorPassword];
  return JSON.parse(JSON.stringify(example), (_key, value: unknown) => (secrets.includes(value) ? '<password>' : value));
}

function requestBody(route: Route, demoCredentials: boolean): Record<string, unknown> | undefined {
  if (route.body === 'none') return undefined;
  if (route.body === 'multipart') {
    return {
      required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            properties: {
              file: {
                type: 'string',
                contentMediaType: 'application/octet-stream',
                description: 'The file (its type is read from its content).',
              },
            },
            required: ['file'],
          },
          encoding: { file: { contentType: 'image/png, image/jpeg, image/gif, application/pdf' } },
        },
      },
    };
  }
  const schema = route.requestSchema ?? { type: route.body };
  return {
    required: true,
    content: {
      'application/json': {
        schema,
        ...(route.example?.body !== undefined
          ? { example: demoCredentials ? route.example.body : withoutDemoPasswords(route.example.body) }
          : {}),
      },
    },
  };
}

function describe(route: Route, routePath: string): string {
  const lines: string[] = [];
  if (route.designed) lines.push(`**Designed** (the spec does not show this): ${route.designed}`);
  const aliases = route.paths.filter((p) => p !== routePath);
  if (aliases.length) lines.push(`Also served at: ${aliases.map((p) => `\`${p}\``).join(', ')}.`);
  if (route.missingCredentialStatus)
    lines.push(`Without the \`${route.credential}\` header the spec's status ${route.missingCredentialStatus} answers.`);
  if (route.body === 'object' || route.body === 'array') lines.push('Properties the body schema does not name are ignored.');
  lines.push(`GraphQL: \`${route.operation}\` through the gateway.`);
  return lines.join('\n\n');
}

/**
 * Builds the OpenAPI 3.1 document of every route from the route table: paths and aliases,
 * credential headers, request schemas, success envelopes (from the operations' selection
 * sets over the supergraph) and every error status with its body.
 */
export function buildOpenApiDocument(options: { serverUrl?: string; demoCredentials?: boolean } = {}): OpenApiDocument {
  const demoCredentials = options.demoCredentials ?? true;
  const selections = new SelectionSchemas(apiSchema());
  const paths: OpenApiDocument['paths'] = {};
  const tags: Array<{ name: string; description: string }> = [];

  for (const group of ROUTE_GROUPS) {
    for (const api of ['end-user', 'aggregator'] as const) {
      const routes = group.routes.filter((route) => route.api === api);
      if (routes.length === 0) continue;
      const tag = `${api === 'end-user' ? 'End-user' : 'Aggregator'} API: ${group.name}`;
      tags.push({ name: tag, description: `${group.name} routes of the ${api} specification.` });
      for (const route of routes) {
        const payload =
          route.responseType === 'html' ? { type: 'string' } : route.responseSchema(selections.ofOperation(loadOperation(route.operation)));
        route.paths.forEach((routePath, aliasIndex) => {
          const parameters: Array<Record<string, unknown>> = parameterNames(routePath).map((name) => ({
            name,
            in: 'path',
            required: true,
            schema: route.paramSchemas?.[name] ?? { type: 'string' },
            ...(route.example?.params?.[name] ? { example: route.example.params[name] } : {}),
          }));
          for (const [name, parameter] of Object.entries(route.queryParameters ?? {})) {
            parameters.push({
              name,
              in: 'query',
              required: parameter.required,
              description: parameter.description,
              schema: parameter.schema,
              ...(route.example?.query?.[name] ? { example: route.example.query[name] } : {}),
            });
          }
          if (changesState(route)) {
            parameters.push({
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[!-~]+$' },
              description:
                'Makes the request safe to retry: a repeat with the same key and body gets the first answer again (with `Idempotent-Replayed: true`) without running; the same key with another body is 422; a repeat while the first runs is 409. Kept 24 hours (IDEMPOTENCY_KEY_TTL_SECONDS), per caller.',
            });
          }
          for (const name of route.optionalHeaders ?? []) {
            parameters.push({
              name,
              in: 'header',
              required: false,
              schema: { type: 'string' },
              description:
                name === 'x-service-key'
                  ? 'A service key: the service login channels (statementGenerator, dicBuilder, chat) need one whose scope (SERVICE_KEY_SCOPES) names the channel and the user.'
                  : 'Optional here: with it, the call updates the prospect the token belongs to.',
            });
          }
          const responses: Record<string, unknown> = {};
          for (const status of documentedStatuses(route)) {
            if (status === 200) {
              responses['200'] = {
                description: STATUS_TEXT[200],
                headers: {
                  'x-request-id': { $ref: '#/components/headers/RequestId' },
                  ...(changesState(route)
                    ? {
                        'idempotent-replayed': {
                          description: '`true` when this is the kept answer of an earlier request with the same Idempotency-Key.',
                          schema: { type: 'string', enum: ['true'] },
                        },
                      }
                    : {}),
                },
                content:
                  route.responseType === 'html'
                    ? { 'text/html': { schema: payload } }
                    : { 'application/json': { schema: successSchema(route, payload) } },
              };
              continue;
            }
            responses[String(status)] = {
              description: errorDescription(route, status),
              headers: {
                'x-request-id': { $ref: '#/components/headers/RequestId' },
                ...(status === 429
                  ? {
                      'retry-after': {
                        description: 'Seconds until the limit allows another request.',
                        schema: { type: 'integer' },
                        required: true,
                      },
                    }
                  : {}),
              },
              content: { 'application/json': { schema: errorSchema(route, status) } },
            };
          }
          const operation: OpenApiOperation = {
            operationId: operationId(route, aliasIndex),
            summary: route.summary,
            description: describe(route, routePath),
            tags: [tag],
            security: route.credential ? [{ [route.credential]: [] }] : [],
            ...(parameters.length ? { parameters } : {}),
            ...(route.body !== 'none' ? { requestBody: requestBody(route, demoCredentials) } : {}),
            responses,
            ...(route.paths[0]!.startsWith('/condor/') ? { deprecated: true } : {}),
            ...(route.designed ? { 'x-designed': true } : {}),
          };
          const item = (paths[openApiPath(routePath)] ??= {});
          item[route.method.toLowerCase()] = operation;
        });
      }
    }
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Banking graph REST interfaces',
      version: PACKAGE_VERSION,
      description: [
        'The two documented REST interfaces, served by the REST adapter over the GraphQL federation:',
        'the **end-user API** (header `token`; successes carry the documented fields, most with `success: true`) and',
        'the **aggregator API** (headers `x-svc-token` and `x-svc-jwtoken`; every body is the envelope `{code, data, requestId}` with `code` "0" on success).',
        '',
        'Error bodies, which the specs leave open, are designed once: `EndUserError` and `AggregatorError`. Where a spec says "not shown",',
        'the operation is marked **Designed** and `x-designed: true`. A path no route serves answers 404, a method a path does not answer 405 (`NoRoute`).',
      ].join('\n'),
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    tags,
    paths,
    components: {
      schemas: { ...selections.components, ...ERROR_SCHEMAS },
      securitySchemes: SECURITY_SCHEMES,
      headers: { RequestId: REQUEST_ID_HEADER },
    },
  };
}
