import type { ValidateFunction } from 'ajv/dist/2020.js';
import { buildOpenApiDocument, openApiPath, type OpenApiDocument } from '../../rest-adapter/src/contract/openapi.js';
import { createAjv } from '../../rest-adapter/src/contract/request-validation.js';
import type { DocumentedShape } from '../../rest-adapter/src/routes/documented.js';
import type { Route } from '../../rest-adapter/src/routes/index.js';

/** The adapter's own documents, which are not routes of the specs. */
const CONTRACT_PATHS = /^\/(openapi\.json|postman-collection\.json|docs(\/.*)?|health|ready)$/;

interface MediaType {
  schema: Record<string, unknown>;
}
interface ResponseObject {
  headers?: Record<string, { $ref?: string; required?: boolean; schema?: { type?: string } }>;
  content?: Record<string, MediaType>;
}

/**
 * Checks responses of the REST adapter against its OpenAPI document: the status must be one
 * the operation documents, the documented required headers must be there, the content type
 * must be a documented one, and the body must match its schema. A path no route serves must
 * answer 404, and a method a path does not answer 405, both with the `NoRoute` body.
 */
export class ContractChecker {
  private readonly ajv = createAjv();
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly templates: Array<{ template: string; pattern: RegExp; literalSegments: number }>;

  constructor(readonly document: OpenApiDocument = buildOpenApiDocument()) {
    this.ajv.addSchema({ $id: 'openapi.json', components: document.components });
    this.templates = Object.keys(document.paths)
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
        literalSegments: template.split('/').filter((segment) => segment && !segment.startsWith('{')).length,
      }))
      // A literal segment wins over a parameter: /accounts/x/transactions/latest is not a transactionId.
      .sort((a, b) => b.literalSegments - a.literalSegments);
  }

  private validator(key: string, schema: Record<string, unknown>): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      // `#/components/...` in the document's schemas resolves against the document itself.
      validate = this.ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')) as Record<string, unknown>,
      );
      this.validators.set(key, validate);
    }
    return validate;
  }

  /** Throws an error that says what differs from the document; returns the operation's path template (null for the adapter's own documents). */
  check(method: string, url: string, status: number, headers: Headers, text: string): string | null {
    const pathname = new URL(url, 'http://adapter').pathname;
    if (CONTRACT_PATHS.test(pathname)) return null;
    const where = `${method} ${pathname} → ${status}`;
    const candidates = this.templates.filter(({ pattern }) => pattern.test(pathname));
    const matched = candidates.find(({ template }) => this.document.paths[template]![method.toLowerCase()]);
    if (!matched) {
      const expected = candidates.length > 0 ? 405 : 404;
      if (status !== expected) throw new Error(`${where}: no documented operation, so ${expected} was expected`);
      if (status === 405) {
        const allowed = candidates.flatMap(({ template }) => Object.keys(this.document.paths[template]!).map((m) => m.toUpperCase()));
        const allow = (headers.get('allow') ?? '').split(',').map((m) => m.trim());
        if (!allowed.every((m) => allow.includes(m)))
          throw new Error(`${where}: Allow "${headers.get('allow')}" does not name ${allowed.join(', ')}`);
      }
      this.body(where, 'NoRoute', { $ref: '#/components/schemas/NoRoute' }, text);
      return null;
    }
    const operation = this.document.paths[matched.template]![method.toLowerCase()]!;
    const response = operation.responses[String(status)] as ResponseObject | undefined;
    if (!response)
      throw new Error(
        `${where}: status ${status} is not documented for ${method} ${matched.template} (documented: ${Object.keys(operation.responses).join(', ')})`,
      );
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const required = header.$ref ? true : header.required;
      if (required && !headers.has(name)) throw new Error(`${where}: the documented header ${name} is missing`);
      if (header.schema?.type === 'integer' && headers.has(name) && !/^\d+$/.test(headers.get(name)!))
        throw new Error(`${where}: the header ${name} is not an integer: ${headers.get(name)}`);
    }
    const contentType = (headers.get('content-type') ?? '').split(';')[0]!.trim();
    const media = response.content?.[contentType];
    if (!media)
      throw new Error(
        `${where}: content type "${contentType}" is not documented (documented: ${Object.keys(response.content ?? {}).join(', ')})`,
      );
    this.body(where, `${method} ${matched.template} ${status} ${contentType}`, media.schema, text, contentType);
    return matched.template;
  }

  private body(where: string, key: string, schema: Record<string, unknown>, text: string, contentType = 'application/json'): void {
    let body: unknown = text;
    if (contentType === 'application/json') {
      try {
        body = JSON.parse(text);
      } catch {
        throw new Error(`${where}: the body is not JSON: ${text.slice(0, 200)}`);
      }
    }
    const validate = this.validator(key, schema);
    if (!validate(body)) {
      const problems = (validate.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
      throw new Error(`${where}: the body does not match the document:\n  ${problems.join('\n  ')}\nbody: ${text.slice(0, 1000)}`);
    }
  }
}

