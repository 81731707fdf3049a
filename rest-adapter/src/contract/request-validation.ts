import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ErrorCode } from '../../../platform/contracts/errors.js';
import { RouteInputError, type Route } from '../routes/route.js';
import type { JsonSchema } from './json-schema.js';

/** An Ajv for the document's dialect (JSON Schema 2020-12), with `date` and `date-time` formats. */
export function createAjv(): Ajv2020 {
  // Not strict: OpenAPI's `examples` and descriptions sit inside the schemas.
  const ajv = new Ajv2020({ allErrors: false, strict: false, verbose: true });
  addFormats.default(ajv, ['date', 'date-time', 'uri', 'email']);
  return ajv;
}

/** `/documents/0/entityId` → `documents[0].entityId`, the graph's own way of naming a field. */
function fieldName(instancePath: string, missing?: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (missing !== undefined) parts.push(missing);
  return parts.reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

/** The schema at a path of the instance, following `properties` and `items`. */
function schemaAt(schema: JsonSchema, parts: string[]): JsonSchema | undefined {
  let current: JsonSchema | undefined = schema;
  for (const part of parts) {
    if (!current) return undefined;
    if (/^\d+$/.test(part) && current.items) current = current.items as JsonSchema;
    else current = (current.properties as Record<string, JsonSchema> | undefined)?.[part];
  }
  return current;
}

/** Whether the property at `instancePath` is one its object requires. */
function isRequiredProperty(schema: JsonSchema, instancePath: string): boolean {
  const parts = instancePath.split('/').slice(1);
  const name = parts.pop();
  const parent = schemaAt(schema, parts);
  return name !== undefined && Array.isArray(parent?.required) && (parent.required as string[]).includes(name);
}

function describe(error: ErrorObject, field: string): string {
  const subject = field || 'The body';
  switch (error.keyword) {
    case 'required':
      return `${field} is required.`;
    case 'type':
      return `${subject} must be ${String(error.params.type).replace(',', ' or ')}.`;
    case 'enum':
      return `${subject} must be one of: ${(error.params.allowedValues as unknown[]).map(String).join(', ')}.`;
    case 'pattern': {
      // The rule's own words, as the graph says them: "must be 1-36 letters, …", "must contain at least one digit".
      const rule: unknown = error.parentSchema?.description;
      if (typeof rule !== 'string') return `${subject} must match ${String(error.params.pattern)}.`;
      return /^(must|may) /.test(rule) ? `${subject} ${rule}.` : `${subject} must be ${rule}.`;
    }
    case 'minLength':
    case 'maxLength': {
      const { minLength, maxLength } = (error.parentSchema ?? {}) as { minLength?: number; maxLength?: number };
      const range =
        minLength !== undefined && maxLength !== undefined
          ? `${minLength}-${maxLength}`
          : minLength !== undefined
            ? `at least ${minLength}`
            : `at most ${maxLength}`;
      return `${subject} must be ${range} characters long.`;
    }
    case 'maxItems':
      return `${subject} may hold at most ${String(error.params.limit)} items.`;
    case 'minItems':
      return `${subject} must hold at least ${String(error.params.limit)} items.`;
    default:
      return `${subject} ${error.message ?? 'is not valid'}.`;
  }
}

/**
 * Checks a route's path parameters, query and JSON body against the schemas the OpenAPI
 * document publishes, before any GraphQL call: the first problem is refused with a
 * RouteInputError naming the field. A required property that is missing, null or empty is
 * REQUIRED_ELEMENT_MISSING, a value of the wrong type BAD_REQUEST, anything else
 * VALIDATION_FAILED: the codes the graph gives for the same problems.
 */
export class RequestValidator {
  private readonly ajv = createAjv();
  private readonly compiled = new Map<Route, { params?: ValidateFunction; query?: ValidateFunction; body?: ValidateFunction }>();

  constructor(routes: Route[]) {
    for (const route of routes) {
      const entry: { params?: ValidateFunction; query?: ValidateFunction; body?: ValidateFunction } = {};
      if (route.paramSchemas) entry.params = this.ajv.compile(parametersSchema(route.paramSchemas, Object.keys(route.paramSchemas)));
      if (route.queryParameters) {
        const query = route.queryParameters;
        entry.query = this.ajv.compile(
          parametersSchema(
            Object.fromEntries(Object.entries(query).map(([name, parameter]) => [name, parameter.schema])),
            Object.keys(query).filter((name) => query[name]!.required),
          ),
        );
      }
      if (route.requestSchema) entry.body = this.ajv.compile(route.requestSchema);
      this.compiled.set(route, entry);
    }
  }

  /** Throws a RouteInputError for the first thing of the request that breaks the route's schemas. */
  check(route: Route, input: { params: Record<string, string>; query: URLSearchParams; body: unknown }): void {
    const entry = this.compiled.get(route);
    if (!entry) return;
    if (entry.params) this.run(route, entry.params, input.params, entry.params.schema as JsonSchema);
    if (entry.query) this.run(route, entry.query, Object.fromEntries(input.query), entry.query.schema as JsonSchema);
    if (entry.body && input.body !== undefined) this.run(route, entry.body, input.body, route.requestSchema!);
  }

  private run(route: Route, validate: ValidateFunction, data: unknown, schema: JsonSchema): void {
    if (validate(data)) return;
    const error = validate.errors?.[0];
    if (!error) return;
    const missing = error.keyword === 'required' ? String(error.params.missingProperty) : undefined;
    const field = fieldName(error.instancePath, missing);
    const blank = error.data === null || error.data === '';
    const isMissing = missing !== undefined || (blank && isRequiredProperty(schema, error.instancePath));
    if (isMissing && route.graphRefusesMissing) return;
    const override = route.requestErrorCodes?.[`${field}:${error.keyword}`];
    const code =
      override ??
      (isMissing ? ErrorCode.REQUIRED_ELEMENT_MISSING : error.keyword === 'type' ? ErrorCode.BAD_REQUEST : ErrorCode.VALIDATION_FAILED);
    throw new RouteInputError(code, isMissing ? `${field} is required.` : describe(error, field), field || undefined);
  }
}

/** The object schema of a route's path or query parameters. */
function parametersSchema(properties: Record<string, JsonSchema>, required: string[]): JsonSchema {
  return { type: 'object', properties, required };
}