type Schema = Record<string, unknown>;

/** The 200 payload schema of a route's first path: the aggregator envelope's `data`, or the end-user body. */
export function payloadSchema(document: OpenApiDocument, route: Route): Schema {
  const operation = document.paths[openApiPath(route.paths[0]!)]?.[route.method.toLowerCase()];
  const ok = operation?.responses['200'] as ResponseObject | undefined;
  const schema = ok?.content?.['application/json']?.schema;
  if (!schema) throw new Error(`${route.method} ${route.paths[0]!}: no JSON 200 response in the document`);
  return route.api === 'aggregator' ? ((schema.properties as Record<string, Schema>).data ?? {}) : schema;
}

/** The schema a value of `schema` is described by: through a $ref, a lone allOf (a description wrapper) and a null branch. */
function resolved(document: OpenApiDocument, schema: Schema): Schema {
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const component = document.components.schemas[name];
    if (!component) throw new Error(`no component ${name}`);
    return resolved(document, component);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return resolved(document, schema.allOf[0] as Schema);
  if (Array.isArray(schema.anyOf)) {
    const branches = (schema.anyOf as Schema[]).filter((branch) => branch.type !== 'null');
    if (branches.length === 1) return resolved(document, branches[0]!);
  }
  return schema;
}

/**
 * Where a payload schema breaks the rule for documented fields, one line each: a field the
 * spec lists (conditional or not) that the schema does not describe, and a field it lists
 * without marking it optional or conditional that the schema does not require.
 */
export function documentedSchemaProblems(document: OpenApiDocument, shape: DocumentedShape, schema: Schema, at = '(payload)'): string[] {
  const described = resolved(document, schema);
  if (shape.kind === 'array') {
    if (described.items === undefined) return [`${at}: documented as an array, the schema has no items`];
    return documentedSchemaProblems(document, shape.items, described.items as Schema, `${at}[]`);
  }
  if (shape.kind === 'map') {
    if (described.additionalProperties === undefined || typeof described.additionalProperties !== 'object')
      return [`${at}: documented as keyed by names, the schema has no additionalProperties`];
    return documentedSchemaProblems(document, shape.values, described.additionalProperties as Schema, `${at}.*`);
  }
  const properties = new Map(Object.entries((described.properties ?? {}) as Record<string, Schema>));
  const required = new Set((described.required ?? []) as string[]);
  const problems: string[] = [];
  for (const [name, member] of shape.members) {
    const property = properties.get(name);
    if (!property) {
      problems.push(`${at}.${name}: documented, not in the schema`);
      continue;
    }
    if (!member.conditional && !required.has(name)) problems.push(`${at}.${name}: documented without being optional, not required`);
    if (member.shape) problems.push(...documentedSchemaProblems(document, member.shape, property, `${at}.${name}`));
  }
  return problems;
}

let shared: ContractChecker | undefined;

/** One checker per test process: the document is built once. */
export function contractChecker(): ContractChecker {
  shared ??= new ContractChecker();
  return shared;
}
